"""Builds against failing machines and careless settings: leases, cancel, retention, validate in a
daemonic worker, a corpus's remembered embeddings, and the operator's API endpoint and key."""

from __future__ import annotations

import multiprocessing
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError
from django.utils import timezone

from corpus import execution
from corpus.errors import CorpusError, EmbeddingChangeRefused
from corpus.execution import build_execute, builds_prune
from corpus.models import BuildRun, Corpus
from corpus.providers import cached_provider
from corpus.services import build_cancel, build_request, corpus_create, corpus_update, expire_builds
from corpus.serving import active_index, forget_active, query_embedder
from retrieval.ingest.validate import validate_corpus
from tests.cli_helpers import build_cmd
from tests.openai_stub import openai_stub

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_caches():
    forget_active()
    cached_provider.cache_clear()
    yield
    forget_active()
    cached_provider.cache_clear()


def hash_corpus(name: str, source: Path) -> Corpus:
    corpus = corpus_create(name=name, source_dir=str(source), corpus_settings={"embedding_provider": "hash"})
    assert build_execute(build=build_request(corpus=corpus)).status == BuildRun.COMPLETE
    corpus.refresh_from_db()
    return corpus


# --- lease -------------------------------------------------------------------------------------

def _orphan(corpus: Corpus, seconds_silent: int) -> BuildRun:
    build = build_request(corpus=corpus)
    BuildRun.objects.filter(pk=build.pk).update(
        status=BuildRun.RUNNING, started_at=timezone.now() - timedelta(minutes=5),
        heartbeat_at=timezone.now() - timedelta(seconds=seconds_silent))
    build.refresh_from_db()
    return build


def test_a_build_whose_lease_lapsed_is_failed_when_the_next_build_is_requested(index_root, copy_sample_docs,
                                                                                 settings):
    settings.DOCSMCP_BUILD_LEASE_SECONDS = 30
    corpus = hash_corpus("lease", copy_sample_docs)
    orphan = _orphan(corpus, 31)
    fresh = build_request(corpus=corpus)
    orphan.refresh_from_db()
    assert orphan.status == BuildRun.FAILED
    assert "its worker stopped" in orphan.error and "previous index keeps serving" in orphan.error
    assert fresh.status == BuildRun.QUEUED


def test_a_build_within_its_lease_still_blocks_the_corpus(index_root, copy_sample_docs, settings):
    settings.DOCSMCP_BUILD_LEASE_SECONDS = 30
    corpus = hash_corpus("lease", copy_sample_docs)
    running = _orphan(corpus, 5)
    assert expire_builds(corpus) == 0
    with pytest.raises(CorpusError, match="already has a build in progress"):
        build_request(corpus=corpus)
    running.refresh_from_db()
    assert running.status == BuildRun.RUNNING


def test_reads_of_builds_and_health_leave_an_orphaned_build_as_it_is(index_root, copy_sample_docs, settings,
                                                                     client, django_user_model):
    """Reads never write (#48): the REST build list and detail, /health/ and the admin's build list show
    the row as it is; the reaper (below) marks it failed."""
    settings.DOCSMCP_BUILD_LEASE_SECONDS = 30
    orphan = _orphan(hash_corpus("lease", copy_sample_docs), 120)
    listed = client.get("/api/v1/corpora/lease/builds")
    assert listed.status_code == 200, listed.content
    assert {b["build_id"]: b["status"] for b in listed.json()["items"]}[orphan.build_id] == "running"
    assert client.get(f"/api/v1/corpora/lease/builds/{orphan.build_id}").json()["status"] == "running"
    assert client.get("/health/").status_code == 200
    client.force_login(django_user_model.objects.create_superuser("admin", "admin@example.com", "pw"))
    assert client.get("/admin/corpus/buildrun/").status_code == 200
    orphan.refresh_from_db()
    assert orphan.status == BuildRun.RUNNING


def test_the_reaper_fails_an_orphaned_build_and_leaves_a_live_one(index_root, copy_sample_docs, settings):
    from corpus.reaping import reap_once

    settings.DOCSMCP_BUILD_LEASE_SECONDS = 30
    orphan = _orphan(hash_corpus("lease", copy_sample_docs), 120)
    live = _orphan(hash_corpus("alive", copy_sample_docs), 5)
    assert reap_once() == 1
    orphan.refresh_from_db()
    live.refresh_from_db()
    assert orphan.status == BuildRun.FAILED and "its worker stopped" in orphan.error
    assert live.status == BuildRun.RUNNING


