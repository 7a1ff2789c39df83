"""Embedding providers as a corpus uses them: by name, with the operator's credentials.

Both sides need this: a build embeds its chunks, and a search embeds its query with the same
provider and options. Neither the build nor the read path should import the other for it.

A corpus names a provider and may tune its model; where requests go and with which key is the
operator's alone (OPENAI_BASE_URL, OPENAI_API_KEY), so whoever may edit a corpus's settings
cannot send the server's key to an address of their choosing.
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from retrieval.embeddings import PROVIDERS, get_provider
from retrieval.embeddings.base import EmbeddingProvider

from .errors import CorpusError
from .models import Corpus

CORPUS_OPTIONS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "hash": frozenset({"dimensions"}),
    "openai": frozenset({"model", "dimensions", "batch_size"}),
    "local": frozenset(),
}


def check_provider_name(name: str) -> None:
    if name not in PROVIDERS:
        raise CorpusError(f"unknown embedding provider {name!r}; choose one of {', '.join(sorted(PROVIDERS))}")


def check_embedding_options(name: str, options: object) -> dict:
    """The options a corpus may set for its provider; endpoints, keys and headers are refused."""
    if not isinstance(options, dict):
        raise CorpusError("settings.embedding_options must be a JSON object, e.g. {\"model\": \"text-embedding-3-small\"}")
    allowed = CORPUS_OPTIONS.get(name, frozenset())
    refused = sorted(set(options) - allowed)
    if refused:
        may = f"may set only {', '.join(sorted(allowed))}" if allowed else "takes no options"
        raise CorpusError(
            f"settings.embedding_options: {', '.join(map(repr, refused))} not allowed; the {name!r} provider {may}. "
            "Endpoints and keys of paid APIs come from the server's settings (OPENAI_BASE_URL, OPENAI_API_KEY), "
            "never from a corpus")
    return options


def corpus_embedding(corpus: Corpus | None) -> tuple[str, dict]:
    """The provider name and options a corpus builds with: its settings, else the server default."""
    values = (corpus.settings if corpus else None) or {}
    return (values.get("embedding_provider") or settings.DOCSMCP_EMBEDDING_PROVIDER,
            dict(values.get("embedding_options") or {}))


def provider_for(name: str, corpus: Corpus | None = None) -> EmbeddingProvider:
    """The embedding provider a corpus builds and queries with; OpenAI endpoint and key come from settings."""
    configured, options = corpus_embedding(corpus)
    options = dict(check_embedding_options(name, options if configured == name else {}))
    if name == "openai":
        options["base_url"] = settings.OPENAI_BASE_URL or None
        options["api_key"] = settings.OPENAI_API_KEY or None
    return get_provider(name, **options)


@lru_cache(maxsize=8)
def cached_provider(provider: str, model: str, dimensions: int, corpus_name: str) -> EmbeddingProvider:
    """Built with the corpus's `embedding_options`, as the build was; a rebuild with other options changes
    the spec, hence the cache key, so a cached provider never outlives the index it matches."""
    return provider_for(provider, Corpus.objects.filter(name=corpus_name).first())
