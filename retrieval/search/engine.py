"""Hybrid search over one opened build: the engine call behind every search tool.

One search: validate the request and filters, plan the `WHERE` (auto-include applied), run
the full-text legs concurrently on the leg pool (Lance) while this thread embeds the query and
runs the vector leg, fuse by reciprocal rank, collapse language variants when the manifest
asks for it, cut the page, and dress the page's hits (content, snippet, metadata).

Pagination is stable: every page of a search ranks the same candidates (each leg's top
`depth`, fixed for the whole search and carried in the cursor), and ties break by chunk ID,
so concatenated pages have no duplicates and no gaps. The result list ends with that
candidate set: with the default depth of 100, at most 100 chunks per leg are fused.

The legs' fusion and the priors are `ranking`; this module validates, pages, dresses and judges.

A failing vector leg (provider down, wrong model) is logged and the search answers from
the full-text legs; it never fails a search.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from retrieval.embeddings import EmbeddingSpec, check_compatible
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.errors import InvalidArgument

from .coverage import COVERAGE_DEPTH, Coverage, Thresholds, assess, hit_text
from .cursor import CursorState, decode_cursor, encode_cursor
from .filters import plan_filters
from .hints import SearchHint, zero_hit_hint
from .index import Index
from .legs import LEGS, LegResult
from .ranking import DEFAULT_DEPTH, Ranking, embedded_query, rank, wants_vector
from .reading import reads_index
from .snippets import make_snippet

log = logging.getLogger("retrieval.search")

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_QUERY_CHARS = 2000

__all__ = [
    "DEFAULT_LIMIT", "MAX_LIMIT", "Coverage", "LegReport", "SearchHint", "SearchHit",
    "SearchRequest", "SearchResult", "assess_ranking", "cursor_after", "make_hits", "search", "search_batch",
]


@dataclass(frozen=True)
class SearchRequest:
    query: str
    filters: dict[str, str] = field(default_factory=dict)
    limit: int | None = None  # None: DEFAULT_LIMIT, or the page size of the cursor being continued
    cursor: str | None = None
    legs: tuple[str, ...] | None = None  # None: every leg the index and query support


@dataclass(frozen=True)
class SearchHit:
    chunk_id: str
    score: float  # normalised fused score in [0, 1]
    heading: str
    breadcrumb: str
    snippet: str
    filepath: str
    metadata: dict[str, str]  # taxonomy values of the chunk, only those it has
    title: str  # document title
    chunk_index: int  # 1-based position in its file
    total_chunks: int
    content: str  # the chunk's exact markdown
    heading_level: int
    start_line: int  # 1-based, inclusive
    end_line: int
    legs: tuple[str, ...] = ()  # the legs that found it, for evaluation and debugging


@dataclass(frozen=True)
class LegReport:
    name: str
    candidates: int
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]
    next_cursor: str | None
    hint: SearchHint | None
    filters: dict[str, str]  # as validated
    auto_included: tuple[dict[str, str], ...]  # `include` parts of auto-include rules that widened the filter
    legs: tuple[LegReport, ...]
    offset: int
    limit: int
    depth: int = DEFAULT_DEPTH  # candidates fused: every page of one search slices the same ranking
    coverage: Coverage | None = None  # whether the docs answer the question (retrieval/search/coverage.py)
    # the question's semantic embedding (None: not embedded), for the verdict among a server's corpora
    query_vector: np.ndarray | None = field(default=None, compare=False, repr=False)


def check_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query must be a non-empty string, e.g. 'how to paginate' or 'RateLimitError'")
    query = query.strip()
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query is {len(query)} characters; keep it under {MAX_QUERY_CHARS} "
                              "(a question or a few keywords work best)")
    return query


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def check_legs(legs: Sequence[str] | None) -> tuple[str, ...]:
    if legs is None:
        return LEGS
    unknown = [leg for leg in legs if leg not in LEGS]
    if unknown or not legs:
        raise InvalidArgument(f"unknown search legs {unknown or '(none given)'}; choose from {', '.join(LEGS)}")
    return tuple(dict.fromkeys(legs))


@reads_index
def search(index: Index, request: SearchRequest, *, embedder: EmbeddingProvider | None = None,
           cursor_secret: bytes, query_vector: np.ndarray | None = None,
           vector_floor: float | None = None, thresholds: Thresholds | None = None) -> SearchResult:
    """Searches `index`; raises InvalidArgument / InvalidFilter / InvalidCursor for bad requests.

    `query_vector` lets a caller that embedded several queries at once (search_batch) skip the
    per-query embedding; `embedder` is otherwise used to embed the query. `thresholds`: the corpus's
    own cut of the coverage score (default: coverage.DEFAULT_THRESHOLDS).
    """
    query = check_query(request.query)
    legs = check_legs(request.legs)
    plan = plan_filters(index.metadata, request.filters)
    if request.cursor is not None:
        state = decode_cursor(cursor_secret, request.cursor, query=query, filters=plan.filters,
                              build_id=index.build_id)
        limit = check_limit(request.limit if request.limit is not None else state.limit)
        offset, depth = state.offset, state.depth
    else:
        limit = check_limit(request.limit if request.limit is not None else DEFAULT_LIMIT)
        offset, depth = 0, DEFAULT_DEPTH
    ranking = rank(index, query, plan, legs=legs, depth=depth, embedder=embedder, query_vector=query_vector,
                   vector_floor=vector_floor)
    page = ranking.items[offset: offset + limit]
    next_cursor = None
    if offset + limit < len(ranking.items):
        next_cursor = encode_cursor(cursor_secret, query=query, filters=plan.filters, build_id=index.build_id,
                                    state=CursorState(offset + limit, limit, depth))
    hint = zero_hit_hint(index, query, plan) if not ranking.items and offset == 0 else None
    hits = make_hits(index, query, page, _found_by(page, ranking.legs))
    return SearchResult(
        hits=hits,
        next_cursor=next_cursor,
        hint=hint,
        filters=plan.filters,
        auto_included=plan.auto_included,
        legs=tuple(LegReport(r.name, len(r.positions), r.seconds, r.error) for r in ranking.legs),
        offset=offset,
        limit=limit,
        depth=depth,
        coverage=assess_ranking(index, query, ranking, thresholds, hits if offset == 0 else None),
        query_vector=ranking.query_vector,
    )


def assess_ranking(index: Index, query: str, ranking: Ranking, thresholds: Thresholds | None = None,
                   first: Sequence[SearchHit] | None = None) -> Coverage:
    """The coverage verdict of a ranking: the same for every page of one search. `first`: the ranking's
    first hits when they are dressed already (a first page), whose text need not be read again."""
    top = [p for p, _ in ranking.items[:COVERAGE_DEPTH]]
    texts = None
    if first is not None and len(first) >= len(top):
        texts = [hit_text(h.title, h.breadcrumb, h.heading, h.content) for h in first[:len(top)]]
    return assess(index, query, top, ranking.query_vector, thresholds, texts)


def make_hits(index: Index, query: str, page: list[tuple[int, float]],
              found_by: dict[int, tuple[str, ...]]) -> list[SearchHit]:
    """Dresses (position, score) pairs as hits: catalog fields, content (one read), snippet."""
    if not page:
        return []
    positions = [p for p, _ in page]
    rows = index.catalog().rows(positions)
    contents = index.contents(positions)
    taxonomy = [(key, index.column(key)) for key in index.metadata.taxonomy]
    hits = []
    for (position, score), row, content in zip(page, rows, contents, strict=True):
        hits.append(SearchHit(
            chunk_id=row["chunk_id"],
            score=round(score, 6),
            heading=row["heading"] or "",
            breadcrumb=titled_breadcrumb(row["title"] or "", row["breadcrumb"] or ""),
            snippet=make_snippet(content, query),
            filepath=row["filepath"],
            metadata={key: row[col] for key, col in taxonomy if row[col] is not None},
            title=row["title"] or "",
            chunk_index=int(row["chunk_index"]) + 1,
            total_chunks=int(row["total_chunks"]),
            content=content,
            heading_level=int(row["heading_level"]),
            start_line=int(row["start_line"]),
            end_line=int(row["end_line"]),
            legs=found_by.get(position, ()),
        ))
    return hits


def titled_breadcrumb(title: str, breadcrumb: str) -> str:
    """The breadcrumb led by the document's title, so a hit under a generic heading ("What's
    next") still names its page; chunks whose trail already starts at the title keep it as is."""
    if not title or breadcrumb == title or breadcrumb.startswith(f"{title} > "):
        return breadcrumb
    return f"{title} > {breadcrumb}" if breadcrumb else title


