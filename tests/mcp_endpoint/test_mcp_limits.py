"""Hostile input and bounded work at /mcp/: text no database or response can hold, batches, budgets."""

from __future__ import annotations

import json

import pytest

from mcp_endpoint import ratelimit
from tests import fixtures_mcp, profile_fixtures
from tests.fixtures_mcp import post

docs_server = fixtures_mcp.docs_server
mcp_http = fixtures_mcp.mcp_http
built_corpora = profile_fixtures.built_corpora
doc_corpora = profile_fixtures.doc_corpora
live_url = profile_fixtures.live_url


def search(request_id: int, query: str = "install", **extra) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": query, **extra}}}


def test_a_lone_surrogate_is_a_parse_error_not_a_500(docs_server, mcp_http):
    raw = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800","arguments":{}}}'
    response = post(mcp_http, f"{docs_server}/mcp/", None, raw=raw)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32700 and "params.name" in error["message"] and "surrogate" in error["message"]


@pytest.mark.parametrize("path, name, arguments, where", [
    ("/mcp/", "search_docs", {"query": "install\x00"}, "params.arguments.query"),
    ("/mcp/documents/", "list_documents", {"collection": "sam\x00ple"}, "params.arguments.collection"),  # PostgreSQL
    ("/mcp/techdoc/", "search_documentation", {"query": "x", "doc_type": ["a\x00"]}, "params.arguments.doc_type[0]"),
])
def test_a_nul_anywhere_in_arguments_is_invalid_params_naming_where(doc_corpora, live_url, mcp_http, path, name,
                                                                    arguments, where):
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = post(mcp_http, live_url + path, body, version="2025-06-18")
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == -32602 and error["message"].startswith(f"Invalid params: the string at {where} contains a NUL")


def test_a_nul_in_the_corpus_path_is_404_json(docs_server, mcp_http):
    response = post(mcp_http, f"{docs_server}/mcp/c/sam%00ple/", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 404 and response.json()["error"]["code"] == -32600


def test_set_level_with_an_object_is_invalid_params(docs_server, mcp_http):
    body = {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": {"x": 1}}}
    error = post(mcp_http, f"{docs_server}/mcp/", body, version="2025-06-18").json()["error"]
    assert error["code"] == -32602 and "level must be one of" in error["message"]


def test_a_batch_over_the_limit_is_refused_whole(docs_server, mcp_http, settings):
    settings.MCP_MAX_BATCH = 5
    response = post(mcp_http, f"{docs_server}/mcp/", [search(i) for i in range(6)], version="2025-03-26")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32600 and "at most 5" in error["message"] and "MCP_MAX_BATCH" in error["message"]
    assert error["data"] == {"maxBatch": 5, "received": 6}


def test_every_call_in_a_batch_counts_against_the_rate_limit(docs_server, mcp_http, settings, monkeypatch):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 10
    monkeypatch.setattr(ratelimit, "_now", lambda: 1_800_000_030.0)  # both posts in one window, whatever the clock
    ratelimit.reset()
    first = post(mcp_http, f"{docs_server}/mcp/", [search(i) for i in range(8)], version="2025-03-26")
    assert first.status_code == 200 and len(first.json()) == 8
    second = post(mcp_http, f"{docs_server}/mcp/", [search(i) for i in range(3)], version="2025-03-26")
    assert second.status_code == 429 and "each call in a batch counts" in second.json()["error"]["message"]
    assert int(second.headers["Retry-After"]) >= 1


def test_calls_past_the_response_budget_get_an_error_each_never_silence(docs_server, mcp_http, settings):
    one = post(mcp_http, f"{docs_server}/mcp/", [search(1)], version="2025-03-26")
    size = len(one.content)
    settings.MCP_MAX_BATCH_RESPONSE_BYTES = int(size * 2.5)
    response = post(mcp_http, f"{docs_server}/mcp/", [search(i) for i in range(1, 6)], version="2025-03-26")
    assert response.status_code == 200
    replies = response.json()
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5]  # every call answered, in order
    assert all("result" in r for r in replies[:2])
    for reply in replies[2:]:
        assert reply["error"]["code"] == -32000
        assert "Response budget exhausted" in reply["error"]["message"] and "fewer calls" in reply["error"]["message"]
    assert replies[2]["error"]["data"]["ran"] is True  # it ran; only its reply did not fit
    assert "it ran, but its reply was dropped" in replies[2]["error"]["message"]
    assert all(r["error"]["data"]["ran"] is False and "it was not run" in r["error"]["message"] for r in replies[3:])
    assert len(response.content) <= settings.MCP_MAX_BATCH_RESPONSE_BYTES + 3 * 400
    assert json.loads(one.content)[0]["result"] == replies[0]["result"]


def test_replies_encode_what_the_fast_encoder_refuses():
    from mcp_endpoint.jsontext import compact, indented

    payload = {"hits": [{"title": "Grüße ✓", "score": 0.5, "n": 2**70}], "hint": None}
    assert json.loads(compact(payload)) == payload  # an integer past 64 bits
    assert indented(payload) == json.dumps(payload, ensure_ascii=False, indent=2)
    echoed = {"message": "unknown name '\ud800'"}  # a lone surrogate UTF-8 cannot carry
    assert compact(echoed) == b'{"message":"unknown name \'\\ud800\'"}'
    common = {"hits": [{"title": "Pod", "score": 0.889, "metadata": {}}], "next_cursor": None}
    assert compact(common) == json.dumps(common, separators=(",", ":")).encode()
