"""The citeloom profile (docs/contracts/citeloom-tools.md): store and retrieve caller-embedded chunks per project, at /mcp/citeloom/.

A project is a corpus of kind "chunks" (corpus/chunkstore.py). Every tool runs in a worker thread
under its timeout (CITELOOM_TIMEOUTS); past it the caller gets TIMEOUT at once. Failures of the
seed's taxonomy come back as `isError` results whose text (and structuredContent) is
`{"error": {"code", "message", "details"}}`; malformed arguments are JSON-RPC -32602.

Query vectors: find_chunks and query_hybrid take an optional `query_embedding` (a vector from the
project's model). Without it the server embeds the query itself, but only when the project's model is
one it runs locally (all-MiniLM-L6-v2 at 384 dimensions, or the hash provider); otherwise
EMBEDDING_MISMATCH says to send `query_embedding`.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connections

from corpus import querylog
from corpus.chunkstore import (
    ProjectEmbeddingMismatch,
    ProjectNotFound,
    chunks_store,
    hybrid_enabled,
    project_get,
    project_id,
    project_list,
    project_model,
    project_store,
    query_embedder,
)
from corpus.models import Corpus
from mcp_endpoint import budget
from mcp_endpoint.errors import EndpointError
from mcp_endpoint.jsonrpc import InvalidParams
from mcp_endpoint.profiles import Context, FunctionProfile, ToolAnnotations, ToolDef, ToolResult
from mcp_endpoint.profiles.citeloom_schemas import (
    DESCRIPTIONS,
    MAX_SAMPLE,
    OUTPUT,
    inspect_schema,
    object_schema,
    search_schema,
    store_schema,
)
from retrieval.chunkstore.store import StoreHit, as_vector, plan_where
from retrieval.errors import EmbeddingMismatch, IndexUnavailable, InvalidArgument

log = logging.getLogger("docsmcp.mcp")

SERVER_NAME = "docsmcp"
ELLIPSIS = "…"


def instructions(context: Context) -> str:
    return (
        "Citation-ready chunk retrieval per project. list_projects shows the projects; find_chunks (vector) "
        "and query_hybrid (full text + vector) return trimmed text with citekey, page_span, section, "
        "section_path and doi; store_chunks writes caller-embedded chunks (needs the write scope)."
    )


def max_body_bytes() -> int:
    """store_chunks batches carry their vectors: this path takes larger bodies than MCP_MAX_BODY_BYTES."""
    return settings.CITELOOM_MAX_BODY_BYTES


# --- errors and timeouts ----------------------------------------------------------------------------


class CiteloomError(EndpointError):
    """One of the citeloom contract's error codes, with its details."""

    def __init__(self, code: str, message: str, details: dict[str, Any]):
        super().__init__(message)
        self.code, self.message, self.details = code, message, details

    def result(self) -> ToolResult:
        payload = {"error": {"code": self.code, "message": self.message, "details": self.details}}
        return ToolResult(
            content=[{"type": "text", "text": json.dumps(payload, ensure_ascii=False)}],
            structured=payload,
            is_error=True,
        )


