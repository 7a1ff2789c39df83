"""Embedding providers behind one interface, chosen by name from configuration.

Factories import their backend lazily so that choosing "hash" never pays for importing openai or onnxruntime.

May import: `retrieval.errors`, `retrieval.memory`, `retrieval.storage`. The embedding cache
(cache.py) keeps its files beside the builds, on local disk or in an object store, so it goes
through storage, which imports no other subpackage; no other subpackage is imported.
"""

from __future__ import annotations

from collections.abc import Callable

from retrieval.errors import EmbeddingError, EmbeddingMismatch

from .base import EmbeddingProvider, EmbeddingSpec, normalise_rows


def _none(**options) -> EmbeddingProvider:
    from .none import NoEmbeddingProvider

    return NoEmbeddingProvider(**options)


def _hash(**options) -> EmbeddingProvider:
    from .feature_hash import HashEmbeddingProvider

    return HashEmbeddingProvider(**options)


def _openai(**options) -> EmbeddingProvider:
    from .openai_api import OpenAIEmbeddingProvider

    return OpenAIEmbeddingProvider(**options)


def _local(**options) -> EmbeddingProvider:
    from .local import LocalEmbeddingProvider

    return LocalEmbeddingProvider(**options)


PROVIDERS: dict[str, Callable[..., EmbeddingProvider]] = {
    "none": _none,
    "hash": _hash,
    "openai": _openai,
    "local": _local,
}


def get_provider(name: str, **options) -> EmbeddingProvider:
    """Builds the provider configured as `name`; options are that provider's keyword arguments."""
    try:
        factory = PROVIDERS[name]
    except KeyError:
        valid = ", ".join(sorted(PROVIDERS))
        raise ValueError(f"unknown embedding provider {name!r}; valid providers are: {valid}") from None
    return factory(**options)


def check_compatible(index_spec: EmbeddingSpec | None, provider: EmbeddingProvider) -> None:
    """Refuses to search or extend an index with vectors from another space, where similarities would be
    meaningless rather than merely worse. index_spec None means the index recorded no embeddings."""
    if index_spec is None:
        if provider.name == "none":
            return
        raise EmbeddingMismatch(
            f"index was built without embeddings (full-text only); this server is configured for "
            f"{_describe(provider)} — rebuild the index with that provider or configure provider 'none'"
        )
    # Provider and model first: that comparison needs no network, unlike learning an API model's dimensions.
    same_model = index_spec.provider == provider.name and index_spec.model == provider.model
    if same_model and index_spec == provider.spec:
        return
    raise EmbeddingMismatch(
        f"index was built with {index_spec.describe()}; this server is configured for "
        f"{_describe(provider)} — rebuild the index or configure the same provider"
    )


def _describe(provider: EmbeddingProvider) -> str:
    """An API provider may need a request to learn its dimensions; a failing API must not hide the mismatch."""
    try:
        return provider.spec.describe()
    except EmbeddingError:
        return f"{provider.name}/{provider.model}"


__all__ = [
    "PROVIDERS",
    "EmbeddingProvider",
    "EmbeddingSpec",
    "check_compatible",
    "get_provider",
    "normalise_rows",
]


# Cosine below which a vector neighbour is not a hit, so queries about things the corpus does
# not cover can still come back empty (and get a hint). Measured on the sample eval with the
# local model: the best passage for off-topic queries scores 0.20-0.33, the expected passage
# for paraphrased questions 0.28-0.71 (most above 0.39). For the local model 0.38 rather than
# 0.35: with sharp page evidence, neighbours in between lent their pages' bonus to sections that
# barely match (docs/search.md, round five).
SIMILARITY_FLOORS = {"hash": 0.15, "local": 0.38, "openai": 0.25}


def similarity_floor(provider: str) -> float:
    return SIMILARITY_FLOORS.get(provider, 0.15)
