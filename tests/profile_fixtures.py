"""Fixtures for the documents / techdoc / citeloom profile tests: small markdown corpora built once per
session, registered per test next to the `sample` corpus, and helpers to drive the official `mcp` client.

Import the fixtures a module uses into it (as tests/mcp_endpoint/test_mcp_transport.py does with fixtures_mcp).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_endpoint import ratelimit

POSTGRESQL = {
    "indexes.md": (
        "# Indexes\n\nCREATE INDEX creates an index on the specified column(s) of a table.\n\n"
        "## Index Types\n\nPostgreSQL provides several index types: B-tree, Hash, GiST, SP-GiST, GIN and BRIN.\n\n"
        "### B-tree\n\nB-trees handle equality and range queries on data that can be sorted.\n\n"
        "## Multicolumn Indexes\n\nAn index can be defined on more than one column of a table.\n"
    ),
    "runtime-config.md": (
        "# Server Configuration\n\n## Connections and Authentication\n\n"
        "max_connections determines the maximum number of concurrent connections to the database server. "
        "The default is typically 100 connections.\n\n"
        "## Resource Consumption\n\nshared_buffers sets the amount of memory the server uses for buffers.\n"
    ),
    "maintenance.md": (
        "# Routine Database Maintenance\n\n## Routine Vacuuming\n\n"
        "VACUUM reclaims storage occupied by dead tuples. VACUUM ANALYZE also updates planner statistics.\n\n"
        "## Updating Planner Statistics\n\nANALYZE collects statistics about the contents of tables.\n"
    ),
    "overview.md": "# PostgreSQL Overview\n\nPostgreSQL is an object-relational database system.\n",
}
UBUNTU = {
    "networking.md": (
        "# Networking\n\n## Netplan\n\nNetplan configures network interfaces from YAML files in /etc/netplan.\n\n"
        "## Firewall\n\nufw is the default firewall configuration tool.\n"
    ),
    "packages.md": "# Package Management\n\n## apt\n\napt install installs packages from the archive.\n",
    "overview.md": "# Ubuntu Overview\n\nUbuntu Server is a Linux distribution.\n",
}
CORPORA = {"postgresql": POSTGRESQL, "ubuntu": UBUNTU}


@pytest.fixture(scope="session")
def built_corpora(tmp_path_factory) -> dict[str, Path]:
    """The postgresql and ubuntu corpora built once (hash embeddings), name -> build directory."""
    from retrieval.embeddings import get_provider
    from retrieval.ingest.build import BuildRequest, build_index

    root = tmp_path_factory.mktemp("profile-corpora")
    out = {}
    for name, files in CORPORA.items():
        source = root / "src" / name
        for relpath, text in files.items():
            (source / relpath).parent.mkdir(parents=True, exist_ok=True)
            (source / relpath).write_text(text)
        build = root / "builds" / name
        build_index(BuildRequest(source, build, f"{name}-build", name, provider=get_provider("hash"), workers=1))
        out[name] = build
    return out


def register_build(name: str, build_dir: Path, **fields: Any):
    """A markdown corpus called `name` whose active build is `build_dir`."""
    from corpus.execution import build_activate
    from corpus.models import BuildRun, Corpus
    from corpus.serving import forget_active
    from retrieval.format.metadata import read_metadata

    metadata = read_metadata(build_dir)
    corpus = Corpus.objects.create(name=name, source_dir=str(build_dir), settings={"embedding_provider": "hash"},
                                   **fields)
    build = BuildRun.objects.create(corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL,
                                    status=BuildRun.COMPLETE, index_path=str(build_dir), embedding_provider="hash",
                                    embedding=metadata.embedding, stats=metadata.stats)
    build_activate(build=build)
    forget_active()
    corpus.refresh_from_db()
    return corpus


@pytest.fixture
def doc_corpora(sample_corpus, built_corpora):
    """`sample`, `postgresql` (alias `pg`, version 16) and `ubuntu`, all built and active."""
    postgresql = register_build("postgresql", built_corpora["postgresql"], aliases=["pg"], version="16",
                                description="PostgreSQL 16 official documentation")
    ubuntu = register_build("ubuntu", built_corpora["ubuntu"], description="Ubuntu Server guide", version="24.04")
    return {"sample": sample_corpus, "postgresql": postgresql, "ubuntu": ubuntu}


@pytest.fixture
def live_url(live_server, settings) -> str:
    """The live server's base URL, with rate limits off for the test."""
    settings.MCP_RATE_LIMIT_REDIS_URL = ""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    ratelimit.reset()
    yield live_server.url
    ratelimit.reset()


def rpc(http: httpx.Client, url: str, method: str, params: dict | None = None, *, request_id: Any = 1,
        headers: dict[str, str] | None = None, version: str | None = "2025-06-18") -> httpx.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if version:
        sent["MCP-Protocol-Version"] = version
    sent.update(headers or {})
    return http.post(url, content=json.dumps(body), headers=sent, timeout=60)


def call(http: httpx.Client, url: str, name: str, arguments: dict, **kwargs: Any) -> dict:
    """tools/call over raw HTTP; the JSON-RPC response body."""
    response = rpc(http, url, "tools/call", {"name": name, "arguments": arguments}, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def with_client(url: str, work: Callable[[Any], Awaitable[Any]], *, mode: str = "legacy",
                headers: dict[str, str] | None = None) -> Any:
    """Run `work(client)` with the official mcp client connected to `url`."""
    from mcp import Client

    async def run():
        if headers:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode) as client,
            ):
                return await work(client)
        async with Client(url, mode=mode, read_timeout_seconds=60) as client:
            return await work(client)

    return asyncio.run(run())


def text_of(result: Any) -> str:
    """The text of a CallToolResult's first block."""
    return result.content[0].text
