"""The docs profile (seeds 000/001): `search_docs` and `get_doc`, at /mcp/ and /mcp/c/<corpus>/.

The search_docs schema is rebuilt from the active build's metadata on every tools/list, so a
rebuild that adds a taxonomy value (a new SDK language) shows in the next listing.
"""

from __future__ import annotations

import logging
from typing import Any

from corpus.selectors import active_index, cursor_secret, query_embedder
from mcp_endpoint.profiles import Context, ToolDef, ToolResult, UnknownCorpus
from retrieval.errors import RetrievalError
from retrieval.search.documents import get_chunk, render_chunk_window
from retrieval.search.engine import MAX_LIMIT, SearchRequest, SearchResult, search
from retrieval.search.index import Index

log = logging.getLogger("docsmcp.mcp")
SERVER_NAME = "docsmcp"
SEARCH_DESCRIPTION = (
    "Search the {description}. Use this to find relevant documentation, guides, or API references."
)
GET_DOC_DESCRIPTION = (
    "Retrieve the full content of a specific documentation chunk using its chunk_id. "
    "You can optionally request surrounding context within the same file."
)
BASE_PROPERTIES = ("query", "limit", "cursor")


def _index(context: Context) -> Index:
    return active_index(context.corpus)


def check_context(context: Context) -> None:
    if context.corpus is None:
        return
    from corpus.errors import CorpusNotFound
    from corpus.selectors import corpus_get

    try:
        corpus_get(context.corpus)
    except CorpusNotFound as exc:
        raise UnknownCorpus(str(exc)) from exc


def instructions(context: Context) -> str:
    try:
        metadata = _index(context).metadata
    except RetrievalError as exc:
        return f"docsmcp documentation server. {exc}"
    text = (
        f"This server searches the {metadata.corpus_description}. Call search_docs with a question or "
        "identifier, then get_doc with a returned chunk_id to read the chunk and its neighbours."
    )
    if metadata.taxonomy:
        text += (
            " Filters: "
            + "; ".join(f"{k} ({', '.join(v.values)})" for k, v in metadata.taxonomy.items())
            + "."
        )
    if metadata.instructions:
        text += "\n\n" + metadata.instructions
    return text


def search_schema(index: Index | None) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "query": {
            "type": "string",
            "description": "The search query (e.g., 'how to paginate', 'RateLimitError').",
        },
        "limit": {
            "type": "integer",
            "description": "Maximum number of results to return. Default is 10.",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": 10,
        },
        "cursor": {
            "type": "string",
            "description": (
                "Opaque pagination token returned from a previous search. Omit for the first page. "
                "Returns an error if invalid or malformed."
            ),
        },
    }
    if index is not None:
        for key, field in index.metadata.taxonomy.items():
            if key in BASE_PROPERTIES:
                continue
            properties[key] = {
                "type": "string",
                "description": field.schema_description(key),
                "enum": list(field.values),
            }
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": ["query"]}


GET_DOC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "chunk_id": {
            "type": "string",
            "description": (
                "The exact ID of the chunk to retrieve, as returned by search_docs "
                "(e.g., 'guides/retries.md#backoff-strategy')."
            ),
        },
        "context": {
            "type": "integer",
            "description": (
                "Number of adjacent chunks to include before and after the target chunk. Default is 0. "
                "Use this to read the surrounding file context."
            ),
            "minimum": 0,
            "maximum": 5,
            "default": 0,
        },
    },
    "required": ["chunk_id"],
}

SEARCH_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "chunk_id": {"type": "string"},
                    "score": {"type": "number"},
                    "heading": {"type": "string"},
                    "breadcrumb": {"type": "string"},
                    "snippet": {"type": "string"},
                    "filepath": {"type": "string"},
                    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "required": ["chunk_id", "score", "heading", "breadcrumb", "snippet", "filepath", "metadata"],
            },
        },
        "next_cursor": {"type": ["string", "null"]},
        "hint": {
            "type": ["object", "null"],
            "properties": {
                "message": {"type": "string"},
                "suggested_filters": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
    "required": ["hits", "next_cursor", "hint"],
}


def search_result_json(result: SearchResult) -> dict[str, Any]:
    """The seed 000 `SearchResult` shape, field for field."""
    return {
        "hits": [
            {
                "chunk_id": h.chunk_id,
                "score": h.score,
                "heading": h.heading,
                "breadcrumb": h.breadcrumb,
                "snippet": h.snippet,
                "filepath": h.filepath,
                "metadata": h.metadata,
            }
            for h in result.hits
        ],
        "next_cursor": result.next_cursor,
        "hint": (
            {"message": result.hint.message, "suggested_filters": result.hint.suggested_filters}
            if result.hint
            else None
        ),
    }


def _search_docs(context: Context, arguments: dict[str, Any]) -> ToolResult:
    index = _index(context)
    filters = {k: v for k, v in arguments.items() if k not in BASE_PROPERTIES}
    request = SearchRequest(
        query=arguments["query"],
        filters=filters,
        limit=arguments.get("limit"),
        cursor=arguments.get("cursor"),
    )
    result = search(index, request, embedder=_embedder(index), cursor_secret=cursor_secret())
    return ToolResult.json(search_result_json(result))


def _embedder(index: Index):
    """A misconfigured query embedder costs the vector leg, never the search."""
    try:
        return query_embedder(index)
    except RetrievalError as exc:
        log.warning("no query embedder for %s: %s", index.path, exc)
        return None


def _get_doc(context: Context, arguments: dict[str, Any]) -> ToolResult:
    window = get_chunk(_index(context), arguments["chunk_id"], int(arguments.get("context", 0)))
    return ToolResult.text(render_chunk_window(window))


def tools(context: Context) -> list[ToolDef]:
    try:
        index: Index | None = _index(context)
        description = index.metadata.corpus_description
    except RetrievalError:  # no usable index: base schema; search_docs itself reports why
        index, description = None, "documentation"
    return [
        ToolDef(
            name="search_docs",
            description=SEARCH_DESCRIPTION.format(description=description),
            input_schema=search_schema(index),
            output_schema=SEARCH_OUTPUT_SCHEMA,
            handler=_search_docs,
        ),
        ToolDef(
            name="get_doc", description=GET_DOC_DESCRIPTION, input_schema=GET_DOC_SCHEMA, handler=_get_doc
        ),
    ]
