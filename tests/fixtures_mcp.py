"""Fixtures for the MCP tests: a small `echo` profile and a live server that serves it, and a live
server serving the product itself (the docs profile over the sample build).

The echo profile is registered through the public `register_profile()`, so the transport is tested
independently of the engine. Import the fixtures you use into the test module.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcp_endpoint import profiles, ratelimit
from mcp_endpoint.profiles import (
    Context,
    FunctionProfile,
    PromptArgument,
    PromptDef,
    PromptResult,
    ResourceContents,
    ResourceDef,
    ResourceNotFound,
    ResourceTemplateDef,
    ToolAnnotations,
    ToolDef,
    ToolError,
    ToolResult,
    registry,
    text_message,
)
from retrieval.errors import NotFound

TEST_PROFILE = "echo"
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "pytest", "version": "1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}

ECHO_INPUT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "text": {"type": "string", "description": "What to echo.", "minLength": 1, "maxLength": 1000},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "mode": {"type": "string", "enum": ["plain", "upper"]},
        "region": {"type": "string", "x-mcp-header": "Region"},
    },
    "required": ["text"],
}
ECHO_OUTPUT = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "limit": {"type": "integer"},
        "corpus": {"type": ["string", "null"]},
        "principal": {"type": ["string", "null"]},
    },
    "required": ["text", "limit"],
}


def _echo(context: Context, args: dict[str, Any]) -> ToolResult:
    text = args["text"].upper() if args.get("mode") == "upper" else args["text"]
    return ToolResult.json(
        {
            "text": text,
            "limit": args["limit"],
            "corpus": context.corpus,
            "principal": context.principal.name if context.principal else None,
        }
    )


def _fail(context: Context, args: dict[str, Any]) -> ToolResult:
    raise ToolError(f"Chunk ID '{args['chunk_id']}' not found. Use search_docs to discover valid chunk IDs.")


def _engine_fail(context: Context, args: dict[str, Any]) -> ToolResult:
    raise NotFound("No such document: missing.md")


def _crash(context: Context, args: dict[str, Any]) -> ToolResult:
    raise RuntimeError("secret internal detail /etc/passwd")


def _store(context: Context, args: dict[str, Any]) -> ToolResult:
    return ToolResult.text("stored")


def _tools(context: Context) -> list[ToolDef]:
    chunk_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"chunk_id": {"type": "string"}},
        "required": ["chunk_id"],
    }
    empty = {"type": "object", "additionalProperties": False, "properties": {}}
    return [
        ToolDef("echo", "Echo text back.", ECHO_INPUT, _echo, output_schema=ECHO_OUTPUT),
        ToolDef("fail", "Always fails like a missing chunk.", chunk_schema, _fail),
        ToolDef("engine_fail", "Fails with an engine error.", empty, _engine_fail),
        ToolDef("crash", "Raises an unexpected exception.", empty, _crash),
        ToolDef(
            "store",
            "Needs the write scope.",
            empty,
            _store,
            annotations=ToolAnnotations(read_only=False, idempotent=False),
            scope="write",
        ),
    ]


def _instructions(context: Context) -> str:
    return f"Echo test profile serving corpus {context.corpus or 'default'}."


def _resources(context: Context) -> list[ResourceDef]:
    return [ResourceDef("echo://readme", "readme", "The readme.", "text/markdown")]


def _resource_templates(context: Context) -> list[ResourceTemplateDef]:
    return [ResourceTemplateDef("echo://item/{id}", "item", "One item by id.", "text/plain")]


def _read_resource(context: Context, uri: str) -> list[ResourceContents]:
    if uri == "echo://readme":
        return [ResourceContents(uri, text="# Readme", mime_type="text/markdown")]
    if uri.startswith("echo://item/"):
        return [ResourceContents(uri, text=f"item {uri.rsplit('/', 1)[1]}", mime_type="text/plain")]
    if uri == "echo://blob":
        return [
            ResourceContents(
                uri, blob=base64.b64encode(b"\x00\x01").decode(), mime_type="application/octet-stream"
            )
        ]
    raise ResourceNotFound(uri)


def _greet(context: Context, args: dict[str, str]) -> PromptResult:
    return PromptResult([text_message(f"Say hello to {args['name']}.")], description="A greeting")


def _prompts(context: Context) -> list[PromptDef]:
    return [PromptDef("greet", "Greet someone.", _greet, (PromptArgument("name", "Who to greet.", True),))]


# The test profile: every hook a profile can provide, written as functions like the built-in profiles.
ECHO_PROFILE = FunctionProfile(
    tools=_tools,
    server_name="docsmcp-test",
    instructions=_instructions,
    resources=_resources,
    resource_templates=_resource_templates,
    read_resource=_read_resource,
    prompts=_prompts,
)


@pytest.fixture
def echo_profile() -> Iterator[FunctionProfile]:
    profile = ECHO_PROFILE
    registry.register_profile(TEST_PROFILE, profile)
    yield profile
    registry.unregister_profile(TEST_PROFILE)


@pytest.fixture
def mcp_server(live_server, echo_profile, settings) -> Iterator[str]:
    """Base URL of a live server with the echo profile at /mcp/echo/; limits reset per test.

    No database: a request that touches it fails loudly. Use `mcp_db_server` for API keys and health.
    """
    settings.MCP_RATE_LIMIT_REDIS_URL = ""
    ratelimit.reset()
    yield live_server.url
    ratelimit.reset()


@pytest.fixture
def mcp_db_server(transactional_db, mcp_server) -> str:
    """`mcp_server` with the test database open to the server thread (API keys, health checks)."""
    return mcp_server


@pytest.fixture
def docs_server(sample_corpus, live_server, settings) -> Iterator[str]:
    """Base URL of a live server whose /mcp/ is the product: the docs profile, default corpus the sample build.

    The rate limit is off because a client such as the conformance suite sends far more than a
    minute's allowance.
    """
    settings.DOCSMCP_DEFAULT_PROFILE = profiles.DEFAULT_PROFILE
    settings.MCP_RATE_LIMIT_REDIS_URL = ""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    ratelimit.reset()
    yield live_server.url
    ratelimit.reset()


@pytest.fixture
def mcp_http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def post(
    http: httpx.Client,
    url: str,
    body: Any,
    version: str | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | str | None = None,
) -> httpx.Response:
    """POST a JSON-RPC body the way a Streamable HTTP client does."""
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if version:
        sent["MCP-Protocol-Version"] = version
    sent.update(headers or {})
    content = raw if raw is not None else httpx.Request("POST", url, json=body).content
    return http.post(url, content=content, headers=sent)


def modern_post(
    http: httpx.Client,
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    request_id: int = 1,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """A well-formed 2026-07-28 request: `_meta` envelope plus mirrored headers."""
    params = dict(params or {})
    params.setdefault("_meta", META)
    sent = {"Mcp-Method": method}
    target = params.get("name") or params.get("uri")
    if method in ("tools/call", "prompts/get", "resources/read") and target:
        sent["Mcp-Name"] = target
    sent.update(headers or {})
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return post(http, url, body, version=MODERN, headers=sent)
