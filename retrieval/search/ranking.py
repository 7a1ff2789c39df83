"""One search's ranking: the legs run (full text on the leg pool, the vector leg in this thread),
fused by reciprocal rank, rescored by the priors and language variants collapsed; no paging and no
hit dressing, so benchmarks time it alone.

A failing vector leg, page-text search or link read is logged and the ranking goes without it; it
never fails a search.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from retrieval.embeddings import EmbeddingSpec, check_compatible, similarity_floor
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.errors import IndexUnavailable
from retrieval.format.linkgraph import PageLinks

from .collapse import collapse_variants
from .filters import FilterPlan, plain_where
from .fusion import fuse_positions
from .index import Index
from .legs import (
    LEGS,
    TEXT,
    VECTOR,
    LegResult,
    lexical_queries,
    lexical_results,
    submit_lexical,
    submit_page_text,
    vector_leg,
)
from .priors import Signals, rescore

log = logging.getLogger("retrieval.search")

DEFAULT_DEPTH = 100
# RRF's k for the search legs: 30 rather than the paper's 60 weighs each leg's first ranks more.
# Measured on the three question sets of docs/search.md, it helps each once the page-text prior runs.
FUSION_K = 30
# Pages ranked by BM25 over their whole text for the page-text prior: the first 100 (the cost is
# the same for 10); pages further down score too little against the best to matter.
PAGE_TEXT_DEPTH = 100
# Feature-hash vectors count shared words: a page's similarity to the question is then word overlap
# the full-text legs already weigh, plus hash collisions; page similarity uses only semantic vectors.
WORD_HASH_PROVIDERS = frozenset({"hash"})


@dataclass(frozen=True)
class Ranking:
    """The fused candidate list of one search, before paging."""

    items: list[tuple[int, float]]  # (catalog position, normalised score), best first
    legs: list[LegResult]
    query_vector: np.ndarray | None = None  # the question's semantic embedding (None: full text or word hashes)


def embedded_query(index: Index, embedder: EmbeddingProvider, query: str) -> np.ndarray:
    check_compatible(EmbeddingSpec.from_dict(index.metadata.embedding), embedder)
    return embedder.embed_query(query)


def wants_vector(index: Index, legs: tuple[str, ...], embedder: EmbeddingProvider | None,
                  query_vector: np.ndarray | None) -> bool:
    return VECTOR in legs and index.has_vectors and (embedder is not None or query_vector is not None)


def rank(index: Index, query: str, plan: FilterPlan, *, legs: tuple[str, ...] = LEGS, depth: int = DEFAULT_DEPTH,
         embedder: EmbeddingProvider | None = None, query_vector: np.ndarray | None = None,
         vector_floor: float | None = None) -> Ranking:
    """Runs the legs and fuses them; no paging, no hit dressing (benchmarks time this alone)."""
    # A first search loads the index before the embedding model: the index's loads peak highest
    # and are best taken while the process is small (see Index._load).
    index.catalog()
    queries = lexical_queries(query, legs, title="title" in index.fts_columns,
                              keywords="keywords" in index.fts_columns)
    pending = submit_lexical(index, queries, plan.where, depth) if queries else None
    # Unfiltered searches only: the documents table has no taxonomy columns, and at 11.1k
    # pages (124.5k chunks) the search costs 2.6 ms alone, about 5 ms in a filtered search
    # under load, which the filtered search's 15 ms budget cannot take (docs/search.md).
    pending_pages = None
    if queries and TEXT in legs and plan.where is None and index.has_page_text:
        pending_pages = submit_page_text(index, query, PAGE_TEXT_DEPTH)
    results: list[LegResult] = []
    vector, ran_vector = None, False
    if wants_vector(index, legs, embedder, query_vector):
        started = time.perf_counter()
        try:
            vector = query_vector if query_vector is not None else embedded_query(index, embedder, query)
            floor = vector_floor if vector_floor is not None else similarity_floor(index.metadata.embedding["provider"])
            positions = vector_leg(index, vector, index.filter_mask(plan.where), depth, floor)
            results.append(LegResult(VECTOR, positions, time.perf_counter() - started))
            ran_vector = True
        except Exception as exc:  # never fail a search for its vector leg
            log.warning("vector leg failed on %s, answering from full-text legs: %s: %s",
                        index.path, type(exc).__name__, exc)
            results.append(LegResult(VECTOR, np.empty(0, np.int64), time.perf_counter() - started,
                                     f"{type(exc).__name__}: {exc}"))
    found_pages = None
    if pending is not None:
        results = lexical_results(index, pending) + results
    if pending_pages is not None:
        try:
            found_pages = pending_pages.result()
        except Exception as exc:  # never fail a search for a prior: rank without it, and say why
            log.warning("page text search failed on %s, ranking without it: %s: %s",
                        index.path, type(exc).__name__, exc)
    if results and all(r.error for r in results):
        raise IndexUnavailable(f"every search leg failed on {index.path}: {results[0].error}")
    # Legs that found nothing are left out of the normaliser: they say nothing about any hit.
    ran = [r.positions for r in results if not r.error and len(r.positions)]
    items = fuse_positions(ran, index.catalog().id_order, k=FUSION_K)
    semantic = ran_vector and index.metadata.embedding.get("provider") not in WORD_HASH_PROVIDERS
    if items:
        positions = np.fromiter((p for p, _ in items), np.int64, len(items))
        pages = index.catalog().codes("filepath", positions)
        text_scores = _page_text_scores(index, pages, found_pages) if found_pages is not None else None
        items = rescore(items, _signals(index, plan, positions, pages, vector if semantic else None, text_scores))
    for key, spec in index.metadata.taxonomy.items():
        if spec.vector_collapse and key not in plan.filters and items:
            vectors = index.vectors() if index.has_vectors else None
            items = collapse_variants(items, index.catalog(), index.column(key), vectors)
    return Ranking(items, results, vector if semantic else None)


def _page_text_scores(index: Index, pages: np.ndarray, found: tuple[np.ndarray, np.ndarray]) -> np.ndarray | None:
    """Per candidate, its page's BM25 score over whole pages relative to the best candidate page's
    (0: not in the top PAGE_TEXT_DEPTH)."""
    rowids, scores = found
    codes = index.document_pages(rowids)
    known = codes >= 0
    by_page = np.zeros(max(int(pages.max(initial=-1)), int(codes.max(initial=-1))) + 1)
    by_page[codes[known]] = scores[known]  # one documents row per page
    out = by_page[pages]
    top = out.max(initial=0.0)
    return out / top if top > 0 else out


def _signals(index: Index, plan: FilterPlan, positions: np.ndarray, pages: np.ndarray,
             query_vector: np.ndarray | None, page_text: np.ndarray | None) -> Signals:
    """The priors' inputs for the fused candidates (retrieval/search/priors.py)."""
    exact = None
    if plan.auto_included:
        exact = index.filter_mask(plain_where(plan.filters))[positions]
    similarity = None
    # Unfiltered searches only, like the page-text prior: page evidence picks pages across the
    # corpus, and inside a filtered slice its bonus to each page's best section mostly spread the
    # list one section per page, above the sibling a known-item question asked for (docs/search.md).
    if query_vector is not None and plan.where is None:
        similarity = index.page_similarity(query_vector, pages)
    links = page_links(index) if plan.where is None else None
    return Signals(index.catalog().numbers("link_share", positions), pages, exact, similarity, page_text, links)


def page_links(index: Index) -> PageLinks | None:
    """The build's links between pages; None if they cannot be read (logged: the priors go without
    them, and the next search tries again), as for the page-text search. Warming calls it too."""
    try:
        return index.page_links()
    except Exception as exc:  # never fail a search for a prior
        log.warning("reading the links between pages failed on %s, ranking without them: %s: %s",
                    index.path, type(exc).__name__, exc)
        return None
