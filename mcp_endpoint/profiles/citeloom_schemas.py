"""Input and output schemas and descriptions of the citeloom profile's tools (the citeloom contract's parameters;
bounds read from settings when tools/list is answered, so a test can change them)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULT_TOP_K = 6
MAX_SAMPLE = 5

PROJECT = {"type": "string", "minLength": 1, "description": "Project identifier (e.g. citeloom/clean-arch)"}


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": required}


def inspect_schema() -> dict[str, Any]:
    sample = {"type": "integer", "minimum": 0, "default": 0,
              "description": f"Number of sample payloads to return (default 0, max {MAX_SAMPLE})"}
    return object_schema({"project": PROJECT, "sample": sample}, ["project"])


def store_schema() -> dict[str, Any]:
    low, high = settings.CITELOOM_BATCH_MIN, settings.CITELOOM_BATCH_MAX
    item = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "description": "Deterministic chunk ID"},
            "text": {"type": "string", "description": "Chunk text"},
            "embedding": {"type": "array", "minItems": 1, "description": "Embedding vector (numbers)"},
            "metadata": {
                "type": "object",
                "description": "Payload: project, source, zotero, doc, embed_model, version, fulltext",
            },
        },
        "required": ["id", "text", "embedding"],
    }
    return object_schema(
        {
            "project": PROJECT,
            "items": {
                "type": "array",
                "minItems": 1,
                "maxItems": high,
                "items": item,
                "description": f"{low}-{high} chunks per call (fewer only with final_batch: true)",
            },
            "embed_model": {
                "type": "string",
                "description": "Embedding model of items that do not name one in metadata.embed_model",
            },
            "allow_model_migration": {
                "type": "boolean",
                "default": False,
                "description": (
                    "Switch the project to this batch's embedding model; its chunks of the old model are removed"
                ),
            },
            "final_batch": {
                "type": "boolean",
                "default": False,
                "description": f"The last (or only) batch of an upload: may hold fewer than {low} items",
            },
        },
        ["project", "items"],
    )


def search_schema() -> dict[str, Any]:
    return object_schema(
        {
            "project": PROJECT,
            "query": {"type": "string", "minLength": 1, "description": "Natural language query text"},
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "default": DEFAULT_TOP_K,
                "description": f"Maximum results (default {DEFAULT_TOP_K}, capped at {settings.CITELOOM_MAX_TOP_K})",
            },
            "filters": {
                "type": "object",
                "description": (
                    'Filters, e.g. {"tags": ["architecture"]}: tags, citekey, doi, section, source_path, '
                    "version; a list matches any of its values"
                ),
            },
            "include_full_text": {
                "type": "boolean",
                "default": False,
                "description": "Also return each chunk's untrimmed text as full_text",
            },
            "max_chars_per_chunk": {
                "type": "integer",
                "minimum": 1,
                "description": f"Trim render_text to this many characters (default {settings.CITELOOM_MAX_CHARS_PER_CHUNK})",
            },
            "query_embedding": {
                "type": "array",
                "description": (
                    "The query embedded with the project's model. Needed unless the project uses "
                    "all-MiniLM-L6-v2 (384 dims), which the server runs itself"
                ),
            },
        },
        ["project", "query"],
    )


_NULLABLE_STRING = {"type": ["string", "null"]}
_RESULT_ITEM = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "render_text": {"type": "string"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "citekey": _NULLABLE_STRING,
        "section": _NULLABLE_STRING,
        "page_span": {"type": ["array", "null"], "items": {"type": "integer"}},
        "section_path": {"type": ["array", "null"], "items": {"type": "string"}},
        "doi": _NULLABLE_STRING,
        "url": _NULLABLE_STRING,
        "title": _NULLABLE_STRING,
        "full_text": _NULLABLE_STRING,
    },
    "required": ["render_text", "score", "citekey", "section", "page_span", "section_path", "doi", "full_text"],
}
_ITEMS_OUTPUT = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": _RESULT_ITEM},
        "count": {"type": "integer"},
        "hybrid_enabled": {"type": "boolean"},
    },
    "required": ["items", "count"],
}
OUTPUT = {
    "store_chunks": {
        "type": "object",
        "properties": {
            "chunks_written": {"type": "integer"},
            "project": {"type": "string"},
            "embed_model": {"type": "string"},
            "warnings": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["chunks_written", "project", "embed_model", "warnings"],
    },
    "find_chunks": _ITEMS_OUTPUT,
    "query_hybrid": _ITEMS_OUTPUT,
    "inspect_collection": {
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "collection": {"type": "string"},
            "size": {"type": "integer"},
            "embed_model": _NULLABLE_STRING,
            "dimensions": {"type": ["integer", "null"]},
            "hybrid_enabled": {"type": "boolean"},
            "payload_keys": {"type": "array", "items": {"type": "string"}},
            "indexes": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
            "sample": {"type": "array", "items": {"type": "object"}},
        },
        "required": ["project", "collection", "size", "embed_model", "payload_keys", "indexes", "sample"],
    },
    "list_projects": {
        "type": "object",
        "properties": {
            "projects": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "collection": {"type": "string"},
                        "embed_model": _NULLABLE_STRING,
                        "hybrid_enabled": {"type": "boolean"},
                    },
                    "required": ["id", "collection", "embed_model", "hybrid_enabled"],
                },
            }
        },
        "required": ["projects"],
    },
}
# The citeloom contract's own text where it has one.
DESCRIPTIONS = {
    "store_chunks": "Batched upsert of chunks into a project collection.",
    "find_chunks": "Vector search for chunks in a project.",
    "query_hybrid": "Hybrid search (full-text + vector fusion) for chunks.",
    "inspect_collection": "Inspect project collection metadata and structure.",
    "list_projects": "List all configured projects with basic metadata.",
}
