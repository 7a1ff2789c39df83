"""Input and output schemas and descriptions of the docs profile's tools (docs/contracts/docs-tools.md).

search_docs's schema is made from the served build: its taxonomy values become enums, and an example
query and chunk ID come from one of its sections, so an agent sees what that corpus answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_endpoint.profiles.shared import COVERAGE_SCHEMA, FRESHNESS_SCHEMA
from retrieval.errors import RetrievalError
from retrieval.search.engine import MAX_LIMIT
from retrieval.search.index import Index

SEARCH_DESCRIPTION = (
    "Search the {description}. Use this to find relevant documentation, guides, or API references."
)
GET_DOC_DESCRIPTION = (
    "Retrieve the full content of a specific documentation chunk using its chunk_id. "
    "You can optionally request surrounding context within the same file."
)
BASE_PROPERTIES = ("query", "limit", "cursor")
VERSION_DESCRIPTION = ("Which version of the documentation to {action}: one of the versions that have an active "
                       "build. Omit for the default version ({default}).")


@dataclass(frozen=True)
class Examples:
    """What the tool schemas show as examples: a section of the served build, so an agent sees the kind of
    question and ID that corpus answers (the contract's `RateLimitError` and
    `guides/retries.md#backoff-strategy` exist in no corpus but the sample). Empty: no example."""

    query: str = ""
    chunk_id: str = ""


def examples(index: Index | None) -> Examples:
    """The first section (a level-2 heading, else any heading) of the build, in build order."""
    if index is None:
        return Examples()
    try:
        table = index.catalog().table
    except RetrievalError:
        return Examples()
    levels = table["heading_level"].to_pylist()
    for wanted in (2, None):
        for position, level in enumerate(levels):
            if (level == wanted) if wanted is not None else (level or 0) > 0:
                heading = str(table["heading"][position].as_py() or "").strip()
                chunk_id = str(table["chunk_id"][position].as_py())
                if heading and "'" not in heading + chunk_id:
                    return Examples(query=heading, chunk_id=chunk_id)
    return Examples()


def search_schema(index: Index | None, versions: list[str] | None = None,
                  example: Examples | None = None) -> dict[str, Any]:
    example = example or Examples()
    properties: dict[str, Any] = {
        "query": {
            "type": "string",
            "description": f"The search query (e.g., '{example.query}')." if example.query else "The search query.",
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
    if versions:
        properties["version"] = version_property(index, versions)
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": ["query"]}


def version_property(index: Index | None, versions: list[str], action: str = "search") -> dict[str, Any]:
    default = (index.metadata.stats.get("version") if index is not None else "") or versions[0]
    return {"type": "string", "description": VERSION_DESCRIPTION.format(action=action, default=default), "enum": list(versions)}


GET_DOC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "chunk_id": {
            "type": "string",
            "description": "The exact ID of the chunk to retrieve, as returned by search_docs.",
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
        "coverage": COVERAGE_SCHEMA,
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "chunk_id": {"type": "string"},
                    "score": {"type": "number"},
                    "title": {
                        "type": "string",
                        "description": "The document's title: front matter title, else its first H1, else its file name.",
                    },
                    "heading": {"type": "string"},
                    "breadcrumb": {
                        "type": "string",
                        "description": "Where the chunk sits, starting with the document title: 'Title > Section > Heading'.",
                    },
                    "snippet": {
                        "type": "string",
                        "description": "The matched text, shortened (more so when the response budget is tight).",
                    },
                    "filepath": {"type": "string"},
                    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                    **FRESHNESS_SCHEMA,
                },
                "required": ["chunk_id", "score", "heading", "breadcrumb", "snippet", "filepath", "metadata",
                             "version", "revision", "indexed_at"],
            },
        },
        "next_cursor": {"type": ["string", "null"]},
        "notice": {
            "type": "string",
            "description": "Present when the response budget shortened snippets or moved hits to the next page.",
        },
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
    "required": ["coverage", "hits", "next_cursor", "hint"],
}
