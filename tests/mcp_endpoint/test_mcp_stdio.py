"""`manage.py mcp_stdio`: the official SDK's stdio client drives a real subprocess over the sample build.

The subprocess opens this session's test database (PostgreSQL; committed rows, hence
transactional_db) and serves the docs profile through the same protocol core as /mcp/.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import mcp.client.session
import pytest
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.conftest import ROOT
from tests.corpus.test_celery_worker import _database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _server(settings, *args: str) -> StdioServerParameters:
    if connection.vendor != "postgresql":
        pytest.skip("the stdio subprocess needs PostgreSQL (set DATABASE_URL) to share the test database")
    env = {
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "DATABASE_URL": _database_url(),
        "DOCSMCP_INDEX_ROOT": str(settings.DOCSMCP_INDEX_ROOT),
        "DOCSMCP_DEFAULT_CORPUS": "sample",
        "PYTHONPATH": str(ROOT),
    }
    return StdioServerParameters(
        command=sys.executable, args=[str(ROOT / "manage.py"), "mcp_stdio", *args], env=env, cwd=str(ROOT)
    )


def _json(result) -> dict:
    assert result.is_error is False, result.content
    return json.loads(result.content[0].text)


async def _session(server: StdioServerParameters) -> dict:
    async with Client(server, mode="legacy") as client:
        out = {"version": client.protocol_version, "instructions": client.instructions}
        out["tools"] = [t.name for t in (await client.list_tools()).tools]
        first = _json(await client.call_tool("search_docs", {"query": "retry backoff", "limit": 2, "language": "python"}))
        second = _json(await client.call_tool(
            "search_docs", {"query": "retry backoff", "language": "python", "cursor": first["next_cursor"]}))
        out["pages"] = (first, second)
        out["doc"] = (await client.call_tool("get_doc", {"chunk_id": first["hits"][0]["chunk_id"]})).content[0].text
        out["bad_limit"] = await client.call_tool("search_docs", {"query": "x", "limit": 51})
        out["missing"] = await client.call_tool("get_doc", {"chunk_id": "guides/nope.md#nothing"})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("search_everything", {"query": "x"})
        out["unknown"] = unknown.value.error
        return out


def test_stdio_serves_the_docs_profile_to_the_official_client(sample_corpus, settings):
    out = asyncio.run(_session(_server(settings)))
    assert out["version"] == "2025-11-25"
    assert "Skyline Payments" in out["instructions"]
    assert out["tools"] == ["search_docs", "get_doc", "docs_feedback"]
    first, second = out["pages"]
    assert len(first["hits"]) == 2 and first["next_cursor"]
    assert second["hits"] and {h["chunk_id"] for h in first["hits"]}.isdisjoint(h["chunk_id"] for h in second["hits"])
    for hit in first["hits"] + second["hits"]:
        assert hit["metadata"].get("language", "python") == "python"
        assert hit["title"] and hit["breadcrumb"].startswith(hit["title"])
    assert out["doc"].startswith(f"Document: {first['hits'][0]['title']} (")
    assert f"--- Chunk: {first['hits'][0]['chunk_id']} (" in out["doc"]
    assert out["bad_limit"].is_error is True
    assert "Argument 'limit' must be an integer from 1 to 50; got 51." in out["bad_limit"].content[0].text
    assert out["missing"].is_error is True and "not found" in out["missing"].content[0].text
    assert out["unknown"].code == -32602 and "Available tools: search_docs, get_doc" in out["unknown"].message


async def _pinned_and_modern(server: StdioServerParameters) -> tuple:
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("search_docs", {"query": "x", "limit": 51})
        legacy = (client.protocol_version, refused.value.error.code)
    async with Client(server, mode="auto") as client:  # server/discover, then per-request _meta
        assert client.protocol_version == "2026-07-28"
        tools = [t.name for t in (await client.list_tools()).tools]
        hits = _json(await client.call_tool("search_docs", {"query": "webhook signature", "limit": 3}))["hits"]
    return legacy, tools, hits


def test_stdio_speaks_every_era_with_its_error_rules(sample_corpus, settings, monkeypatch):
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", "2025-06-18")
    legacy, tools, hits = asyncio.run(_pinned_and_modern(_server(settings)))
    assert legacy == ("2025-06-18", -32602)  # before SEP-1303, argument errors stay protocol errors
    assert tools == ["search_docs", "get_doc", "docs_feedback"] and len(hits) == 3


def test_stdio_writes_nothing_but_json_rpc_on_stdout(sample_corpus, settings):
    server = _server(settings)
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": "refund"}}},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines) + "this is not json\n"
    done = subprocess.run([server.command, *server.args], input=stdin, capture_output=True, text=True,
                          env={**os.environ, **server.env}, cwd=server.cwd, timeout=120)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, None]
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert json.loads(replies[1]["result"]["content"][0]["text"])["hits"]
    assert replies[2]["error"]["code"] == -32700


def test_stdio_refuses_an_unknown_corpus(sample_corpus, settings):
    server = _server(settings, "--corpus", "nope")
    done = subprocess.run([server.command, *server.args], input="", capture_output=True, text=True,
                          env={**os.environ, **server.env}, cwd=server.cwd, timeout=120)
    assert done.returncode != 0 and done.stdout == ""
    assert "nope" in done.stderr


async def _across_activation(server: StdioServerParameters, activate) -> tuple[list, list]:
    async with Client(server, mode="legacy") as client:
        query = {"query": "zebracorn migration window", "limit": 3}
        before = _json(await client.call_tool("search_docs", query))["hits"]
        await asyncio.to_thread(activate)
        for _ in range(60):  # the server trusts its active-build pointer for POINTER_TTL
            after = _json(await client.call_tool("search_docs", query))["hits"]
            if after and after[0]["filepath"] == "guides/zebracorn.md":
                break
            await asyncio.sleep(0.25)
        return before, after


def test_stdio_follows_a_build_activated_while_it_runs(sample_corpus, settings, copy_sample_docs, tmp_path):
    from corpus.execution import build_activate
    from corpus.models import BuildRun
    from retrieval.embeddings import get_provider
    from retrieval.ingest.build import BuildRequest, build_index

    (copy_sample_docs / "guides" / "zebracorn.md").write_text(
        "---\ntitle: Zebracorn rollout\n---\n\n## Migration window\n\nThe zebracorn migration window opens nightly.\n"
    )
    out = tmp_path / "second-build"
    metadata = build_index(BuildRequest(copy_sample_docs, out, "second-build", "sample",
                                        provider=get_provider("hash"), workers=1)).metadata

    def activate():
        build = BuildRun.objects.create(corpus=sample_corpus, build_id="second-build", kind=BuildRun.KIND_FULL,
                                        status=BuildRun.COMPLETE, index_path=str(out), embedding_provider="hash",
                                        embedding=metadata.embedding, stats=metadata.stats)
        build_activate(build=build)
        connection.close()  # this ran on a worker thread, whose connection would outlive the test

    before, after = asyncio.run(_across_activation(_server(settings), activate))
    assert all(h["filepath"] != "guides/zebracorn.md" for h in before)
    assert after[0]["filepath"] == "guides/zebracorn.md"
    assert after[0]["title"] == "Zebracorn rollout"
    assert after[0]["breadcrumb"] == "Zebracorn rollout > Migration window"
