"""Search and chunk retrieval over REST: `search_docs` and `get_doc` for clients that do not speak MCP.

The engine does the work (`retrieval.search.engine.search`, `retrieval.search.documents`) on the corpus's
active index; this module only parses the request and shapes the answer like the docs tool contract's
SearchResult (`hits`, `next_cursor`, `hint`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from common.api.pagination import Input
from corpus import querylog
from corpus.api.auth import READ
from corpus.serving import corpus_read, corpus_search
from retrieval.errors import InvalidFilter
from retrieval.search.documents import MAX_CONTEXT, MAX_ID_LENGTH, render_chunk_window
from retrieval.search.engine import MAX_LIMIT, MAX_QUERY_CHARS, SearchRequest

router = Router(tags=["search"])

FILTERS_HELP = ('Taxonomy filters, exact canonical values, e.g. {"language": "python"}; the keys and values '
                "of a corpus are in its `taxonomy`. Unknown keys or values are a 400 listing the allowed ones.")
CURSOR_HELP = "next_cursor of the previous page, unchanged; send the same query and filters with it."


class SearchIn(Input):
    query: str = Field(..., max_length=MAX_QUERY_CHARS, description="A question or keywords, e.g. 'RateLimitError'.")
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description="Hits per page, 1-50 (default 10, or the "
                              "cursor's page size).")
    cursor: str | None = Field(None, max_length=4096, description=CURSOR_HELP)
    filters: dict[str, str] = Field(default_factory=dict, description=FILTERS_HELP)


class SearchQuery(Input):
    query: str = Field(..., max_length=MAX_QUERY_CHARS, description="A question or keywords.")
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description="Hits per page, 1-50 (default 10).")
    cursor: str | None = Field(None, max_length=4096, description=CURSOR_HELP)
    filters: str | None = Field(None, max_length=4096, description="The filters object as JSON, e.g. "
                                '{"language":"python"} (URL-encoded).')


class HitOut(Schema):
    chunk_id: str = Field(description="Pass to /chunks/{chunk_id} (URL-encode '#' as %23).")
    score: float
    heading: str
    breadcrumb: str
    snippet: str
    filepath: str
    metadata: dict[str, str]
    title: str
    chunk_index: int = Field(description="1-based position of the chunk in its file.")
    total_chunks: int
    version: str | None = Field(description="The corpus version the hit comes from (null: no version label).")
    revision: str | None = Field(description="The git commit built, or a content hash of a directory source.")
    indexed_at: str | None = Field(description="When that build was made (ISO 8601, UTC).")


class HintOut(Schema):
    message: str
    suggested_filters: dict[str, list[str]]


class CoverageOut(Schema):
    verdict: Literal["covered", "partial", "not_covered"] = Field(
        description="Whether the corpus answers the question, judged from how well the best hits match it.")
    score: float = Field(ge=0, le=1, description="How well the best hits match the question, 0 to 1.")
    notice: str | None = Field(None, description="For partial and not_covered: what to do with the hits.")
    elsewhere: str | None = Field(None, description="Another corpus of this server that is closer to the "
                                                    "question: search that one (the verdict is then not_covered).")


class SearchOut(Schema):
    coverage: CoverageOut
    hits: list[HitOut]
    next_cursor: str | None
    hint: HintOut | None
    corpus: str
    build_id: str
    filters: dict[str, str] = Field(description="The filters as validated.")
    auto_included: list[dict[str, str]] = Field(description="Filter values added by the corpus's auto-include "
                                                            "rules (e.g. global guides for a language).")


class ChunkParams(Input):
    context: int = Field(0, ge=0, le=MAX_CONTEXT, description="Adjacent chunks before and after, 0-5.")


class ChunkQuery(ChunkParams):
    chunk_id: str = Field(..., min_length=1, max_length=MAX_ID_LENGTH, description="A chunk_id from a search hit.")


class ChunkOut(Schema):
    chunk_id: str
    filepath: str
    title: str
    heading: str
    heading_level: int
    breadcrumb: str
    content: str = Field(description="The chunk's exact markdown source.")
    chunk_index: int = Field(description="1-based position in its file.")
    total_chunks: int
    start_line: int
    end_line: int
    metadata: dict[str, str]
    offset: int = Field(description="0 for the requested chunk, -N / +N for context before / after it.")


class ChunkWindowOut(Schema):
    corpus: str
    build_id: str
    chunk_id: str
    text: str = Field(description="get_doc's rendering: each chunk under a "
                                  "`--- Chunk: {id} (Chunk n of m) (Target|Context: +N|-N) ---` line.")
    chunks: list[ChunkOut] = Field(description="The same chunks, structured, in file order.")


def _parse_filters(raw: str | None) -> dict[str, str]:
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidFilter('filters must be a JSON object of strings, e.g. {"language": "python"}')
    return value


def _search(logged: querylog.Call, name: str, query: str, limit: int | None, cursor: str | None,
            filters: dict[str, str]) -> dict:
    # Resolves aliases and key limits; no database query once warm.
    served = corpus_search(name, SearchRequest(query=query, filters=filters, limit=limit, cursor=cursor))
    logged.observations.append(served.seen)
    result, fresh = served.result, served.freshness
    return {
        "coverage": result.coverage.as_dict(),
        "hits": [{"chunk_id": h.chunk_id, "score": h.score, "heading": h.heading, "breadcrumb": h.breadcrumb,
                  "snippet": h.snippet, "filepath": h.filepath, "metadata": h.metadata, "title": h.title,
                  "chunk_index": h.chunk_index, "total_chunks": h.total_chunks, **fresh} for h in result.hits],
        "next_cursor": result.next_cursor,
        "hint": None if result.hint is None else {"message": result.hint.message,
                                                  "suggested_filters": result.hint.suggested_filters},
        "corpus": served.corpus,
        "build_id": served.build_id,
        "filters": result.filters,
        "auto_included": [dict(part) for part in result.auto_included],
    }


@router.get("/corpora/{name}/search", response=SearchOut, auth=READ, url_name="search")
def search_get(request: HttpRequest, name: str, params: Query[SearchQuery]):
    """Hybrid search of the corpus's active build (like search_docs); filters as a JSON query parameter."""
    with _recorded(request, "search_docs", name, query=params.query) as logged:
        filters = _parse_filters(params.filters)
        logged.filters = filters
        return _search(logged, name, params.query, params.limit, params.cursor, filters)


