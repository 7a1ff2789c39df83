"""The production topology of docs/deploy.md on this machine, end to end.

`manage.py serve` (gunicorn threaded workers, DEBUG off) and a separate `celery worker`, on the
test PostgreSQL database; Redis as the broker, or the filesystem broker that is the default.
A staff user signs in to a styled admin, starts a build that a worker completes, and an agent
searches over /mcp/ with a key while anonymous writes are refused.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.hashers import make_password
from django.db import connection

from corpus.apikeys import create_api_key
from corpus.models import BuildRun, Corpus
from corpus.services import build_start, corpus_create
from corpus.serving import forget_active
from tests.corpus.test_celery_worker import (
    REDIS_URL,
    _database_url,
    _redis_unreachable_reason,
    _wait_until_ready,
)
from tests.services import delete_queue

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 180
SERVER_READY_TIMEOUT = 180


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_status(build: BuildRun, statuses: tuple[str, ...]) -> BuildRun:
    deadline = time.monotonic() + BUILD_TIMEOUT
    while time.monotonic() < deadline:
        build.refresh_from_db()
        if build.status in statuses:
            return build
        time.sleep(0.25)
    pytest.fail(f"build {build.build_id} still {build.status} after {BUILD_TIMEOUT}s")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=45)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


@pytest.fixture
def topology_env(transactional_db, tmp_path) -> dict[str, str]:
    """The environment docs/deploy.md sets, pointed at this session's database and temporary dirs."""
    if connection.vendor != "postgresql":
        pytest.skip("the deployment test needs PostgreSQL (set DATABASE_URL): other processes share its database")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "MCP_"))}
    environment.update(
        DJANGO_SETTINGS_MODULE="docsmcp_site.settings", DATABASE_URL=_database_url(), DATABASE_CONN_MAX_AGE="0",
        DOCSMCP_SECRET_KEY_FILE=str(tmp_path / "secret_key"), DOCSMCP_INDEX_ROOT=str(tmp_path / "indexes"),
        MCP_AUTH_REQUIRED="true", MCP_RATE_LIMIT_REDIS_URL="", DOCSMCP_CELERY_DIR=str(tmp_path / "celery"),
    )
    return environment


def start_worker(environment: dict[str, str], log: Path) -> subprocess.Popen:
    """`celery worker` as the systemd unit in docs/deploy.md runs it (threads pool from the settings)."""
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "celery", "-A", "common", "worker", "--loglevel",
                                    "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
                                   cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)
    _wait_until_ready(process, log)
    return process


def corpus_of_sample_docs(tmp_path: Path, name: str) -> Corpus:
    source = tmp_path / name
    shutil.copytree(ROOT / "corpus" / "sample_docs", source)
    return corpus_create(name=name, source_dir=str(source), corpus_settings={"embedding_provider": "hash"})


def test_without_a_broker_url_a_build_goes_through_the_filesystem_queue_to_a_separate_worker(topology_env,
                                                                                            tmp_path):
    from common.celery import app

    worker = start_worker(topology_env, tmp_path / "worker.log")
    queue_dir = Path(topology_env["DOCSMCP_CELERY_DIR"]) / "queue"
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url", "broker_transport_options")}
    app.conf.update(task_always_eager=False, broker_url="filesystem://", broker_transport_options={
        "data_folder_in": str(queue_dir), "data_folder_out": str(queue_dir),
        "control_folder": str(queue_dir.with_name("control")), "store_processed": False})
    app._pool = None
    app.amqp._producer_pool = None
    try:
        corpus = corpus_of_sample_docs(tmp_path, "fs-broker")
        build = build_start(corpus=corpus, kind=BuildRun.KIND_FULL, requested_by="fs-test")
        assert build.status == BuildRun.QUEUED  # handed over, not run here
        done = wait_for_status(build, (BuildRun.COMPLETE, BuildRun.FAILED))
        log = (tmp_path / "worker.log").read_text(errors="replace")
        assert done.status == BuildRun.COMPLETE, f"{done.error}\n{log}"
        assert "Task corpus.run_build[" in log and "filesystem://" in log
        assert "fork" not in log.lower()  # threads pool: LanceDB never sees a forked process
    finally:
        app._pool = None
        app.amqp._producer_pool = None
        app.conf.update(saved)
        stop(worker)
        forget_active()


