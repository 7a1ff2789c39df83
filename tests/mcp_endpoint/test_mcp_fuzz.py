"""Random JSON at every method and every tool of every profile: nothing may reach a 5xx or -32603.

Arguments are drawn per tool from its own input schema (right types, wrong types, NUL bytes, lone
surrogates, huge numbers), so the handlers themselves run, not only the schema check. The caller
holds a key with every scope, so write tools (citeloom's store_chunks) are exercised too.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from corpus.apikeys import create_api_key
from corpus.models import SCOPES
from tests import profile_fixtures
from tests.fixtures_mcp import META, MODERN

built_corpora = profile_fixtures.built_corpora
doc_corpora = profile_fixtures.doc_corpora
live_url = profile_fixtures.live_url

PROFILE_PATHS = ("/mcp/", "/mcp/documents/", "/mcp/techdoc/", "/mcp/citeloom/")
METHODS = (
    "initialize", "ping", "logging/setLevel", "server/discover", "tools/list", "tools/call", "resources/list",
    "resources/templates/list", "resources/read", "prompts/list", "prompts/get", "completion/complete",
    "notifications/initialized",
)
PARAM_KEYS = ("name", "arguments", "uri", "cursor", "level", "protocolVersion", "capabilities", "clientInfo", "ref",
              "argument", "_meta")
NASTY_TEXT = st.sampled_from(["", "\x00", "a\x00b", "\ud800", "x\udfffy", "sample", "docs://sample", "../../etc/passwd",
                              "%00", "a" * 5000, "#", "*", "' OR 1=1 --", "🦆", "\u202e"])
TEXT = st.one_of(NASTY_TEXT, st.text(max_size=30))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)


def typed(prop: Any) -> st.SearchStrategy:
    """Values shaped like the schema property (often valid), mixed with anything at all."""
    if not isinstance(prop, dict):
        return JSON
    options: list[st.SearchStrategy] = [JSON]
    if "enum" in prop:
        options.append(st.sampled_from(prop["enum"]))
    kind = prop.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds:
        options.append(TEXT)
    if "integer" in kinds or "number" in kinds:
        low, high = prop.get("minimum", -5), prop.get("maximum", 1000)
        options.append(st.integers(min_value=int(low) - 1, max_value=int(high) + 1))
    if "array" in kinds:
        options.append(st.lists(typed(prop.get("items")), max_size=4))
    if "object" in kinds:
        options.append(arguments_for(prop))
    if "boolean" in kinds:
        options.append(st.booleans())
    return st.one_of(options)


def arguments_for(schema: dict) -> st.SearchStrategy:
    properties = schema.get("properties") or {}
    if not properties:
        return st.dictionaries(TEXT, JSON, max_size=3)
    return st.fixed_dictionaries({}, optional={name: typed(prop) for name, prop in properties.items()})


def rpc_body(method: str, params: Any, request_id: Any = 1) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()  # ensure_ascii: lone surrogates travel as \\ud800 escapes


def assert_no_internal_error(response: httpx.Response, what: str) -> None:
    assert response.status_code < 500, f"{what} -> {response.status_code}: {response.text[:500]}"
    if not response.content:
        return
    payload = response.json()
    for reply in payload if isinstance(payload, list) else [payload]:
        error = reply.get("error") if isinstance(reply, dict) else None
        assert not (error and error.get("code") == -32603), f"{what} -> {response.text[:500]}"


@pytest.fixture
def fuzz_target(doc_corpora, live_url, db):
    _row, key = create_api_key("fuzz", list(SCOPES))
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {key}"}
    with httpx.Client(timeout=60, headers=headers) as http:
        tools = {}
        for path in PROFILE_PATHS:
            listed = http.post(live_url + path, content=rpc_body("tools/list", {}),
                               headers={"MCP-Protocol-Version": "2025-06-18"}).json()
            tools[path] = {tool["name"]: tool["inputSchema"] for tool in listed["result"]["tools"]}
        yield live_url, http, tools


def params_for(method: str, tools: dict[str, dict]) -> st.SearchStrategy:
    """Anything at all, objects over the keys methods read, and (for tools/call) each tool's own arguments."""
    options = [JSON, st.dictionaries(st.sampled_from(PARAM_KEYS), JSON, max_size=4)]
    if method == "tools/call":
        options += [st.fixed_dictionaries({"name": st.just(name), "arguments": arguments_for(schema)})
                    for name, schema in tools.items()]
    return st.one_of(options)


@pytest.mark.django_db(transaction=True)
def test_random_params_and_arguments_never_give_an_internal_error(fuzz_target):
    base, http, tools = fuzz_target
    versions = st.sampled_from(["2025-03-26", "2025-06-18", "2025-11-25", MODERN, None])

    def post(path: str, method: str, params: Any, version: str | None) -> None:
        headers = {}
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        if version == MODERN and isinstance(params, dict):
            params = {**params, "_meta": META}
            headers["Mcp-Method"] = method
            name = params.get("name") or params.get("uri")
            if isinstance(name, str) and name.isascii() and name.isprintable():
                headers["Mcp-Name"] = name
        response = http.post(base + path, content=rpc_body(method, params), headers=headers)
        assert_no_internal_error(response, f"{path} {method} {version} {params!r:.300}")

    for path in PROFILE_PATHS:
        for method in METHODS:
            examples = 40 if method == "tools/call" else 8

            @hsettings(max_examples=examples, deadline=None, database=None,
                       suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
            @given(path=st.just(path), method=st.just(method), params=params_for(method, tools[path]),
                   version=versions)
            def check(path: str, method: str, params: Any, version: str | None) -> None:
                post(path, method, params, version)

            check()


@pytest.mark.django_db(transaction=True)
def test_random_headers_never_give_an_internal_error(fuzz_target):
    base, http, _tools = fuzz_target
    header_text = st.one_of(st.sampled_from(["", " ", "application/json; charset=\"", "application/json; charset=foo",
                                             "text/html", "*/*;q=x", "Bearer", "Bearer \t", "Basic abc", "2026-07-28 ",
                                             "=?base64?!!?=", "application/json;;;="]),
                            st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=40),
                            ).map(str.strip)  # HTTP itself trims surrounding whitespace

    @hsettings(max_examples=80, deadline=None, database=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.sampled_from(PROFILE_PATHS),
           st.dictionaries(st.sampled_from(["Content-Type", "Accept", "MCP-Protocol-Version", "Authorization",
                                            "Mcp-Method", "Mcp-Name", "Origin"]), header_text, max_size=4))
    def check(path, headers):
        response = http.post(base + path, content=rpc_body("tools/list", {}), headers=headers)
        assert_no_internal_error(response, f"{path} {headers!r}")
        assert response.headers.get("content-type", "").startswith("application/json") or not response.content, (
            f"{headers!r} -> {response.status_code} {response.headers.get('content-type')}: {response.text[:200]}")

    check()
