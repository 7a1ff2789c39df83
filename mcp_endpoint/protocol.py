"""MCP methods: the handlers dict and each method's handler, and result shaping per era.

Two eras share one stateless endpoint. The handshake era (2025-03-26, 2025-06-18, 2025-11-25)
opens with `initialize`; nothing is remembered between requests, so every request stands on
its own. The 2026-07-28 era has no handshake: `server/discover` replaces it, each request
carries its own `_meta` envelope, and results carry `resultType`, cache hints and the server's
identity. Handlers raise `jsonrpc.JsonRpcError` subclasses; a tool's failures become `isError` results as the
MCP surface's table says (answers.py), and `calls.py` puts the rest on the wire. The versions and what
each allows are versions.py's; the shapes of tools, resources and prompts on the wire are wire.py's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings

from common.callers import allows
from common.errors import InsufficientScope
from mcp_endpoint import answers, budget, recording, schema
from mcp_endpoint import headers as mcp_headers
from mcp_endpoint.jsonrpc import InvalidParams, MethodNotFound
from mcp_endpoint.pagination import paginate
from mcp_endpoint.profiles import Context, Profile, PromptResult, ResourceNotFound, ToolDef, ToolResult
from mcp_endpoint.versions import (
    DEFAULT_VERSION,
    MODERN_VERSIONS,
    argument_errors_are_results,
    at_least,
    negotiate_version,
)
from mcp_endpoint.wire import (
    contents_to_wire,
    prompt_to_wire,
    resource_to_wire,
    template_to_wire,
    tool_result_to_wire,
    tool_to_wire,
)

logger = logging.getLogger("docsmcp.mcp")

CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
LOG_LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})


@dataclass(frozen=True)
class Call:
    """One request being served: method, params (without `_meta`), the profile and its context."""

    method: str
    params: dict[str, Any]
    context: Context
    profile: Profile
    modern: bool

    @property
    def version(self) -> str:
        return self.context.protocol_version or DEFAULT_VERSION


def server_info(call: Call) -> dict[str, Any]:
    name = call.profile.server_name
    info: dict[str, Any] = {"name": name, "version": settings.VERSION}
    if at_least(call.version, "2025-06-18"):
        info["title"] = f"{name} ({call.context.profile} profile)"
    return info


def capabilities(call: Call) -> dict[str, Any]:
    # Every list method answers (possibly with an empty list), so every capability is declared:
    # 2026 clients are entitled to -32601 for anything undeclared.
    caps: dict[str, Any] = {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "prompts": {"listChanged": False},
    }
    if not call.modern:
        caps["logging"] = {}  # logging/setLevel is accepted; we never send log messages
    return caps


def instructions(call: Call) -> str | None:
    return call.profile.instructions(call.context)


def _scope(call: Call) -> str:
    return f"{call.method}|{call.context.profile}|{call.context.corpus or ''}"


def _paged(
    call: Call, key: str, items: list[Any], to_wire: Callable[[Any], dict[str, Any]]
) -> dict[str, Any]:
    page, next_cursor = paginate(items, call.params.get("cursor"), _scope(call))
    result: dict[str, Any] = {key: [to_wire(item) for item in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


# --- lifecycle -------------------------------------------------------------------------------


def handle_initialize(call: Call) -> dict[str, Any]:
    requested = call.params.get("protocolVersion")
    if not isinstance(requested, str):
        raise InvalidParams("Invalid params: initialize requires params.protocolVersion (a string)")
    version = negotiate_version(requested)
    negotiated = replace(call, context=replace(call.context, protocol_version=version))
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": capabilities(negotiated),
        "serverInfo": server_info(negotiated),
    }
    text = instructions(negotiated)
    if text:
        result["instructions"] = text
    return result


def handle_discover(call: Call) -> dict[str, Any]:
    result: dict[str, Any] = {"supportedVersions": list(MODERN_VERSIONS), "capabilities": capabilities(call)}
    text = instructions(call)
    if text:
        result["instructions"] = text
    return result


def handle_ping(call: Call) -> dict[str, Any]:
    return {}


def handle_set_level(call: Call) -> dict[str, Any]:
    level = call.params.get("level")
    if not isinstance(level, str) or level not in LOG_LEVELS:
        raise InvalidParams(f"Invalid params: level must be one of {', '.join(sorted(LOG_LEVELS))}")
    return {}


# --- tools -------------------------------------------------------------------------------------


def handle_tools_list(call: Call) -> dict[str, Any]:
    context = replace(call.context, resolved={})  # the build as it is now, not as an earlier call saw it
    return _paged(call, "tools", call.profile.tools(context), lambda tool: tool_to_wire(tool, call.version))


def find_tool(call: Call, name: str) -> ToolDef:
    tools = call.profile.tools(call.context)
    for tool in tools:
        if tool.name == name:
            return tool
    available = ", ".join(t.name for t in tools) or "none"
    raise InvalidParams(f"Unknown tool '{name}'. Available tools: {available}.", data={"name": name})


def handle_tools_call(call: Call) -> dict[str, Any]:
    name = call.params.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidParams("Invalid params: tools/call requires params.name (a string)")
    arguments = call.params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams("Invalid params: params.arguments must be an object")
    call = replace(call, context=replace(call.context, resolved={}))  # this call's build, resolved once
    tool = find_tool(call, name)
    if call.modern and call.context.request is not None:
        mcp_headers.check_param_headers(tool.input_schema, arguments, call.context.request.headers)
    try:
        errors = schema.validate(tool.input_schema, arguments)
        if errors:
            raise InvalidParams(
                f"Invalid arguments for tool '{name}': " + " ".join(errors), data={"errors": errors}
            )
        principal = call.context.principal
        if tool.scope and not allows(principal, tool.scope):
            if principal is not None and principal.token:  # its holder can sign in again for the scope
                raise InsufficientScope(f"Tool '{name}' needs the '{tool.scope}' scope", tool.scope)
            result = ToolResult.error(f"Tool '{name}' needs an API key with the '{tool.scope}' scope.")
        else:
            result = run_tool(tool, call.context, schema.normalize(tool.input_schema, arguments))
    except InvalidParams as exc:
        if not argument_errors_are_results(call.version):
            raise
        # SEP-1303: the model sees this text and can retry with corrected arguments.
        result = ToolResult.error(exc.message)
    return tool_result_to_wire(tool, budget.fit(result), call.version)


def run_tool(tool: ToolDef, context: Context, arguments: dict[str, Any]) -> ToolResult:
    """Run a handler; failures it reports become isError results, never JSON-RPC errors.

    A search or read tool's call is then recorded in the query log from what its result says it found
    (mcp_endpoint/recording.py): the handler and the serving calls below it only read."""
    started = time.perf_counter()
    try:
        result = _run_handler(tool, context, arguments)
    except BaseException:
        recording.record(tool, context, arguments, None, started)
        raise
    recording.record(tool, context, arguments, result, started)
    return result


def _run_handler(tool: ToolDef, context: Context, arguments: dict[str, Any]) -> ToolResult:
    try:
        result = tool.handler(context, arguments)
    except Exception as exc:  # answers.tool_failure: the text (argument errors raised again), logged if a fault
        return ToolResult.error(answers.tool_failure(tool.name, exc))
    if not isinstance(result, ToolResult):
        logger.error("tool %s returned %s, not a ToolResult", tool.name, type(result).__name__)
        return ToolResult.error(
            f"Tool '{tool.name}' failed with an internal error; the server log has details."
        )
    return result


# --- resources ---------------------------------------------------------------------------------


def handle_resources_list(call: Call) -> dict[str, Any]:
    return _paged(call, "resources", call.profile.resources(call.context), resource_to_wire)


def handle_resource_templates_list(call: Call) -> dict[str, Any]:
    return _paged(call, "resourceTemplates", call.profile.resource_templates(call.context), template_to_wire)


def handle_resources_read(call: Call) -> dict[str, Any]:
    uri = call.params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("Invalid params: resources/read requires params.uri (a string)")
    try:
        contents = list(call.profile.read_resource(call.context, uri))
        if not contents:
            raise ResourceNotFound(uri)
    except ResourceNotFound as exc:
        raise InvalidParams(str(exc), data={"uri": uri}) from None
    return {"contents": [contents_to_wire(item) for item in contents]}


# --- prompts -----------------------------------------------------------------------------------


def handle_prompts_list(call: Call) -> dict[str, Any]:
    return _paged(call, "prompts", call.profile.prompts(call.context), prompt_to_wire)


def handle_prompts_get(call: Call) -> dict[str, Any]:
    name = call.params.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidParams("Invalid params: prompts/get requires params.name (a string)")
    prompts = call.profile.prompts(call.context)
    prompt = next((p for p in prompts if p.name == name), None)
    if prompt is None:
        available = ", ".join(p.name for p in prompts) or "none"
        raise InvalidParams(f"Unknown prompt '{name}'. Available prompts: {available}.", data={"name": name})
    arguments = call.params.get("arguments") or {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise InvalidParams("Invalid params: prompt arguments must be an object of strings")
    missing = [a.name for a in prompt.arguments if a.required and a.name not in arguments]
    if missing:
        raise InvalidParams(f"Missing required argument(s) for prompt '{name}': {', '.join(missing)}")
    known = {a.name for a in prompt.arguments}
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise InvalidParams(f"Unknown argument(s) for prompt '{name}': {', '.join(unknown)}")
    rendered: PromptResult = prompt.handler(call.context, arguments)
    result: dict[str, Any] = {"messages": list(rendered.messages)}
    if rendered.description:
        result["description"] = rendered.description
    return result


# --- dispatch ----------------------------------------------------------------------------------

Handler = Callable[[Call], dict[str, Any]]

HANDLERS: dict[str, Handler] = {
    "initialize": handle_initialize,
    "ping": handle_ping,
    "logging/setLevel": handle_set_level,
    "server/discover": handle_discover,
    "tools/list": handle_tools_list,
    "tools/call": handle_tools_call,
    "resources/list": handle_resources_list,
    "resources/templates/list": handle_resource_templates_list,
    "resources/read": handle_resources_read,
    "prompts/list": handle_prompts_list,
    "prompts/get": handle_prompts_get,
}
HANDSHAKE_ONLY = frozenset({"initialize", "ping", "logging/setLevel"})  # removed in 2026-07-28
MODERN_ONLY = frozenset({"server/discover"})


def dispatch(call: Call) -> dict[str, Any]:
    """Run the handler for `call.method` in its era and shape the result for the wire."""
    handler = HANDLERS.get(call.method)
    unavailable = call.method in (HANDSHAKE_ONLY if call.modern else MODERN_ONLY)
    if handler is None or unavailable:
        raise MethodNotFound(f"Method not found: {call.method}", data={"method": call.method})
    result = handler(call)
    return shape_modern(call, result) if call.modern else result


def shape_modern(call: Call, result: dict[str, Any]) -> dict[str, Any]:
    """2026-07-28 results: resultType, cache hints on cacheable methods, serverInfo in `_meta`."""
    shaped = dict(result)
    shaped.setdefault("resultType", "complete")
    if call.method in CACHEABLE_METHODS:
        shaped.setdefault("ttlMs", max(0, settings.MCP_CACHE_TTL_MS))
        # Results may depend on who asks once keys carry scopes; never share them across keys.
        shaped.setdefault("cacheScope", "private" if call.context.principal is not None else "public")
    meta = dict(shaped.get("_meta") or {})
    meta.setdefault(mcp_headers.SERVER_INFO_KEY, server_info(call))
    shaped["_meta"] = meta
    return shaped