def _found_by(page: list[tuple[int, float]], legs: list[LegResult]) -> dict[int, tuple[str, ...]]:
    leg_sets = [(r.name, set(r.positions.tolist())) for r in legs]
    return {p: tuple(name for name, members in leg_sets if p in members) for p, _ in page}


@reads_index
def rank_all(index: Index, query: str, *, embedder: EmbeddingProvider | None = None,
             query_vector: np.ndarray | None = None) -> Ranking:
    """The fused ranking of an unfiltered search, undressed: a search across several corpora ranks each,
    merges the (position, score) lists, and dresses only the hits of the page it shows (`dress`)."""
    return rank(index, check_query(query), plan_filters(index.metadata, {}), embedder=embedder,
                query_vector=query_vector)


@reads_index
def dress(index: Index, query: str, page: list[tuple[int, float]], ranking: Ranking) -> list[SearchHit]:
    """`page` (items of `ranking`) as hits."""
    return make_hits(index, check_query(query), page, _found_by(page, ranking.legs))


def query_vector_for(index: Index, embedder: EmbeddingProvider | None, query: str) -> np.ndarray | None:
    """The query's embedding for this index's vector leg, or None when it has none: indexes of one
    embedding model share it, so a search across corpora embeds the query once."""
    if embedder is None or not index.has_vectors or not index.metadata.embedding:
        return None
    return embedded_query(index, embedder, check_query(query))


