"""Helpers the documents and techdoc profiles share: which corpora they serve, and their query embedders.

Not a profile itself (the registry never names it). Both profiles serve every markdown corpus;
corpora of kind "chunks" belong to the citeloom profile and are invisible here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from corpus.models import Corpus
from corpus.selectors import active_index, corpus_list, query_embedder
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.errors import RetrievalError
from retrieval.search.engine import SearchHit
from retrieval.search.index import Index
from retrieval.search.legs import LEXICAL_LEGS, VECTOR

log = logging.getLogger("docsmcp.mcp")


def markdown_corpora() -> list[Corpus]:
    """Every markdown corpus, by name (built or not)."""
    return [c for c in corpus_list() if c.kind == Corpus.KIND_MARKDOWN]


def served_corpora() -> list[Corpus]:
    """Markdown corpora with an active build: the ones a search across "all" covers."""
    return [c for c in markdown_corpora() if c.active_build_id is not None]


def index_of(corpus: Corpus) -> Index:
    return active_index(corpus.name)


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


def merge_hits(per_corpus: list[list[CorpusHit]], limit: int) -> list[CorpusHit]:
    """Hits of several corpora by descending score (each corpus's scores are normalised to [0, 1]
    the same way), ties by corpus order then rank; the first `limit`."""
    merged = [hit for hits in per_corpus for hit in hits]
    merged.sort(key=lambda h: (-h.hit.score, h.order))
    return merged[:limit]
