"""Failing machines: the database going away under a running server, a broker with nothing listening,
an active index whose files were deleted. Serving keeps answering where it can, and /health/ says so."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from django.db import connection

from tests import profile_fixtures, services
from tests.profile_fixtures import register_build

ROOT = Path(__file__).resolve().parents[2]
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}

live_url = profile_fixtures.live_url

REGISTER = """
from corpus.execution import build_activate
from corpus.models import BuildRun, Corpus
from corpus.apikeys import create_api_key
from retrieval.format.metadata import read_metadata
path = {path!r}
metadata = read_metadata(path)
corpus = Corpus.objects.create(name="sample", source_dir=path, settings={{"embedding_provider": "hash"}})
build = BuildRun.objects.create(corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL,
                                status=BuildRun.COMPLETE, index_path=path, embedding_provider="hash",
                                embedding=metadata.embedding, stats=metadata.stats)
build_activate(build=build)
version = Corpus.objects.create(name="sample@v2", version="v2", version_of=corpus, source_dir=path,
                                settings={{"embedding_provider": "hash"}})
build_activate(build=BuildRun.objects.create(corpus=version, build_id=metadata.build_id + "-v2",
                                             kind=BuildRun.KIND_FULL, status=BuildRun.COMPLETE, index_path=path,
                                             embedding_provider="hash", embedding=metadata.embedding,
                                             stats=metadata.stats))
print(create_api_key("reader", ["read"])[1])
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _admin(sql: str) -> None:
    """Run `sql` on the PostgreSQL server of DATABASE_URL, connected to this session's test database."""
    with psycopg.connect(services.database_url(), autocommit=True) as conn:
        conn.execute(sql)


def rpc(http: httpx.Client, url: str, method: str, params: dict, key: str | None = None) -> httpx.Response:
    headers = dict(HEADERS)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return http.post(url, content=json.dumps(body), headers=headers)