_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """One pool per process (made after a fork, never inherited)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=16, thread_name_prefix="citeloom"))
        return _pool[1]


def _in_worker(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return work()
    finally:
        connections.close_all()  # this thread's own connections; the pool thread may idle for long


def _timed(tool: str, project: str | None, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    timeout = settings.CITELOOM_TIMEOUTS[tool]
    # The caller's context (corpus.access: which projects its key may see) goes with the work.
    future = _executor().submit(contextvars.copy_context().run, _in_worker, work)
    try:
        return future.result(timeout=timeout)
    except FuturesTimeout:
        started = not future.cancel()
        log.warning("citeloom %s on project %s exceeded %.3g s (%s)", tool, project, timeout,
                    "left to finish in the background" if started else "cancelled before it started")
        details: dict[str, Any] = {"tool": tool, "timeout_seconds": timeout}
        if project is not None:
            details["project_id"] = project
        raise CiteloomError("TIMEOUT", f"{tool} exceeded its {timeout:g} s time limit", details) from None


def _handler(tool: str, work: Callable[[dict[str, Any]], Any]):
    """Runs `work(args)` under the tool's timeout and maps failures to the citeloom contract's codes."""

    def handle(context: Context, args: dict[str, Any]) -> ToolResult:
        project = args.get("project")
        try:
            payload = _timed(tool, project, lambda: work(args))
        except CiteloomError as exc:
            return exc.result()
        except ProjectNotFound as exc:
            details = {"project_id": exc.project_id, "available_projects": exc.available}
            return CiteloomError("INVALID_PROJECT", str(exc), details).result()
        except (EmbeddingMismatch, ProjectEmbeddingMismatch) as exc:
            details = getattr(exc, "details", None) or {"project_id": project}
            return CiteloomError("EMBEDDING_MISMATCH", str(exc), details).result()
        except IndexUnavailable as exc:
            return CiteloomError("INDEX_UNAVAILABLE", str(exc), {"project_id": project}).result()
        except InvalidArgument as exc:
            raise InvalidParams(f"Invalid arguments for tool '{tool}': {exc}", data={"errors": [str(exc)]}) from None
        except Exception:
            log.exception("citeloom %s failed", tool)
            message = f"{tool} failed with an internal error; the server log has details"
            return CiteloomError("INTERNAL_ERROR", message, {"tool": tool, "project_id": project}).result()
        if isinstance(payload, Found):  # a search: recorded in the query log from what it found
            return ToolResult.json(payload.payload).saw(payload.seen)
        return ToolResult.json(payload)

    return handle


@dataclass(frozen=True)
class Found:
    """A search's payload, and what it found for the query log (corpus/querylog.py)."""

    payload: dict[str, Any]
    seen: Any


# --- output shaping ------------------------------------------------------------------------------


