"""Input and output schemas and descriptions of the documents profile's tools (the documents tool contract's names,
parameters and defaults; the new tools' descriptions are the seed's own)."""

from __future__ import annotations

from typing import Any

from mcp_endpoint.profiles.shared import COVERAGE_SCHEMA, FRESHNESS_SCHEMA
from retrieval.search.engine import MAX_LIMIT
from retrieval.search.related import MAX_RELATED

MAX_BATCH_QUERIES = 10

_COLLECTION = {"type": "string", "description": "Collection name or alias"}
_DOCUMENT = {"type": "string", "description": "Document ID (the file path, as listed by documents_list_documents)"}
_COLLECTIONS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Limit to these collections (names or aliases). Omit to search every collection.",
}
_LIMIT_SEARCH = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_LIMIT,
    "default": 10,
    "description": "Maximum number of results to return (default: 10)",
}
_MAX_DISTANCE = {
    "type": "number",
    "minimum": 0,
    "maximum": 2,
    "description": (
        "Maximum distance threshold: results with distance (1 - relevanceScore) greater than this are "
        "filtered out. Lower values = stricter matching."
    ),
}
_HYBRID = {
    "type": "boolean",
    "default": True,
    "description": (
        "Combine vector similarity with keyword matching (default: true). false: vector similarity only "
        "(keyword matching for a collection indexed without vectors)."
    ),
}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": required}


def empty_schema() -> dict[str, Any]:
    return _object({}, [])


SEARCH_SCHEMA = _object(
    {
        "query": {"type": "string", "description": "The search query: describe what you are looking for"},
        "collections": _COLLECTIONS,
        "limit": _LIMIT_SEARCH,
        "maxDistance": _MAX_DISTANCE,
        "hybridSearch": _HYBRID,
    },
    ["query"],
)
GET_DOCUMENT_SCHEMA = _object({"collection": _COLLECTION, "document": _DOCUMENT}, ["collection", "document"])
LIST_DOCUMENTS_SCHEMA = _object(
    {
        "collection": _COLLECTION,
        "limit": {
            "type": "integer", "minimum": 1, "maximum": 1000, "default": 100,
            "description": "Maximum documents to return",
        },
        "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Offset for pagination"},
    },
    ["collection"],
)
OUTLINE_SCHEMA = _object(
    {
        "collection": _COLLECTION,
        "document": _DOCUMENT,
        "maxDepth": {
            "type": "integer", "minimum": 1, "maximum": 6, "default": 3,
            "description": "Maximum heading depth (1-6)",
        },
    },
    ["collection", "document"],
)
SECTION_SCHEMA = _object(
    {
        "collection": _COLLECTION,
        "document": _DOCUMENT,
        "section": {"type": "string", "description": "Section heading text to match (case-insensitive)"},
        "includeSubsections": {
            "type": "boolean", "default": True, "description": "Include nested subsections",
        },
    },
    ["collection", "document", "section"],
)
BATCH_SCHEMA = _object(
    {
        "queries": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_BATCH_QUERIES,
            "description": f"Array of search queries (max {MAX_BATCH_QUERIES})",
            "items": _object(
                {
                    "query": {"type": "string", "description": "Search query"},
                    "collections": {**_COLLECTIONS, "description": "Limit to specific collections"},
                },
                ["query"],
            ),
        },
        "limit": {**_LIMIT_SEARCH, "default": 5, "description": "Results per query (default: 5)"},
        "maxDistance": {**_MAX_DISTANCE, "description": "Maximum distance threshold per query"},
        "hybridSearch": {**_HYBRID, "description": "Use hybrid search (default: true)"},
    },
    ["queries"],
)
RELATED_SCHEMA = _object(
    {
        "collection": {"type": "string", "description": "Collection containing the source"},
        "document": {"type": "string", "description": "Document ID to find related content for"},
        "chunk": {
            "type": "string",
            "description": "Specific chunk content (if not provided, uses document centroid)",
        },
        "limit": {
            "type": "integer", "minimum": 1, "maximum": MAX_RELATED, "default": 5,
            "description": "Maximum related items",
        },
        "sameDocument": {
            "type": "boolean", "default": False, "description": "Include chunks from the same document",
        },
    },
    ["collection", "document"],
)