def cursor_after(index: Index, request: SearchRequest, result: SearchResult, kept: int, *,
                 cursor_secret: bytes) -> str:
    """A cursor for the page that starts after the first `kept` hits of `result` (the answer to
    `request`), with the page's size: a caller that shows fewer hits than it got (a response budget)
    hands this on instead of searching again with a smaller page."""
    return encode_cursor(cursor_secret, query=check_query(request.query), filters=result.filters,
                         build_id=index.build_id, state=CursorState(result.offset + kept, result.limit, result.depth))


@reads_index
def search_batch(index: Index, requests: Sequence[SearchRequest], *, embedder: EmbeddingProvider | None = None,
                 cursor_secret: bytes, vector_floor: float | None = None,
                 thresholds: Thresholds | None = None) -> list[SearchResult]:
    """Several searches sharing one `embed_queries` call (one round trip to an API provider).

    Every request is validated before any work is done, so a bad one fails the batch at once.
    If the shared embedding fails, every search answers from its full-text legs.
    """
    queries = [check_query(r.query) for r in requests]
    for r in requests:
        check_legs(r.legs)
        plan_filters(index.metadata, r.filters)
        if r.limit is not None:
            check_limit(r.limit)
    vectors: np.ndarray | None = None
    wanted = [i for i, r in enumerate(requests) if wants_vector(index, check_legs(r.legs), embedder, None)]
    if wanted:
        try:
            check_compatible(EmbeddingSpec.from_dict(index.metadata.embedding), embedder)
            vectors = embedder.embed_queries([queries[i] for i in wanted])
        except Exception as exc:
            log.warning("batch query embedding failed on %s, answering from full-text legs: %s: %s",
                        index.path, type(exc).__name__, exc)
    by_request = dict(zip(wanted, vectors, strict=True)) if vectors is not None else {}
    return [search(index, r, embedder=None, cursor_secret=cursor_secret, query_vector=by_request.get(i),
                   vector_floor=vector_floor, thresholds=thresholds) for i, r in enumerate(requests)]
