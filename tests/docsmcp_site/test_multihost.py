"""Several hosts on one machine: two `manage.py serve` web nodes and two Celery workers that share
nothing but the object store (an S3-compatible server), PostgreSQL and Redis.

Each process has its own local cache and queue directories; the index root is `s3://...`. A build
queued through the REST API of one web node is run by either worker and served by both nodes; a
rollback on one node is seen by the other; 32 concurrent MCP clients spread over both nodes see
no error while a rebuild activates; a worker killed mid-build leaves nothing that can be activated,
and the retention pass of the next build removes what it wrote.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from corpus.apikeys import create_api_key
from corpus.models import BuildRun
from corpus.serving import forget_active
from retrieval import storage
from tests import s3_server
from tests.corpus.test_celery_worker import REDIS_URL, _redis_unreachable_reason
from tests.docsmcp_site.test_deploy_e2e import (
    ROOT,
    SERVER_READY_TIMEOUT,
    corpus_of_sample_docs,
    free_port,
    start_worker,
    stop,
    topology_env,  # noqa: F401  (a fixture)
    wait_for_status,
)
from tests.services import delete_queue

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CLIENTS = 32
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}
NEW_FILE = "# Multihost\n\n## Zebraphone\n\nThe zebraphone rollout spans every web node.\n"


def start_web(environment: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "manage.py", "serve", "--no-worker", "--port", str(port),
                                    "--workers", "1", "--threads", "8"], cwd=ROOT, env=environment, stdout=out,
                                   stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_READY_TIMEOUT
    while True:
        try:
            httpx.get(f"{base}/", timeout=5)
            return process, base
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.5)


@pytest.fixture
def hosts(topology_env, s3_endpoint, tmp_path, settings):  # noqa: F811
    """Two web nodes and two workers, each as if on its own host; yields what the test needs."""
    reason = _redis_unreachable_reason()
    if reason:
        pytest.skip(reason)
    root = s3_server.new_root()
    queue = f"docsmcp-multihost-{os.getpid()}-{free_port()}"
    shared = {**topology_env, **s3_server.environment(s3_endpoint), "DOCSMCP_INDEX_ROOT": root,
              "CELERY_BROKER_URL": REDIS_URL, "CELERY_RESULT_BACKEND": REDIS_URL,
              "CELERY_TASK_DEFAULT_QUEUE": queue,
              "DJANGO_SECRET_KEY": "multihost-test-secret-shared-by-every-node-0123456789",
              "DOCSMCP_BUILD_LEASE_SECONDS": "3", "DOCSMCP_SOURCE_ROOTS": str(tmp_path / "sources"),
              # 32 clients share one key; the per-key limit (shared by the nodes through Redis) is not under test
              "MCP_RATE_LIMIT_PER_MINUTE": "1000000"}

    def host(name: str) -> dict[str, str]:
        home = tmp_path / name
        home.mkdir()
        return {**shared, "DOCSMCP_INDEX_CACHE_DIR": str(home / "index-cache"),
                "DOCSMCP_CELERY_DIR": str(home / "celery"), "DOCSMCP_SECRET_KEY_FILE": str(home / "secret_key")}

    settings.DOCSMCP_INDEX_ROOT = root  # this test process reads the store to check what is there
    os.environ.update(s3_server.environment(s3_endpoint))
    storage.configure(os.environ)  # as the settings of a process started now would
    processes: dict[str, subprocess.Popen] = {}
    try:
        envs = {name: host(name) for name in ("web-a", "web-b", "worker-a", "worker-b")}
        processes["worker-a"] = start_worker(envs["worker-a"], tmp_path / "worker-a.log")
        processes["worker-b"] = start_worker(envs["worker-b"], tmp_path / "worker-b.log")
        processes["web-a"], base_a = start_web(envs["web-a"], tmp_path / "web-a.log")
        processes["web-b"], base_b = start_web(envs["web-b"], tmp_path / "web-b.log")
        yield {"root": root, "a": base_a, "b": base_b, "envs": envs, "processes": processes, "tmp": tmp_path}
    finally:
        for process in processes.values():
            stop(process)
        delete_queue(queue)
        os.environ.pop("DOCSMCP_STORAGE_OPTIONS", None)
        storage.configure(os.environ)
        forget_active()


def search(http: httpx.Client, base: str, key: str, query: str) -> list[str]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": query}}}
    answer = http.post(f"{base}/mcp/", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result.get("isError") is not True, result
    return [hit["filepath"] for hit in result["structuredContent"]["hits"]]


def eventually(check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def queue_build(http: httpx.Client, base: str, key: str, corpus: str, kind: str = "incremental") -> BuildRun:
    answer = http.post(f"{base}/api/v1/corpora/{corpus}/builds", json={"kind": kind},
                       headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 202, answer.text
    return BuildRun.objects.get(build_id=answer.json()["build_id"])


def test_two_web_nodes_and_two_workers_share_only_the_object_store(hosts):
    tmp = hosts["tmp"]
    source = corpus_of_sample_docs(tmp / "sources", "fleet")
    _, reader = create_api_key("agent", ["read"])
    _, operator = create_api_key("operator", ["read", "build"])
    a, b = hosts["a"], hosts["b"]
    with httpx.Client(timeout=60) as http:
        # A build queued on web node A, run by whichever worker takes it, served by both nodes.
        first = wait_for_status(queue_build(http, a, operator, "fleet", "full"), (BuildRun.COMPLETE, BuildRun.FAILED))
        assert first.status == BuildRun.COMPLETE, first.error
        assert first.index_path.startswith(hosts["root"])
        for base in (a, b):
            assert "guides/retries.md" in eventually(lambda base=base: search(http, base, reader, "retry backoff"))

        # 32 concurrent MCP clients over both nodes while a rebuild activates.
        (Path(source.source_dir) / "guides" / "multihost.md").write_text(NEW_FILE)
        errors: list[str] = []
        answered = [0]
        stop_clients = threading.Event()

        def client(n: int) -> None:
            base = (a, b)[n % 2]
            with httpx.Client(timeout=60) as own:
                while not stop_clients.is_set():
                    try:
                        search(own, base, reader, ("zebraphone rollout", "retry backoff", "webhook signature")[n % 3])
                        answered[0] += 1
                    except Exception as exc:  # every failure is one the agents would see
                        errors.append(f"{base}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        try:
            second = wait_for_status(queue_build(http, b, operator, "fleet"), (BuildRun.COMPLETE, BuildRun.FAILED))
            assert second.status == BuildRun.COMPLETE, second.error
            for base in (a, b):
                eventually(lambda base=base: _assert_found(search(http, base, reader, "zebraphone rollout")))
            time.sleep(3)  # and on, while the nodes swap the store for their local copies
        finally:
            stop_clients.set()
            for thread in threads:
                thread.join()
        assert errors == [], errors[:5]
        assert answered[0] > CLIENTS

        # A rollback on node B is seen by node A.
        answer = http.post(f"{b}/api/v1/corpora/fleet/builds/{first.build_id}/activate",
                           headers={"Authorization": f"Bearer {operator}"})
        assert answer.status_code == 200, answer.text
        eventually(lambda: _assert_missing(search(http, a, reader, "zebraphone rollout")))
        eventually(lambda: _assert_missing(search(http, b, reader, "zebraphone rollout")))

        # Each web node now serves from its own local copies, which it fetched itself.
        for name in ("web-a", "web-b"):
            cache = Path(hosts["envs"][name]["DOCSMCP_INDEX_CACHE_DIR"])
            assert eventually(lambda cache=cache: _assert_copied(cache, first.build_id))

        # A worker killed mid-build: its objects are never activatable, and the next build's retention
        # pass removes them.
        killed = queue_build(http, a, operator, "fleet", "full")
        written = storage.join(hosts["root"], "fleet", "builds", killed.build_id)
        deadline = time.monotonic() + 120
        while not storage.list_tree(written):
            killed.refresh_from_db()
            assert killed.status in BuildRun.IN_FLIGHT and time.monotonic() < deadline, killed.status
            time.sleep(0.05)
        for name in ("worker-a", "worker-b"):
            hosts["processes"][name].send_signal(signal.SIGKILL)
            hosts["processes"][name].wait(30)
        assert storage.list_tree(written)
        # Reads never write: the build is marked failed by a worker's reaper, not by the GETs below.
        hosts["processes"]["worker-a"] = start_worker(hosts["envs"]["worker-a"], tmp / "worker-a-2.log")
        failed = eventually(lambda: _assert_failed(http, a, operator, killed.build_id), timeout=120)
        assert "its worker stopped" in failed["error"]
        answer = http.post(f"{a}/api/v1/corpora/fleet/builds/{killed.build_id}/activate",
                           headers={"Authorization": f"Bearer {operator}"})
        assert answer.status_code == 409, answer.text
        third = wait_for_status(queue_build(http, b, operator, "fleet"), (BuildRun.COMPLETE, BuildRun.FAILED))
        assert third.status == BuildRun.COMPLETE, third.error
        builds_dir = storage.join(hosts["root"], "fleet", "builds")
        eventually(lambda: _assert_absent(killed.build_id, storage.list_children(builds_dir)))  # pruned after activation
        for base in (a, b):
            eventually(lambda base=base: _assert_found(search(http, base, reader, "zebraphone rollout")))


def _assert_found(paths: list[str]) -> None:
    assert "guides/multihost.md" in paths, paths


def _assert_missing(paths: list[str]) -> None:
    assert "guides/multihost.md" not in paths, paths


def _assert_absent(name: str, names: list[str]) -> None:
    assert name not in names, names


def _assert_copied(cache: Path, build_id: str) -> bool:
    copies = [p for p in cache.rglob(build_id) if p.is_dir() and (p / "metadata.json").is_file()]
    assert copies, sorted(str(p) for p in cache.rglob("*"))[:20]
    return True


def _assert_failed(http: httpx.Client, base: str, key: str, build_id: str) -> dict:
    answer = http.get(f"{base}/api/v1/corpora/fleet/builds/{build_id}", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "failed", body
    return body