@pytest.mark.django_db(transaction=True)
def test_the_reaper_thread_fails_an_orphaned_build_without_any_request(index_root, copy_sample_docs, settings):
    """What every Celery worker starts when it is ready (corpus/tasks.py), the embedded one of serve too."""
    from corpus import reaping

    settings.DOCSMCP_BUILD_LEASE_SECONDS = 30
    orphan = _orphan(hash_corpus("lease", copy_sample_docs), 120)
    thread = reaping.start_reaper(interval=0.2)
    try:
        assert thread is not None and thread.is_alive() and reaping.start_reaper(interval=0.2) is thread
        deadline = time.monotonic() + 20
        while BuildRun.objects.get(pk=orphan.pk).status != BuildRun.FAILED:
            assert time.monotonic() < deadline, "the reaper did not fail the orphaned build"
            time.sleep(0.1)
    finally:
        reaping.stop_reaper()
    assert not thread.is_alive()


def test_celery_beat_schedules_the_reaper(settings):
    from common.celery import app
    from corpus.tasks import reap_builds

    entry = app.conf.beat_schedule["reap-dead-builds"]
    assert entry["task"] == reap_builds.name == "corpus.reap_builds" and entry["schedule"] > 0


@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_a_step_reports_no_progress(index_root, copy_sample_docs, settings):
    """A long silent step (one slow API call, one big index) must not look like a dead worker."""
    settings.DOCSMCP_BUILD_LEASE_SECONDS = 1  # renewed every 0.5 s
    corpus = corpus_create(name="silent", source_dir=str(copy_sample_docs),
                           corpus_settings={"embedding_provider": "hash"})
    build = build_request(corpus=corpus)
    seen: list[tuple] = []

    def silent_step(stage: str, done: int, total: int) -> None:
        if stage == "embed" and not seen:
            started = BuildRun.objects.get(pk=build.pk).heartbeat_at
            import time

            time.sleep(2.5)  # no progress callback meanwhile
            seen.append((started, BuildRun.objects.get(pk=build.pk).heartbeat_at))
            assert expire_builds(corpus) == 0

    assert build_execute(build=build, echo=silent_step).status == BuildRun.COMPLETE
    (before, after), = seen
    assert after - before >= timedelta(seconds=1)


# --- cancel ------------------------------------------------------------------------------------

def test_cancelling_an_orphaned_build_frees_the_corpus_at_once(index_root, copy_sample_docs, settings):
    settings.DOCSMCP_BUILD_LEASE_SECONDS = 30
    corpus = hash_corpus("cancel", copy_sample_docs)
    orphan = _orphan(corpus, 60)
    cancelled = build_cancel(build=orphan)
    assert cancelled.status == BuildRun.CANCELLED and "worker had stopped" in cancelled.error
    assert build_request(corpus=corpus).status == BuildRun.QUEUED


def test_cancelling_a_running_build_asks_it_to_stop(index_root, copy_sample_docs):
    corpus = hash_corpus("cancel", copy_sample_docs)
    running = _orphan(corpus, 0)
    asked = build_cancel(build=running)
    assert asked.status == BuildRun.RUNNING and asked.cancel_requested


def test_a_cancelled_build_stops_between_embedding_batches(index_root, copy_sample_docs, settings, monkeypatch):
    # The build asks the database at most every half second; the sample embeds faster than that.
    monkeypatch.setattr(execution, "CANCEL_CHECK_SECONDS", 0)
    stub = openai_stub(embedding_dim=8)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = stub.__enter__().base_url, "sk-operator"
    corpus = corpus_create(name="cancel", source_dir=str(copy_sample_docs), corpus_settings={
        "embedding_provider": "openai", "embedding_options": {"batch_size": 8}})
    try:
        assert build_execute(build=build_request(corpus=corpus)).status == BuildRun.COMPLETE
        corpus.refresh_from_db()
        previous = corpus.active_build_id
        build = build_request(corpus=corpus, kind=BuildRun.KIND_FULL)
        _cancel_while_embedding(build, corpus, index_root, previous)
    finally:
        stub.__exit__(None, None, None)


def _cancel_while_embedding(build: BuildRun, corpus: Corpus, index_root: Path, previous: int) -> None:
    embedded: list[int] = []

    def cancel_after_first_batch(stage: str, done: int, total: int) -> None:
        if stage == "embed":
            embedded.append(done)
            if done and not build_cancel(build=BuildRun.objects.get(pk=build.pk)).cancel_requested:
                pytest.fail("cancel was not recorded")

    result = build_execute(build=build, echo=cancel_after_first_batch)
    assert result.status == BuildRun.CANCELLED and "while embedding" in result.error
    total = result.progress_total
    assert 0 < max(embedded) < total  # stopped one batch in, not after embedding everything
    corpus.refresh_from_db()
    assert corpus.active_build_id == previous
    assert list(index_root.rglob("*.partial")) == []


