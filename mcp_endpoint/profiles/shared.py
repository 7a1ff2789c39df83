"""Helpers the documents and techdoc profiles share: which corpora they serve, and their query embedders.

Not a profile itself (the registry never names it). Both profiles serve every markdown corpus;
corpora of kind "chunks" belong to the citeloom profile and are invisible here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from corpus.models import Corpus
from corpus.selectors import active_index, corpus_list, query_embedder, version_choices
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.errors import RetrievalError
from retrieval.search.engine import SearchHit
from retrieval.search.index import Index
from retrieval.search.legs import LEXICAL_LEGS, VECTOR

log = logging.getLogger("docsmcp.mcp")


def markdown_corpora() -> list[Corpus]:
    """Every markdown corpus, by name (built or not); other versions of a corpus are reached by
    `<corpus>@<version>`, not listed, so a search across all corpora does not repeat a corpus."""
    return [c for c in corpus_list() if c.kind == Corpus.KIND_MARKDOWN and not c.version_of_id]


def served_corpora() -> list[Corpus]:
    """Markdown corpora with an active build: the ones a search across "all" covers."""
    return [c for c in markdown_corpora() if c.active_build_id is not None]


def index_of(corpus: Corpus, name: str | None = None) -> Index:
    """The active index serving `name` (as the client wrote it: `<corpus>@<version>` pins a version),
    else the corpus's own name, which serves its default version."""
    return active_index(name or corpus.name)


def embedder_for(index: Index) -> EmbeddingProvider | None:
    """A misconfigured query embedder costs the vector leg, never the search (as in the docs profile)."""
    try:
        return query_embedder(index)
    except RetrievalError as exc:
        log.warning("no query embedder for %s: %s", index.path, exc)
        return None


def vector_only_legs(index: Index, embedder: EmbeddingProvider | None) -> tuple[str, ...]:
    """Seed 002's `hybridSearch: false`: the vector leg alone when the corpus has vectors and a query
    embedder, else the full-text legs (an FTS-only corpus has nothing else to offer)."""
    return (VECTOR,) if index.has_vectors and embedder is not None else LEXICAL_LEGS


@dataclass(frozen=True)
class CorpusHit:
    """A hit and the corpus it came from, for merging the results of several corpora."""

    corpus: Corpus
    hit: SearchHit
    order: tuple[int, int]  # (position of its corpus among those searched, rank): the tie-break
    freshness: dict[str, Any] = field(default_factory=dict)


def freshness(index: Index) -> dict[str, Any]:
    """Which version, revision and build time an answer comes from: every hit carries them, so an
    agent can tell a stale or other-version answer apart."""
    stats = index.metadata.stats
    return {"version": stats.get("version") or None, "revision": stats.get("revision") or None,
            "indexed_at": stats.get("indexed_at") or None}


def corpora_freshness() -> str:
    """One sentence for server instructions: each corpus's default version and when it was last built."""
    parts = []
    for corpus in served_corpora():
        try:
            fresh = freshness(index_of(corpus))
        except RetrievalError:
            continue
        _name, versions = version_choices(corpus.name)
        label = f"version {fresh['version']}" if fresh["version"] else ""
        if versions:
            label = f"versions {', '.join(versions)}, default {fresh['version']}"
        parts.append(f"{corpus.name} ({label + ', ' if label else ''}last built {fresh['indexed_at']})")
    return ("Corpora: " + "; ".join(parts) + ".") if parts else ""


FRESHNESS_SCHEMA: dict[str, Any] = {
    "version": {"type": ["string", "null"],
                "description": "The corpus version the hit comes from (null when the corpus has no version label)."},
    "revision": {"type": ["string", "null"],
                 "description": "The git commit built, or a content hash of a directory source."},
    "indexed_at": {"type": ["string", "null"], "description": "When that build was made (ISO 8601, UTC)."},
}

def merge_hits(per_corpus: list[list[CorpusHit]], limit: int) -> list[CorpusHit]:
    """Hits of several corpora by descending score (each corpus's scores are normalised to [0, 1]
    the same way), ties by corpus order then rank; the first `limit`."""
    merged = [hit for hits in per_corpus for hit in hits]
    merged.sort(key=lambda h: (-h.hit.score, h.order))
    return merged[:limit]