_LABEL = {"collection": {"type": "string"}, "collectionId": {"type": "string"}}
SEARCH_ITEM = {
    "type": "object",
    "properties": {
        **_LABEL,
        "documentId": {"type": "string"},
        "documentTitle": {"type": "string"},
        "sectionHeading": {"type": "string"},
        "content": {"type": "string"},
        "relevanceScore": {"type": "number", "minimum": 0, "maximum": 1},
        "distance": {"type": "number", "minimum": 0, "maximum": 1},
        "chunkIndex": {"type": "integer", "minimum": 1},
        "totalChunks": {"type": "integer", "minimum": 1},
        "chunkId": {"type": "string"},
        **FRESHNESS_SCHEMA,
    },
    "required": ["collection", "documentId", "documentTitle", "content", "relevanceScore", "distance",
                 "version", "revision", "indexed_at"],
}


def _out(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


OUTPUT = {
    "documents_list_collections": _out(
        {
            "collections": {
                "type": "array",
                "items": _out(
                    {
                        **_LABEL,
                        "documentCount": {"type": "integer"},
                        "description": {"type": "string"},
                        "version": {"type": "string"},
                        "aliases": {"type": "array", "items": {"type": "string"}},
                    },
                    ["collection", "documentCount"],
                ),
            }
        },
        ["collections"],
    ),
    "documents_search": _out({"coverage": COVERAGE_SCHEMA, "results": {"type": "array", "items": SEARCH_ITEM}},
                             ["coverage", "results"]),
    "documents_get_document": _out(
        {**_LABEL, "document": {"type": "string"}, "title": {"type": "string"}, "content": {"type": "string"}},
        ["collection", "document", "content"],
    ),
    "documents_list_documents": _out(
        {
            **_LABEL,
            "documents": {
                "type": "array",
                "items": _out(
                    {"id": {"type": "string"}, "title": {"type": "string"}, "size": {"type": "integer"}},
                    ["id", "title", "size"],
                ),
            },
            "total": {"type": "integer"},
            "hasMore": {"type": "boolean"},
        },
        ["collection", "documents", "total", "hasMore"],
    ),
    "documents_get_outline": _out(
        {
            **_LABEL,
            "document": {"type": "string"},
            "title": {"type": "string"},
            "outline": {
                "type": "array",
                "items": _out(
                    {"level": {"type": "integer"}, "text": {"type": "string"}, "line": {"type": "integer"}},
                    ["level", "text", "line"],
                ),
            },
        },
        ["collection", "document", "title", "outline"],
    ),
    "documents_get_section": _out(
        {
            **_LABEL,
            "document": {"type": "string"},
            "section": {"type": "string"},
            "level": {"type": "integer"},
            "content": {"type": "string"},
            "startLine": {"type": "integer"},
            "endLine": {"type": "integer"},
        },
        ["collection", "document", "section", "level", "content", "startLine", "endLine"],
    ),
    "documents_search_batch": _out(
        {
            "results": {
                "type": "array",
                "items": _out(
                    {"query": {"type": "string"}, "coverage": COVERAGE_SCHEMA,
                     "results": {"type": "array", "items": SEARCH_ITEM}},
                    ["query", "coverage", "results"],
                ),
            }
        },
        ["results"],
    ),
    "documents_find_related": _out(
        {
            "source": _out({**_LABEL, "document": {"type": "string"}}, ["collection", "document"]),
            "related": {
                "type": "array",
                "items": {
                    **SEARCH_ITEM,
                    "properties": {**SEARCH_ITEM["properties"], "document": {"type": "string"}},
                    "required": ["collection", "document", "content", "relevanceScore"],
                },
            },
            "method": {"type": "string", "enum": ["vector", "lexical"]},
        },
        ["source", "related"],
    ),
}

DESCRIPTIONS = {
    "documents_list_collections": (
        "List all available document collections with their document counts, descriptions and versions. "
        "Use this first to discover what documentation is available."
    ),
    "documents_search": (
        "Search documents by meaning and keywords (hybrid search). Returns the most relevant chunks with "
        "their document, section heading and position. Use this to find information in the collections."
    ),
    "documents_get_document": (
        "Get the full content of a document. Use this after searching when the chunks are not enough."
    ),
    "documents_list_documents": (
        "List all documents in a collection. Returns document IDs, titles, and sizes. "
        "Use this to browse what documentation is available before searching. "
        "Supports pagination for large collections."
    ),
    "documents_get_outline": (
        "Get the heading structure of a document. Returns section headings with their levels "
        "and line numbers. Use this to understand document organization before reading specific sections."
    ),
    "documents_get_section": (
        "Get a specific section of a document by heading. Returns the section content without "
        "fetching the entire document. Use this when you know which section you need."
    ),
    "documents_search_batch": (
        "Execute multiple search queries in a single call. More efficient than making "
        "separate search calls when researching multiple topics. Limited to 10 queries."
    ),
    "documents_find_related": (
        "Find content semantically related to a document or chunk. Use this to expand context "
        "or discover related documentation on a topic."
    ),
}