# --- retention ---------------------------------------------------------------------------------

def test_prune_removes_leftover_partials_and_unrecorded_builds_but_not_in_flight_or_active(
        index_root, copy_sample_docs):
    corpus = hash_corpus("prune", copy_sample_docs)
    builds_dir = index_root / "prune" / "builds"
    dead = _orphan(corpus, 3600)
    expire_builds(corpus)
    (builds_dir / f"{dead.build_id}.partial" / "lancedb").mkdir(parents=True)  # its worker was killed mid-write
    shutil.copytree(corpus.active_build.index_path, builds_dir / "20250101T000000-abcdef")  # complete, never recorded
    in_flight = build_request(corpus=corpus)
    (builds_dir / f"{in_flight.build_id}.partial").mkdir()

    removed = builds_prune(corpus=corpus)

    assert sorted(removed) == sorted([f"{dead.build_id}.partial", "20250101T000000-abcdef"])
    assert sorted(p.name for p in builds_dir.iterdir()) == sorted(
        [corpus.active_build.build_id, f"{in_flight.build_id}.partial"])
    assert active_index("prune").build_id == corpus.active_build.build_id


# --- validate in a daemonic worker -------------------------------------------------------------

def _many_files(root: Path, count: int) -> Path:
    for n in range(count):
        (root / f"page-{n:03}.md").write_text(f"# Page {n}\n\n## Section\n\nText of page {n}.\n")
    return root


def _validate_in_child(root: str, results) -> None:
    try:
        _scan, files, _findings = validate_corpus(Path(root))
        results.put(len(files))
    except BaseException as exc:
        results.put(f"{type(exc).__name__}: {exc}")


def test_validate_runs_inside_a_daemonic_process(tmp_path):
    """A Celery prefork child is daemonic and may not start a process pool; 200+ files would."""
    (tmp_path / "docs").mkdir()
    root = _many_files(tmp_path / "docs", 210)
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_validate_in_child, args=(str(root), results), daemon=True)
    child.start()
    outcome = results.get(timeout=120)
    child.join(timeout=30)
    assert outcome == 210


# --- a corpus remembers how it is built --------------------------------------------------------

def test_build_index_embedding_provider_becomes_the_corpus_setting(index_root, copy_sample_docs):
    assert build_cmd("--corpus", "kept", "--source", str(copy_sample_docs), "--embedding-provider", "hash")[0] == 0
    corpus = Corpus.objects.get(name="kept")
    assert corpus.settings["embedding_provider"] == "hash"
    code, _out, err = build_cmd("--corpus", "kept")  # no flag: builds as the corpus says
    assert code == 0, err
    assert corpus.builds.first().embedding["provider"] == "hash"


def test_a_build_that_would_drop_the_vectors_is_refused_without_confirmation(index_root, copy_sample_docs):
    assert build_cmd("--corpus", "kept", "--source", str(copy_sample_docs), "--embedding-provider", "hash")[0] == 0
    corpus = Corpus.objects.get(name="kept")
    active = corpus.active_build_id
    with pytest.raises(CommandError, match=r"has 'hash' vectors .*would drop its vectors .*--change-embeddings"):
        build_cmd("--corpus", "kept", "--embedding-provider", "none")
    corpus.refresh_from_db()
    assert corpus.settings["embedding_provider"] == "hash" and corpus.active_build_id == active
    corpus_update(corpus=corpus, corpus_settings={"embedding_provider": "none"})
    with pytest.raises(EmbeddingChangeRefused):
        build_request(corpus=corpus)
    code, _out, err = build_cmd("--corpus", "kept", "--change-embeddings")
    assert code == 0, err
    corpus.refresh_from_db()
    assert corpus.active_build.embedding is None


def test_rest_build_with_another_provider_needs_change_embeddings(index_root, copy_sample_docs, client):
    from corpus.apikeys import create_api_key

    hash_corpus("kept", copy_sample_docs)
    _row, key = create_api_key("builder", ["build", "read"])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    refused = client.post("/api/v1/corpora/kept/builds", {"embedding_provider": "none"},
                          content_type="application/json", **auth)
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == "embedding_change_refused"
    assert "change_embeddings" in refused.json()["error"]["message"]
    accepted = client.post("/api/v1/corpora/kept/builds", {"embedding_provider": "none", "change_embeddings": True},
                           content_type="application/json", **auth)
    assert accepted.status_code == 202, accepted.content
    assert Corpus.objects.get(name="kept").settings["embedding_provider"] == "none"


def test_the_corpus_api_shows_its_embedding_setting(index_root, copy_sample_docs, client):
    hash_corpus("kept", copy_sample_docs)
    body = client.get("/api/v1/corpora/kept").json()
    assert body["settings"]["embedding_provider"] == "hash"


