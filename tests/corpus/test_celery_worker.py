"""The Celery path end to end: a real worker process on the Redis broker runs a build that the
web side requested, against the same database and index root.

Needs Redis (DOCSMCP_TEST_REDIS_URL, nothing else: tests/services.py) and a database a second
process can open (PostgreSQL through DATABASE_URL); otherwise it is skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from corpus.errors import BuildInProgress
from corpus.execution import build_execute
from corpus.models import BuildRun, Corpus
from corpus.services import build_request, build_start, corpus_create
from corpus.serving import forget_active
from tests.services import REDIS_URL, database_url, delete_queue, queue_leftovers, redis_unreachable_reason

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parents[2]
WORKER_READY_TIMEOUT = 180  # generous: a loaded CI machine imports Django + LanceDB slowly
BUILD_TIMEOUT = 120
LEASE_SECONDS = 3  # workers renew every second; a killed one is noticed 3 s after its last renewal


_redis_unreachable_reason = redis_unreachable_reason
_database_url = database_url  # the test database (e.g. test_test_gw0), for the processes the tests start


def _wait_until_ready(process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + WORKER_READY_TIMEOUT
    while time.monotonic() < deadline:
        if " ready." in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)
    raise RuntimeError(f"celery worker not ready after {WORKER_READY_TIMEOUT}s:\n{log.read_text(errors='replace')}")


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, tmp_path_factory):
    """A real `celery worker` on its own queue, sharing this session's test database and index root."""
    if connection.vendor == "sqlite":
        pytest.skip("the Celery worker test needs PostgreSQL (set DATABASE_URL): a worker process cannot open "
                    "pytest-django's in-memory SQLite test database")
    if connection.vendor != "postgresql":
        pytest.skip(f"the Celery worker test supports PostgreSQL, not {connection.vendor}")
    reason = _redis_unreachable_reason()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("celery-worker")
    index_root = base / "indexes"
    log = base / "worker.log"
    # A queue of our own, so parallel sessions (pytest -n) and stale messages never cross.
    queue = _new_queue()
    process = _start_worker(["-A", "common", "worker"], queue, index_root, log)
    try:
        _wait_until_ready(process, log)
        yield {"queue": queue, "index_root": index_root, "log": log}
    finally:
        _stop_worker(process, queue)


