"""Embedding providers as a corpus uses them: by name, with the operator's credentials.

Both sides need this: a build embeds its chunks, and a search embeds its query with the same
provider and options. Neither the build nor the read path should import the other for it.
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from retrieval.embeddings import PROVIDERS, get_provider
from retrieval.embeddings.base import EmbeddingProvider

from .errors import CorpusError
from .models import Corpus


def check_provider_name(name: str) -> None:
    if name not in PROVIDERS:
        raise CorpusError(f"unknown embedding provider {name!r}; choose one of {', '.join(sorted(PROVIDERS))}")


def provider_for(name: str, corpus: Corpus | None = None):
    """The embedding provider a corpus builds and queries with; OpenAI credentials come from settings."""
    options = dict((corpus.settings.get("embedding_options") if corpus else None) or {})
    if name == "openai":
        for key, value in (("base_url", settings.OPENAI_BASE_URL), ("api_key", settings.OPENAI_API_KEY)):
            if value:
                options.setdefault(key, value)
    return get_provider(name, **options)


@lru_cache(maxsize=8)
def cached_provider(provider: str, model: str, dimensions: int, corpus_name: str) -> EmbeddingProvider:
    """Built with the corpus's `embedding_options`, as the build was; a rebuild with other options changes
    the spec, hence the cache key, so a cached provider never outlives the index it matches."""
    return provider_for(provider, Corpus.objects.filter(name=corpus_name).first())
