"""The embedding stage: vectors for the fresh chunks only, through the embedding cache."""

from __future__ import annotations

from retrieval.embeddings.base import EmbeddingProvider
from retrieval.embeddings.cache import EmbeddingCache, embed_with_cache
from retrieval.errors import BuildCancelled
from retrieval.storage import Location

from .batches import Batch
from .progress import Cancelled, Progress


def embed_batches(provider: EmbeddingProvider | None, batches: list[Batch], cache_dir: Location | None, full: bool,
                  progress: Progress, cancelled: Cancelled) -> int:
    """Fills each batch's vectors; returns how many texts were actually embedded (not cached). A full
    build embeds every text again and refreshes the cache with the results.

    Cancellation is checked after every provider batch: embedding is the longest stage."""
    if provider is None or not provider.dimensions:
        return 0
    total = sum(len(b.embed_texts) for b in batches)
    cache = EmbeddingCache(cache_dir, provider.spec) if cache_dir is not None else None
    done = embedded = 0
    progress("embed", 0, total)
    for batch in batches:
        def report(n: int, base: int = done) -> None:
            if cancelled():
                raise BuildCancelled("build was cancelled while embedding")
            progress("embed", base + n, total)

        report(0)
        if cache is not None and not full:
            batch.vectors, count = embed_with_cache(provider, batch.embed_texts, cache, progress=report)
        else:
            batch.vectors, count = provider.embed(batch.embed_texts, progress=report), len(batch.embed_texts)
            if cache is not None:
                cache.put_many([cache.key(t) for t in batch.embed_texts], batch.vectors)
        done += len(batch.embed_texts)
        embedded += count
        batch.embed_texts = None
    progress("embed", total, total)
    return embedded