# --- the operator's endpoint and key -----------------------------------------------------------

@contextmanager
def listening_socket() -> Iterator[tuple[str, socket.socket]]:
    """A local TCP port that records, in its accept queue, anyone who connects."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1", server
    finally:
        server.close()


def assert_nothing_connected(server: socket.socket) -> None:
    server.setblocking(False)
    with pytest.raises(BlockingIOError):
        server.accept()


def test_a_corpus_cannot_send_the_build_embeddings_elsewhere(index_root, copy_sample_docs, settings):
    settings.OPENAI_API_KEY = "sk-operator"
    with listening_socket() as (url, server), openai_stub(embedding_dim=8) as stub:
        settings.OPENAI_BASE_URL = stub.base_url
        with pytest.raises(CorpusError, match="'base_url' not allowed"):
            corpus_create(name="leak", source_dir=str(copy_sample_docs), corpus_settings={
                "embedding_provider": "openai", "embedding_options": {"base_url": url}})
        corpus = corpus_create(name="leak", source_dir=str(copy_sample_docs),
                               corpus_settings={"embedding_provider": "openai"})
        # A row written before this rule (or straight into the database) is refused at build time too.
        Corpus.objects.filter(pk=corpus.pk).update(settings={
            "embedding_provider": "openai", "embedding_options": {"base_url": url, "model": "m"}})
        corpus.refresh_from_db()
        with pytest.raises(CorpusError, match="OPENAI_BASE_URL"):
            build_request(corpus=corpus)
        assert_nothing_connected(server)
        assert stub.requests == []


def test_a_corpus_cannot_send_query_embeddings_elsewhere(index_root, copy_sample_docs, settings):
    settings.OPENAI_API_KEY = "sk-operator"
    with listening_socket() as (url, server), openai_stub(embedding_dim=8) as stub:
        settings.OPENAI_BASE_URL = stub.base_url
        corpus = corpus_create(name="leak", source_dir=str(copy_sample_docs),
                               corpus_settings={"embedding_provider": "openai",
                                                "embedding_options": {"model": "text-embedding-3-small"}})
        assert build_execute(build=build_request(corpus=corpus)).status == BuildRun.COMPLETE
        assert query_embedder(active_index("leak")).embed_query("retries").shape == (8,)
        assert stub.requests[-1].headers.get("authorization") == "Bearer sk-operator"
        Corpus.objects.filter(pk=corpus.pk).update(settings={
            "embedding_provider": "openai",
            "embedding_options": {"model": "text-embedding-3-small", "base_url": url, "api_key": "sk-x"}})
        cached_provider.cache_clear()
        with pytest.raises(CorpusError, match="not allowed"):
            query_embedder(active_index("leak"))
        assert_nothing_connected(server)


# --- the admin ---------------------------------------------------------------------------------

def test_the_admin_shows_refuses_and_confirms_embedding_settings(index_root, copy_sample_docs, admin_client):
    from django.urls import reverse

    corpus = hash_corpus("kept", copy_sample_docs)
    changelist = reverse("admin:corpus_corpus_changelist")
    assert "<td class=\"field-embeddings\">hash</td>" in admin_client.get(changelist).content.decode()

    form = {"name": "kept", "kind": "markdown", "source_dir": corpus.source_dir, "description": "", "version": "",
            "aliases": "[]", "settings": '{"embedding_provider": "openai", "embedding_options": {"base_url": "http://x"}}'}
    page = admin_client.post(reverse("admin:corpus_corpus_change", args=[corpus.pk]), form).content.decode()
    assert "&#x27;base_url&#x27; not allowed" in page
    corpus.refresh_from_db()
    assert corpus.settings == {"embedding_provider": "hash"}

    corpus_update(corpus=corpus, corpus_settings={"embedding_provider": "none"})
    page = admin_client.post(changelist, {"action": "build", "_selected_action": [corpus.pk]}, follow=True)
    assert "would drop its vectors" in page.content.decode()
    assert not corpus.builds.filter(status=BuildRun.QUEUED).exists()
    admin_client.post(changelist, {"action": "build_change_embeddings", "_selected_action": [corpus.pk]})
    assert corpus.builds.get(status=BuildRun.QUEUED).embedding_provider == "none"


def test_adding_vectors_to_a_full_text_corpus_needs_no_confirmation(index_root, copy_sample_docs):
    assert build_cmd("--corpus", "grows", "--source", str(copy_sample_docs), "--embedding-provider", "none")[0] == 0
    code, _out, err = build_cmd("--corpus", "grows", "--embedding-provider", "hash")
    assert code == 0, err
    assert Corpus.objects.get(name="grows").active_build.embedding["provider"] == "hash"