def trim(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a word boundary when one is near, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def _item(hit: StoreHit, max_chars: int, full_text: bool) -> dict[str, Any]:
    c = hit.citation
    return {
        "id": hit.id,
        "render_text": trim(hit.text, max_chars),
        "score": round(hit.score, 4),
        "citekey": c.citekey,
        "section": c.section,
        "page_span": list(c.page_span) if c.page_span else None,
        "section_path": c.section_path,
        "doi": c.doi,
        "url": c.url,
        "title": c.title,
        "full_text": hit.text if full_text else None,
    }


# --- tools ------------------------------------------------------------------------------------------


def _store_chunks(args: dict[str, Any]) -> dict[str, Any]:
    corpus = project_get(args["project"])
    items = args["items"]
    low, high = settings.CITELOOM_BATCH_MIN, settings.CITELOOM_BATCH_MAX
    if len(items) > high or (len(items) < low and not args["final_batch"]):
        raise InvalidArgument(
            f"store_chunks takes {low}-{high} items per call; got {len(items)}. Send the last (or only) "
            f"batch of an upload, if smaller, with final_batch: true"
        )
    outcome = chunks_store(corpus=corpus, items=items, embed_model=args.get("embed_model"),
                           allow_model_migration=args["allow_model_migration"])
    return {"chunks_written": outcome.written, "project": project_id(corpus), "embed_model": outcome.embed_model,
            "warnings": outcome.warnings}


def _query_vector(corpus: Corpus, args: dict[str, Any], dims: int) -> np.ndarray:
    model, _ = project_model(corpus)
    if args.get("query_embedding") is not None:
        vector = as_vector(args["query_embedding"], "query_embedding")
        if len(vector) != dims:
            raise ProjectEmbeddingMismatch(
                f"query_embedding has {len(vector)} dimensions; project '{project_id(corpus)}' is embedded with "
                f"{model} ({dims} dims)",
                {"project_id": project_id(corpus), "expected_model": model, "expected_dimensions": dims,
                 "received_dimensions": len(vector)},
            )
        return vector
    embedder = query_embedder(corpus)
    if embedder is None:
        raise ProjectEmbeddingMismatch(
            f"Project '{project_id(corpus)}' is embedded with {model} ({dims} dims), which this server cannot "
            f"run; send query_embedding: the query embedded with {model}",
            {"project_id": project_id(corpus), "expected_model": model, "expected_dimensions": dims},
        )
    return np.asarray(embedder.embed_query(args["query"]), dtype=np.float32)


def _retrieve(args: dict[str, Any], hybrid: bool) -> Found:
    corpus = project_get(args["project"])
    if hybrid and not hybrid_enabled(corpus):
        raise CiteloomError(
            "HYBRID_NOT_SUPPORTED",
            f"Hybrid search is not enabled for project '{project_id(corpus)}'; use find_chunks",
            {"project_id": project_id(corpus), "hybrid_enabled": False},
        )
    where = plan_where(args.get("filters"))
    top_k = min(args["top_k"], settings.CITELOOM_MAX_TOP_K)
    max_chars = args.get("max_chars_per_chunk") or settings.CITELOOM_MAX_CHARS_PER_CHUNK
    store = project_store(corpus)
    _, dims = project_model(corpus)
    if dims is None or store.count() == 0:
        hits: list[StoreHit] = []
    else:
        vector = _query_vector(corpus, args, dims)
        if hybrid:
            hits = store.hybrid_search(args["query"], vector, top_k, where)
        else:
            hits = store.vector_search(vector, top_k, where)
    seen = querylog.found(corpus=corpus.name, hits=[(h.id, h.score) for h in hits])
    items = [_item(h, max_chars, args["include_full_text"]) for h in hits]
    items, notice = budget.fit_items(
        items, ("full_text", "render_text"),
        lambda found: len(json.dumps({"items": found, "count": len(found)}, ensure_ascii=False, indent=2)),
    )
    payload: dict[str, Any] = {"items": items, "count": len(items)}
    if notice:
        payload["notice"] = notice
    if hybrid:
        payload["hybrid_enabled"] = True
    return Found(payload, seen)


def _inspect_collection(args: dict[str, Any]) -> dict[str, Any]:
    corpus = project_get(args["project"])
    info = project_store(corpus).inspect(min(args["sample"], MAX_SAMPLE))
    model, dims = project_model(corpus)
    return {
        "project": project_id(corpus),
        "collection": corpus.name,
        "size": info.size,
        "embed_model": model,
        "dimensions": info.dimensions or dims,
        "hybrid_enabled": hybrid_enabled(corpus),
        "payload_keys": info.payload_keys,
        "indexes": info.indexes,
        "sample": info.samples,
    }


def _list_projects(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "projects": [
            {"id": project_id(c), "collection": c.name, "embed_model": project_model(c)[0],
             "hybrid_enabled": hybrid_enabled(c)}
            for c in project_list()
        ]
    }


def tools(context: Context) -> list[ToolDef]:
    search = search_schema()
    specs: list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], Any], ToolAnnotations, str]] = [
        ("store_chunks", store_schema(), _store_chunks,
         ToolAnnotations(read_only=False, destructive=True, idempotent=True), "write"),
        ("find_chunks", search, lambda a: _retrieve(a, hybrid=False), ToolAnnotations(), "read"),
        ("query_hybrid", search, lambda a: _retrieve(a, hybrid=True), ToolAnnotations(), "read"),
        ("inspect_collection", inspect_schema(), _inspect_collection, ToolAnnotations(), "read"),
        ("list_projects", object_schema({}, []), _list_projects, ToolAnnotations(), "read"),
    ]
    return [
        ToolDef(name=name, description=DESCRIPTIONS[name], input_schema=schema, handler=_handler(name, work),
                output_schema=OUTPUT[name], annotations=annotations, scope=scope,
                record=querylog.SEARCH if name in ("find_chunks", "query_hybrid") else "")
        for name, schema, work, annotations, scope in specs
    ]


PROFILE = FunctionProfile(tools=tools, server_name=SERVER_NAME, instructions=instructions,
                          max_body_bytes=max_body_bytes)