@router.post("/corpora/{name}/search", response=SearchOut, auth=READ)
def search_post(request: HttpRequest, name: str, payload: SearchIn):
    """Hybrid search of the corpus's active build (like search_docs); filters as an object."""
    with _recorded(request, "search_docs", name, query=payload.query, filters=payload.filters) as logged:
        return _search(logged, name, payload.query, payload.limit, payload.cursor, payload.filters)


@contextmanager
def _recorded(request: HttpRequest, tool: str, name: str, **fields: Any) -> Iterator[querylog.Call]:
    """One REST search or read, recorded in the query log like the MCP tool it stands for, from what the
    serving call returned (the endpoint appends it); a raised error records the call as failed."""
    principal = getattr(request, "auth", None)
    key_name = getattr(principal, "name", "")
    logged = querylog.Call(surface=querylog.REST, tool=tool, client=request.headers.get("User-Agent", ""),
                           key_name="" if key_name == "anonymous" else key_name, corpus=name, **fields)
    try:
        yield logged
    except BaseException:
        logged.is_error = True
        raise
    finally:
        querylog.record(logged)


def _chunk(logged: querylog.Call, name: str, chunk_id: str, context: int) -> dict:
    served = corpus_read(name, chunk_id, context)
    logged.observations.append(served.seen)
    window = served.window
    target = window.target.chunk_index
    return {
        "corpus": served.index.metadata.corpus, "build_id": served.build_id, "chunk_id": window.target.chunk_id,
        "text": render_chunk_window(window),
        "chunks": [{**vars(c), "offset": c.chunk_index - target} for c in window.chunks],
    }


@router.get("/corpora/{name}/chunks/{path:chunk_id}", response=ChunkWindowOut, auth=READ, url_name="chunk")
def chunk_by_path(request: HttpRequest, name: str, chunk_id: str, params: Query[ChunkParams]):
    """A chunk with `context` neighbours (like get_doc). URL-encode the chunk ID's '#' as %23."""
    with _recorded(request, "get_doc", name, kind=querylog.READ, target=chunk_id) as logged:
        return _chunk(logged, name, chunk_id, params.context)


@router.get("/corpora/{name}/chunk", response=ChunkWindowOut, auth=READ)
def chunk_by_query(request: HttpRequest, name: str, params: Query[ChunkQuery]):
    """The same, with the chunk ID as a query parameter (`?chunk_id=guides/retries.md%23backoff`)."""
    with _recorded(request, "get_doc", name, kind=querylog.READ, target=params.chunk_id) as logged:
        return _chunk(logged, name, params.chunk_id, params.context)
