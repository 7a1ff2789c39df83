"""A tool call through /mcp/ in-process (Django's test client, no live server): the fast tier's check that
calling a tool answers from the corpus and that its input schema is enforced before the tool runs."""

from __future__ import annotations

import json

import pytest

HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"}


@pytest.fixture
def call(client, sample_corpus, settings):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0

    def tools_call(name: str, arguments: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = client.post("/mcp/", data=json.dumps(body), content_type="application/json", **HEADERS)
        assert response.status_code == 200, response.content
        return response.json()

    return tools_call


def test_search_docs_answers_from_the_corpus_and_get_doc_reads_the_chunk_it_names(call):
    result = call("search_docs", {"query": "RateLimitError", "language": "python", "limit": 3})["result"]
    assert result["isError"] is False
    hits = result["structuredContent"]["hits"]
    assert 1 <= len(hits) <= 3 and hits[0]["filepath"] == "sdks/python/errors.md"
    chunk = call("get_doc", {"chunk_id": hits[0]["chunk_id"]})["result"]
    assert chunk["isError"] is False and "RateLimitError" in chunk["content"][0]["text"]


@pytest.mark.parametrize("arguments", [{"query": "RateLimitError", "limit": 0}, {"query": "x", "limit": "three"},
                                       {"limit": 3}])
def test_arguments_outside_the_input_schema_are_refused_before_the_tool_runs(call, arguments):
    answer = call("search_docs", arguments)
    if "error" in answer:  # a JSON-RPC error, or (SEP-1303) a tool result the model can read and retry
        assert answer["error"]["code"] == -32602, answer
    else:
        assert answer["result"]["isError"] is True, answer
        assert "Invalid arguments for tool 'search_docs'" in answer["result"]["content"][0]["text"]