@pytest.fixture
def redis_topology(topology_env, tmp_path):
    """serve (no worker of its own) and a Celery worker on Redis, on a queue of their own."""
    reason = _redis_unreachable_reason()
    if reason:
        pytest.skip(reason)
    port = free_port()
    queue = f"docsmcp-e2e-{os.getpid()}-{port}"
    environment = {**topology_env, "CELERY_BROKER_URL": REDIS_URL, "CELERY_RESULT_BACKEND": REDIS_URL,
                   "CELERY_TASK_DEFAULT_QUEUE": queue}
    worker = start_worker(environment, tmp_path / "worker.log")
    server_log = tmp_path / "serve.log"
    with server_log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "manage.py", "serve", "--no-worker", "--port", str(port),
                                   "--workers", "2"], cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_READY_TIMEOUT
        while True:
            try:
                httpx.get(f"{base}/", timeout=5)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, server_log.read_text(errors="replace")
                time.sleep(0.5)
        yield {"base": base, "server_log": server_log, "worker_log": tmp_path / "worker.log"}
    finally:
        stop(server)
        stop(worker)
        delete_queue(queue)
        forget_active()


def test_production_topology_admin_build_worker_and_mcp(redis_topology, browser, django_user_model, tmp_path):
    base = redis_topology["base"]
    operator = django_user_model.objects.create_user("operator", "op@example.com", is_staff=True, is_superuser=True)
    # hashed as the server (the site's settings) checks it, not with the tests' fast hasher
    operator.password = make_password("correct-horse", hasher="pbkdf2_sha256")
    operator.save(update_fields=["password"])
    corpus = corpus_of_sample_docs(tmp_path, "deployed")

    context = browser.new_context(base_url=base)
    page = context.new_page()
    page.set_default_timeout(30_000)
    statics: dict[str, int] = {}
    page.on("response", lambda r: statics.__setitem__(r.url, r.status) if "/static/" in r.url else None)
    page.goto("/admin/login/?next=/admin/corpus/corpus/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "correct-horse")
    page.click("input[type=submit]")
    page.wait_for_selector("#result_list")
    # Styled: the admin's stylesheet applied and its scripts ran, served by serve itself with DEBUG off.
    assert any(url.endswith(".css") for url in statics) and any(url.endswith(".js") for url in statics)
    assert set(statics.values()) == {200}, statics
    assert page.locator("#header").evaluate("e => getComputedStyle(e).display") == "flex"
    assert page.evaluate("() => typeof window.django === 'object' || typeof window.SelectBox !== 'undefined' "
                         "|| document.querySelector('#changelist-form .actions') !== null")

    page.check(f"#result_list input[name=_selected_action][value='{corpus.pk}']")
    page.select_option("select[name=action]", "rebuild")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist")
    message = page.inner_text(".messagelist")
    build = BuildRun.objects.get(corpus=corpus)
    # The page came back while the worker had the build: queued or running, never already complete.
    assert f"full build {build.build_id} queued" in message or f"full build {build.build_id} running" in message
    page.click(f".messagelist a:has-text('{build.build_id}')")  # the link leads to its live progress page
    page.wait_for_url(f"**/admin/corpus/buildrun/{build.pk}/change/")
    context.close()

    done = wait_for_status(build, (BuildRun.COMPLETE, BuildRun.FAILED))
    assert done.status == BuildRun.COMPLETE, f"{done.error}\n{redis_topology['worker_log'].read_text()}"
    assert "corpus.run_build[" in redis_topology["worker_log"].read_text()

    _, key = create_api_key("agent", ["read"])
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}
    search = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "search_docs", "arguments": {"query": "retry backoff jitter"}}}
    with httpx.Client(base_url=base, timeout=60) as http:
        answer = http.post("/mcp/", json=search, headers={**headers, "Authorization": f"Bearer {key}"})
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert result.get("isError") is not True, result
        assert "guides/retries.md" in {hit["filepath"] for hit in result["structuredContent"]["hits"]}, result
        assert http.post("/mcp/", json=search, headers=headers).status_code == 401  # no key, no read

        refused = http.post("/api/v1/corpora", json={"name": "intruder", "source_dir": str(tmp_path)})
        assert refused.status_code in (401, 403), refused.text
    assert not Corpus.objects.filter(name="intruder").exists()
