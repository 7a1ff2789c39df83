"""Who made an MCP tool call, in the words the query log stores (corpus/querylog.py).

The surface is the transport's (HTTP, stdio, or an in-process eval run); the client is what the
protocol says about it (`clientInfo`), else the HTTP User-Agent; the key is named, never shown.
A call is an eval run's when it comes through the eval target, or over HTTP with the eval header
that only this server's own eval runner (or a key allowed to start eval runs) can make count.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any

from common.callers import allows
from corpus import querylog
from mcp_endpoint.profiles import Context, ToolDef, ToolResult

TARGET_ARGUMENTS = ("chunk_id", "document_id", "document")
CORPUS_ARGUMENTS = ("corpus", "project", "collection", "doc_type")  # a profile's corpus argument, for a failed call


@dataclass(frozen=True)
class Caller:
    surface: str
    client: str
    key_name: str
    is_eval: bool


def caller(context: Context) -> Caller:
    surface = context.surface or (querylog.HTTP if context.request is not None else querylog.STDIO)
    return Caller(surface=surface, client=_client(context), key_name=_key_name(context),
                  is_eval=surface == querylog.EVAL or _eval_header(context))


def _client(context: Context) -> str:
    info = context.client_info
    if isinstance(info, dict) and isinstance(info.get("name"), str) and info["name"]:
        version = info.get("version")
        return f"{info['name']}/{version}" if isinstance(version, str) and version else info["name"]
    if context.request is not None:
        return context.request.headers.get("User-Agent", "")
    return ""


def _key_name(context: Context) -> str:
    return context.principal.name if context.principal is not None else ""


def _eval_header(context: Context) -> bool:
    if context.request is None:
        return False
    value = context.request.headers.get(querylog.EVAL_HEADER, "").strip()
    if not value:
        return False
    if hmac.compare_digest(value.encode(), querylog.eval_token().encode()):
        return True
    return context.principal is not None and allows(context.principal, "build")


def record(tool: ToolDef, context: Context, arguments: dict[str, Any], result: ToolResult | None,
           started: float) -> None:
    """Records one finished tools/call of a tool declared with `record` (search or read) in the query log,
    from what its result says it found (`ToolResult.seen`); `result` None is a call that raised. Other
    tools are not recorded. A new tool is logged by declaring `record` and returning what it saw."""
    if tool.record not in (querylog.SEARCH, querylog.READ) or querylog.mode() == querylog.OFF:
        return
    who = caller(context)
    query = arguments.get("query")
    target = next((arguments[k] for k in TARGET_ARGUMENTS if isinstance(arguments.get(k), str)), "")
    named = next((arguments[k] for k in CORPUS_ARGUMENTS if isinstance(arguments.get(k), str)), None)
    corpus = context.corpus or (named if named != "all" else None)
    querylog.record(querylog.Call(
        surface=who.surface, tool=tool.name, kind=tool.record, client=who.client, key_name=who.key_name,
        is_eval=who.is_eval, profile=context.profile, corpus=corpus or "",
        query=query if isinstance(query, str) else "", filters=querylog.filters_of(arguments), target=target,
        is_error=result is None or result.is_error, started=started,
        observations=[] if result is None else list(result.seen)))