def tool(http: httpx.Client, url: str, name: str, arguments: dict, key: str | None = None) -> dict:
    response = rpc(http, url, "tools/call", {"name": name, "arguments": arguments}, key)
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.fixture
def own_database_server(db, sample_build_dir, tmp_path) -> Iterator[tuple[str, str, str]]:
    """A server process on its own PostgreSQL database (created here on DATABASE_URL's server, named after
    the test database, dropped after), serving the sample build: (base URL, database name, a read key).
    Only this database is ever blocked."""
    if connection.vendor != "postgresql":
        pytest.skip("the outage test needs PostgreSQL (set DATABASE_URL): it blocks a database of its own")
    name = f"{connection.settings_dict['NAME']}_degraded_{uuid.uuid4().hex[:8]}"
    _admin(f'CREATE DATABASE "{name}"')
    env = {**os.environ, "DATABASE_URL": services.database_url(name),
           "DOCSMCP_INDEX_ROOT": str(tmp_path / "indexes"), "CELERY_BROKER_URL": "", "DJANGO_DEBUG": "false",
           "MCP_RATE_LIMIT_PER_MINUTE": "0", "PYTHONPATH": str(ROOT)}
    process = None
    try:
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v", "0"], env=env, cwd=ROOT, check=True, timeout=300)
        key = subprocess.run([*manage, "shell", "-c", REGISTER.format(path=str(sample_build_dir))], env=env,
                             cwd=ROOT, check=True, timeout=120, capture_output=True, text=True).stdout.split()[-1]
        port = _free_port()
        log = (tmp_path / "server.log").open("w")
        process = subprocess.Popen([*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], env=env, cwd=ROOT,
                                   stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                httpx.get(f"{base}/health/", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, (tmp_path / "server.log").read_text()
                time.sleep(0.1)
        yield base, name, key
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
        _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        _admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        _admin(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.mark.slow
def test_search_and_get_doc_keep_answering_while_the_database_is_down(own_database_server):
    base, name, key = own_database_server
    url = f"{base}/mcp/"
    with httpx.Client(timeout=60) as http:
        before = tool(http, url, "search_docs", {"query": "install"}, key)
        assert not before["isError"]
        chunk_id = before["structuredContent"]["hits"][0]["chunk_id"]
        assert http.get(f"{base}/api/v1/corpora/sample/search", params={"query": "install"}).status_code == 200
        assert http.get(f"{base}/health/").json()["health"] == "ok"

        _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        _admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        time.sleep(1.5)  # past the pointer cache's TTL, so the server really asks the database again

        during = tool(http, url, "search_docs", {"query": "install"}, key)  # a database key, checked before
        assert not during["isError"], during
        assert during["structuredContent"]["hits"] == before["structuredContent"]["hits"]
        doc = tool(http, url, "get_doc", {"chunk_id": chunk_id}, key)
        assert not doc["isError"] and doc["content"][0]["text"]
        anonymous = tool(http, url, "search_docs", {"query": "install"})
        assert not anonymous["isError"]

        unknown_key = rpc(http, url, "tools/call", {"name": "search_docs", "arguments": {"query": "x"}}, "nope")
        assert unknown_key.status_code == 503 and "database cannot be reached" in unknown_key.json()["error"]["message"]
        rest = http.get(f"{base}/api/v1/corpora/sample/search", params={"query": "install"},
                        headers={"Authorization": "Bearer nope"})
        assert rest.status_code == 503 and rest.json()["error"]["code"] == "database_unavailable", rest.text
        rest_search = http.get(f"{base}/api/v1/corpora/sample/search", params={"query": "install"})
        assert rest_search.status_code == 200, rest_search.text
        assert [h["chunk_id"] for h in rest_search.json()["hits"]] == [
            h["chunk_id"] for h in before["structuredContent"]["hits"]]
        listing = http.get(f"{base}/api/v1/corpora")  # needs the database: refused, never a 500
        assert listing.status_code == 503 and listing.json()["error"]["code"] == "database_unavailable"

        health = http.get(f"{base}/health/")
        assert health.status_code == 200
        body = health.json()
        assert body["health"] == "degraded" and body["status"] == "healthy"
        assert body["checks"]["database"] == "error" and body["checks"]["indexes"] == "ok"
        assert [c["corpus"] for c in body["corpora"]] == ["sample"]

        _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert http.get(f"{base}/health/").json()["health"] == "ok"


@pytest.mark.slow
def test_per_corpus_and_per_version_urls_keep_answering_while_the_database_is_down(own_database_server):
    base, name, key = own_database_server
    urls = (f"{base}/mcp/c/sample/", f"{base}/mcp/c/sample@v2/")
    with httpx.Client(timeout=60) as http:
        before = {url: tool(http, url, "search_docs", {"query": "install"}, key) for url in urls}
        assert not any(result["isError"] for result in before.values()), before

        _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        _admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        time.sleep(1.5)  # past the pointer cache's TTL, so the server really asks the database again

        for url in urls:
            listed = rpc(http, url, "tools/list", {}, key)
            assert listed.status_code == 200, listed.text
            assert {"search_docs", "get_doc"} <= {t["name"] for t in listed.json()["result"]["tools"]}
            during = tool(http, url, "search_docs", {"query": "install"}, key)
            assert not during["isError"], during
            assert during["structuredContent"]["hits"] == before[url]["structuredContent"]["hits"]
            chunk_id = during["structuredContent"]["hits"][0]["chunk_id"]
            doc = tool(http, url, "get_doc", {"chunk_id": chunk_id}, key)
            assert not doc["isError"] and chunk_id in doc["content"][0]["text"]
        assert not tool(http, urls[0], "search_docs", {"query": "install"})["isError"]  # anonymous too

        # A corpus this server never served cannot be told apart from a missing one: 503, retry later.
        unseen = rpc(http, f"{base}/mcp/c/nosuch/", "tools/list", {}, key)
        assert unseen.status_code == 503 and "database cannot be reached" in unseen.json()["error"]["message"]

        _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert rpc(http, f"{base}/mcp/c/nosuch/", "tools/list", {}, key).status_code == 404


def test_health_reports_a_broker_with_nothing_listening(sample_corpus, live_url, settings):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{_free_port()}/0"
    response = httpx.get(f"{live_url}/health/", timeout=30)
    assert response.status_code == 200
    body = response.json()
    assert body["checks"]["broker"] == "error" and body["health"] == "degraded"
    if services.redis_unreachable_reason() is None:  # a broker that answers: the check says ok again
        settings.CELERY_BROKER_URL = services.REDIS_URL
        assert httpx.get(f"{live_url}/health/", timeout=30).json()["checks"]["broker"] == "ok"


def test_an_active_index_whose_files_were_deleted(db, sample_build_dir, live_url, tmp_path, settings):
    copy = tmp_path / "doomed-build"
    shutil.copytree(sample_build_dir, copy)
    register_build("doomed", copy)
    settings.DOCSMCP_DEFAULT_CORPUS = "doomed"
    with httpx.Client(timeout=60) as http:
        found = tool(http, f"{live_url}/mcp/", "search_docs", {"query": "install"})
        chunk_id = found["structuredContent"]["hits"][0]["chunk_id"]
        assert httpx.get(f"{live_url}/health/").json()["health"] == "ok"

        shutil.rmtree(copy)

        for name, arguments in (("get_doc", {"chunk_id": chunk_id}), ("search_docs", {"query": "install"})):
            result = tool(http, f"{live_url}/mcp/", name, arguments)
            assert result["isError"]
            assert "missing its files" in result["content"][0]["text"] and "build_index" in result["content"][0]["text"]
        health = http.get(f"{live_url}/health/")
        assert health.status_code == 503
        body = health.json()
        assert body["health"] == "unhealthy" and body["checks"]["indexes"] == "error"
        assert body["corpora"][0]["index"] == "unreadable"


# --- what each fallback on a DatabaseError does, and that it says so ----------------------------------


def test_a_key_checked_before_an_outage_is_accepted_for_the_grace_period_and_the_log_says_so(
        rf, monkeypatch, caplog, settings):
    from django.db import OperationalError

    from common.callers import Principal
    from common.errors import AuthUnavailable
    from corpus import apikeys

    settings.MCP_API_KEY = ""
    key = "k" * 43
    reader = Principal(name="reader", scopes=frozenset({"read"}))
    monkeypatch.setattr(apikeys, "_last_outage_warning", 0.0)
    monkeypatch.setitem(apikeys._key_cache, apikeys.hash_key(key), (time.monotonic() - 60, reader))

    def database_down(digest):
        raise OperationalError("connection refused")

    monkeypatch.setattr(apikeys, "_principal_from_database", database_down)
    request = rf.get("/mcp/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert apikeys.authenticate(request) is reader
    assert "database unavailable (connection refused); API keys checked in the last 600 s" in caplog.text
    assert "'reader'" in caplog.text and key not in caplog.text
    monkeypatch.setitem(apikeys._key_cache, apikeys.hash_key(key), (time.monotonic() - 700, reader))
    with pytest.raises(AuthUnavailable):  # past the grace period: fails closed
        apikeys.authenticate(request)


def test_a_key_is_accepted_when_only_its_last_used_hint_cannot_be_written(db, rf, monkeypatch, caplog):
    from django.db import OperationalError

    from corpus import apikeys

    _, key = apikeys.create_api_key("hinted", ["read"])
    apikeys.forget_cached_keys()
    monkeypatch.setattr(apikeys, "_last_outage_warning", 0.0)

    def read_only(pk, now):
        raise OperationalError("cannot execute UPDATE in a read-only transaction")

    monkeypatch.setattr(apikeys, "_touch", read_only)
    principal = apikeys.authenticate(rf.get("/mcp/", HTTP_AUTHORIZATION=f"Bearer {key}"))
    assert principal is not None and principal.name == "hinted"
    assert "API key 'hinted': last_used_at not written" in caplog.text
    apikeys.forget_cached_keys()


def test_serving_through_an_outage_logs_what_it_answers_from(monkeypatch, caplog):
    from django.db import OperationalError

    from corpus.errors import DatabaseUnavailable
    from corpus.serving import active
    from corpus.serving.state import STATE

    def database_down(*args):
        raise OperationalError("connection refused")

    monkeypatch.setattr(active, "version_labels", database_down)
    monkeypatch.setattr(STATE, "last_stale_warning", 0.0)
    assert active.version_choices("never-seen") == ("never-seen", [])
    assert "database unavailable (connection refused); offering the last known versions" in caplog.text
    monkeypatch.setattr(STATE, "last_stale_warning", 0.0)
    with pytest.raises(DatabaseUnavailable):
        active._pointer("never-seen", database_down)
    assert "corpus never-seen not served since start: refused" in caplog.text