def _new_queue() -> str:
    return f"docsmcp-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _start_worker(command: list[str], queue: str, index_root: Path, log: Path, **env: str) -> subprocess.Popen:
    """`celery` (or a module standing in for it) as a worker on `queue`, sharing this session's database."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_RESULT_BACKEND": REDIS_URL,
        "DATABASE_URL": _database_url(),
        "DATABASE_CONN_MAX_AGE": "0",
        "DOCSMCP_INDEX_ROOT": str(index_root),
        "DOCSMCP_BUILD_LEASE_SECONDS": str(LEASE_SECONDS),
        "DOCSMCP_BUILD_REAP_SECONDS": "1",
        **env,
    }
    program = [str(Path(sys.executable).with_name("celery"))] if command[0] == "-A" else [sys.executable, "-m"]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*program, *command, "--pool", "solo", "--concurrency", "1", "-Q", queue,
             "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _stop_worker(process: subprocess.Popen, queue: str) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)
    delete_queue(queue)


@pytest.fixture
def web_side_uses_the_broker(celery_worker_process, settings):
    """Make this process dispatch to Redis instead of running tasks inline, then restore."""
    from common.celery import app

    keys = ("task_always_eager", "broker_url", "result_backend", "task_default_queue")
    saved = {key: app.conf[key] for key in keys}

    def reset_connections() -> None:
        import kombu.pools

        if app._pool is not None:
            app._pool.force_close_all()
        app._pool = None
        app.amqp._producer_pool = None
        kombu.pools.reset()  # its producer pools are shared by connection URL and were closed above

    reset_connections()
    app.conf.update(task_always_eager=False, broker_url=REDIS_URL, result_backend=REDIS_URL,
                    task_default_queue=celery_worker_process["queue"])
    settings.DOCSMCP_INDEX_ROOT = celery_worker_process["index_root"]
    forget_active()
    yield celery_worker_process
    reset_connections()
    app.conf.update(saved)
    forget_active()


def build_task_marker(log: Path) -> str:
    """The Celery task id of the run_build the worker received (empty until it has one)."""
    for line in log.read_text(errors="replace").splitlines():
        if "Task corpus.run_build[" in line and line.rstrip().endswith("received"):
            return line.split("corpus.run_build[", 1)[1].split("]", 1)[0]
    return ""


def _wait_for(build: BuildRun) -> BuildRun:
    deadline = time.monotonic() + BUILD_TIMEOUT
    while time.monotonic() < deadline:
        build.refresh_from_db()
        if build.status not in BuildRun.IN_FLIGHT:
            return build
        time.sleep(0.25)
    pytest.fail(f"build {build.build_id} still {build.status} after {BUILD_TIMEOUT}s")


@pytest.mark.django_db(transaction=True)
def test_build_start_dispatches_to_a_real_worker_which_builds_and_activates(web_side_uses_the_broker, tmp_path):
    import shutil

    source = tmp_path / "docs"
    shutil.copytree(ROOT / "corpus" / "sample_docs", source)
    corpus = corpus_create(name="celery-sample", source_dir=str(source),
                           corpus_settings={"embedding_provider": "hash"})
    first = build_execute(build=build_request(corpus=corpus))  # inline, in this process
    assert first.status == BuildRun.COMPLETE
    (source / "guides" / "retries.md").write_text((source / "guides" / "retries.md").read_text()
                                                  + "\nRetry budgets cap retries per minute.\n")

    build = build_start(corpus=corpus, requested_by="celery-test")
    done = _wait_for(build)

    log_path = web_side_uses_the_broker["log"]
    assert done.status == BuildRun.COMPLETE, f"{done.error}\n{log_path.read_text(errors='replace')}"
    # The worker, not this process, ran it (it logs success just after the row is saved).
    deadline = time.monotonic() + 30
    while f"corpus.run_build[{build_task_marker(log_path)}] succeeded" not in log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, log_path.read_text(errors="replace")
        time.sleep(0.2)
    corpus.refresh_from_db()
    assert corpus.active_build_id == done.pk != first.pk
    assert done.started_at is not None and done.heartbeat_at is not None and done.finished_at is not None
    assert done.stage == "mapped"  # the last stage: the files serving processes map
    assert done.progress_done == done.progress_total > 0
    assert (done.stats["chunked_files"], done.stats["reused_files"]) == (1, 41)  # it saw the first build
    assert done.stats["patched"] is True
    assert Path(done.index_path).parent == web_side_uses_the_broker["index_root"] / "celery-sample" / "builds"
    assert Corpus.objects.get(name="celery-sample").builds.filter(status=BuildRun.COMPLETE).count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_build_whose_worker_is_killed_is_failed_and_the_next_build_completes_within_a_minute(
        web_side_uses_the_broker, tmp_path, settings):
    """SIGKILL leaves no chance to clean up: the lease, not the dead worker, frees the corpus."""
    import shutil
    import signal

    from common.celery import app

    settings.DOCSMCP_BUILD_LEASE_SECONDS = LEASE_SECONDS
    source = tmp_path / "docs"
    shutil.copytree(ROOT / "corpus" / "sample_docs", source)
    corpus = corpus_create(name="killed", source_dir=str(source), corpus_settings={"embedding_provider": "hash"})
    index_root = web_side_uses_the_broker["index_root"]
    marker, log = tmp_path / "stalled", tmp_path / "stalling-worker.log"
    queue = _new_queue()
    doomed = _start_worker(["tests.stalling_worker", "-A", "common", "worker"], queue, index_root, log,
                           DOCSMCP_TEST_STALL_MARKER=str(marker))
    try:
        _wait_until_ready(doomed, log)
        app.conf.task_default_queue = queue
        killed = build_start(corpus=corpus, requested_by="celery-test")
        deadline = time.monotonic() + BUILD_TIMEOUT
        while not marker.exists():
            assert time.monotonic() < deadline and doomed.poll() is None, log.read_text(errors="replace")
            time.sleep(0.2)
        partial = index_root / "killed" / "builds" / f"{killed.build_id}.partial"
        assert (partial / "lancedb").is_dir()
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=15)
        killed_at = time.monotonic()
    finally:
        app.conf.task_default_queue = web_side_uses_the_broker["queue"]
        _stop_worker(doomed, queue)
    assert queue_leftovers(queue) == []  # its message, delivered and never acknowledged, is gone too

    while True:  # refused while the dead worker's lease runs out, then accepted
        try:
            build = build_start(corpus=corpus, requested_by="celery-test")
            break
        except BuildInProgress:
            assert time.monotonic() - killed_at < 60, "the killed build still blocks the corpus"
            time.sleep(0.5)
    done = _wait_for(build)
    assert done.status == BuildRun.COMPLETE, done.error
    assert time.monotonic() - killed_at < 60
    killed.refresh_from_db()
    assert killed.status == BuildRun.FAILED
    assert "its worker stopped" in killed.error
    corpus.refresh_from_db()
    assert corpus.active_build_id == done.pk
    deadline = time.monotonic() + 30  # the retention pass runs just after the new build is saved complete
    while partial.exists():
        assert time.monotonic() < deadline, f"{partial} was not removed by the retention pass"
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_a_worker_validates_a_corpus_of_more_than_two_hundred_files(web_side_uses_the_broker, tmp_path):
    source = tmp_path / "many"
    source.mkdir()
    for n in range(210):
        (source / f"page-{n:03}.md").write_text(f"# Page {n}\n\n## Section\n\nText of page {n}.\n")
    corpus = corpus_create(name="many-files", source_dir=str(source))
    done = _wait_for(build_start(corpus=corpus, kind=BuildRun.KIND_VALIDATE, requested_by="celery-test"))
    assert done.status == BuildRun.COMPLETE, done.error
    assert done.stats["total_files"] == 210


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_reaps_a_dead_build_while_nobody_asks(web_side_uses_the_broker, tmp_path):
    """Reads never write (#48): the worker's own timer fails a build whose worker died, no request needed."""
    from django.utils import timezone

    corpus = Corpus.objects.create(name="reaped", source_dir=str(tmp_path))
    now = timezone.now()
    dead = BuildRun.objects.create(corpus=corpus, build_id="dead-worker", status=BuildRun.RUNNING,
                                   started_at=now - timezone.timedelta(minutes=10),
                                   heartbeat_at=now - timezone.timedelta(minutes=10))
    deadline = time.monotonic() + 30
    while BuildRun.objects.get(pk=dead.pk).status != BuildRun.FAILED:
        assert time.monotonic() < deadline, web_side_uses_the_broker["log"].read_text(errors="replace")[-2000:]
        time.sleep(0.2)
