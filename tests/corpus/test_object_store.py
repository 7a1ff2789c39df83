"""An index root on an S3-compatible object store: the serving host's local copies of active builds,
what a killed build leaves behind, and the storage settings."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from corpus.errors import BuildStateConflict
from corpus.execution import build_activate, builds_prune
from corpus.models import BuildRun, Corpus
from corpus.services import corpus_create, expire_builds
from corpus.serving import active_index, build_cache, forget_active
from retrieval import storage
from retrieval.errors import IndexUnavailable
from retrieval.storage import uri
from retrieval.storage.cache import BuildCache, CopyIncomplete
from retrieval.storage.contents import CONTENTS_FILE, read_contents
from tests.cli_helpers import build_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_pointers():
    forget_active()
    yield
    forget_active()



def test_a_cold_host_serves_from_the_object_store_until_its_local_copy_is_in(s3_index_root, copy_sample_docs,
                                                                              settings):
    build = build_corpus("skyline", copy_sample_docs)
    assert build.index_path.startswith("s3://")
    cold = active_index("skyline")
    assert cold.path == build.index_path  # served from the store while the copy is fetched
    chunks = cold.catalog().table["chunk_id"].to_pylist()
    first_text = cold.contents([0])
    build_cache().wait(60)
    forget_active()
    warm = active_index("skyline")
    local = Path(settings.DOCSMCP_INDEX_CACHE_DIR)
    assert Path(warm.path).is_relative_to(local) and Path(warm.path).name == build.build_id
    assert warm.build_id == build.build_id
    assert warm.contents([0]) == first_text
    assert warm.catalog().table["chunk_id"].to_pylist() == chunks
    assert warm.mapped and not cold.mapped  # the local copy's mapped files; the store's files are read
    listed = read_contents(build.index_path)
    assert {p: (Path(warm.path) / p).stat().st_size for p in listed} == listed
    assert (Path(warm.path) / "metadata.json").is_file()


def test_a_local_root_is_opened_in_place(index_root, copy_sample_docs, settings):
    build = build_corpus("skyline", copy_sample_docs)
    assert str(active_index("skyline").path) == build.index_path
    assert not Path(settings.DOCSMCP_INDEX_CACHE_DIR).joinpath("skyline").exists()


def test_a_copy_that_does_not_match_contents_json_is_never_used(s3_index_root, copy_sample_docs, tmp_path):
    build = build_corpus("skyline", copy_sample_docs)
    listed = read_contents(build.index_path)
    first = sorted(listed)[0]
    listed[first] += 1
    storage.write_bytes(storage.join(build.index_path, CONTENTS_FILE), json.dumps({"files": listed}).encode())
    cache = BuildCache(tmp_path / "cache")
    with pytest.raises(CopyIncomplete, match="listed"):
        cache.fetch(build.index_path)
    assert cache.resolve(build.index_path, fetch=False) == build.index_path
    assert [p.name for p in cache.local_path(build.index_path).parent.iterdir() if not p.name.endswith(".lock")] == []


def test_copies_of_builds_no_longer_served_are_evicted(s3_index_root, copy_sample_docs, tmp_path):
    first = build_corpus("skyline", copy_sample_docs)
    (copy_sample_docs / "guides" / "new.md").write_text("# New\n\n## Section\n\nfresh text\n")
    second = build_corpus("skyline", copy_sample_docs)
    cache = BuildCache(tmp_path / "cache", evict_after=3600)
    cache.fetch(first.index_path)
    cache.fetch(second.index_path)
    assert cache.local_path(first.index_path).is_dir()  # another process may still serve it
    cache.evict_after = 0
    cache.fetch(second.index_path)
    assert not cache.local_path(first.index_path).exists()
    assert cache.resolve(second.index_path) == cache.local_path(second.index_path)


def test_rollback_is_served_from_the_object_store_then_from_a_fresh_copy(s3_index_root, copy_sample_docs):
    first = build_corpus("skyline", copy_sample_docs)
    (copy_sample_docs / "guides" / "new.md").write_text("# New\n\n## Section\n\nfresh text\n")
    second = build_corpus("skyline", copy_sample_docs)
    assert active_index("skyline").build_id == second.build_id
    build_activate(build=first)
    assert active_index("skyline").build_id == first.build_id
    build_cache().wait(60)
    forget_active()
    index = active_index("skyline")
    assert index.build_id == first.build_id and not storage.is_remote(index.path)
    assert "guides/new.md" not in index.metadata.files


def test_objects_of_a_killed_build_are_never_activatable_and_retention_removes_them(
        any_index_root, copy_sample_docs, settings):
    good = build_corpus("skyline", copy_sample_docs)
    corpus = Corpus.objects.get(name="skyline")
    builds_dir = storage.join(any_index_root, "skyline", "builds")
    # A worker killed while writing: its row stays running, its tables are there, metadata.json is not.
    killed = BuildRun.objects.create(corpus=corpus, build_id="killed-build", kind=BuildRun.KIND_FULL,
                                     status=BuildRun.RUNNING, embedding_provider="hash",
                                     heartbeat_at=timezone.now() - timedelta(hours=1))
    written = storage.join(builds_dir, "killed-build" if storage.is_remote(builds_dir) else "killed-build.partial")
    storage.copy_tree(storage.join(good.index_path, "lancedb"), storage.join(written, "lancedb"))
    # Objects no build row owns at all (a build whose row was deleted, a crash before it was recorded).
    storage.write_bytes(storage.join(builds_dir, "nobody", "lancedb", "chunks.lance", "data.lance"), b"x")
    assert builds_prune(corpus=corpus) == ["nobody"]  # a running build keeps its files
    forged = BuildRun.objects.create(corpus=corpus, build_id="forged", kind=BuildRun.KIND_FULL,
                                     status=BuildRun.COMPLETE, index_path=str(written), embedding_provider="hash")
    with pytest.raises(BuildStateConflict, match="only complete builds can be activated"):
        build_activate(build=forged)
    forged.delete()
    assert expire_builds(corpus) == 1
    killed.refresh_from_db()
    assert killed.status == BuildRun.FAILED
    removed = builds_prune(corpus=corpus)
    assert removed == [storage.name_of(written)]
    assert storage.list_children(builds_dir) == [good.build_id]
    assert Corpus.objects.get(name="skyline").active_build_id == good.pk


def test_storage_options_come_from_the_environment_the_settings_read(monkeypatch):
    monkeypatch.setattr(uri, "_configured", {})
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("DOCSMCP_STORAGE_OPTIONS", '{"region": "us-east-1", "allow_http": true}')
    assert storage.storage_options() == {}  # the engine reads no environment itself
    storage.configure(os.environ)  # what corpus.apps does with the settings' DOCSMCP_STORAGE_ENVIRONMENT
    assert storage.storage_options() == {"endpoint": "http://127.0.0.1:9", "region": "us-east-1",
                                         "allow_http": "true"}
    storage.configure({"DOCSMCP_STORAGE_OPTIONS": "{endpoint: nope}"})
    with pytest.raises(IndexUnavailable, match="DOCSMCP_STORAGE_OPTIONS is not valid JSON"):
        storage.storage_options()


def test_an_s3_index_root_setting_keeps_its_uri(monkeypatch):
    assert str(storage.join("s3://bucket/prefix/", "corpus", "builds")) == "s3://bucket/prefix/corpus/builds"
    assert storage.as_location("s3://bucket/prefix/") == "s3://bucket/prefix"


def test_registering_a_corpus_never_needs_the_object_store(s3_index_root, copy_sample_docs):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    assert storage.list_children(storage.join(s3_index_root, corpus.name)) == []


def test_registering_a_local_directory_warns_when_workers_may_be_on_other_hosts(
        transactional_db, copy_sample_docs, settings, client, django_user_model):
    from corpus.reach import source_warnings

    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    settings.CELERY_BROKER_URL = "filesystem://"
    assert source_warnings(corpus) == []
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = "redis://10.0.0.5:6379/0", False
    [warning] = source_warnings(corpus)
    assert str(copy_sample_docs) in warning and "cannot read it" in warning and "git repository" in warning
    settings.CELERY_TASK_ALWAYS_EAGER = True
    assert source_warnings(corpus) == []


@pytest.mark.parametrize("broker", ["redis://127.0.0.1:6380/0", "redis://localhost:6380/0", "redis://[::1]:6380/0",
                                    "redis+socket:///run/redis/redis.sock"])
def test_a_broker_only_this_host_reaches_has_its_workers_here_so_no_warning(copy_sample_docs, settings, broker):
    """The single-host topology of docs/deploy.md: Redis on loopback, the worker beside the web server."""
    from corpus.reach import source_warnings

    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = broker, False
    assert source_warnings(corpus) == []


def test_a_source_under_a_declared_shared_root_is_not_warned_about(copy_sample_docs, settings):
    from corpus.reach import source_warnings

    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = "redis://10.0.0.5:6379/0", False
    settings.DOCSMCP_SHARED_SOURCE_ROOTS = [str(copy_sample_docs.parent / "elsewhere")]
    assert len(source_warnings(corpus)) == 1
    settings.DOCSMCP_SHARED_SOURCE_ROOTS = [str(copy_sample_docs.parent)]
    assert source_warnings(corpus) == []


def test_a_warm_host_keeps_serving_while_the_object_store_is_unreachable(s3_index_root, copy_sample_docs,
                                                                           monkeypatch):
    from corpus.serving import STATE
    from tests import s3_server

    build = build_corpus("skyline", copy_sample_docs)
    active_index("skyline")
    build_cache().wait(60)
    dead = s3_server.options(f"http://127.0.0.1:{s3_server.free_port()}")  # nothing listens there
    monkeypatch.setattr(uri, "_configured", {"DOCSMCP_STORAGE_OPTIONS": json.dumps(dead)})
    STATE.forget(process=True)  # as a process that starts after the store went down
    index = active_index("skyline")
    assert index.build_id == build.build_id and not storage.is_remote(index.path)
    assert index.contents([0])[0]


def test_a_root_in_a_bucket_that_does_not_exist_fails_the_build_before_chunking_in_one_line(
        s3_index_root, copy_sample_docs, settings, caplog):
    from tests.cli_helpers import build_cmd

    settings.DOCSMCP_INDEX_ROOT = "s3://no-such-bucket/indexes"
    stages = []
    import corpus.execution

    real = corpus.execution._ProgressWriter.__call__
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corpus.execution._ProgressWriter, "__call__",
                      lambda self, stage, done, total: (stages.append(stage), real(self, stage, done, total))[1])
        code, _out, err = build_cmd("--corpus", "nobucket", "--source", str(copy_sample_docs),
                                    "--embedding-provider", "hash")
    assert code == 1
    assert "the bucket 'no-such-bucket' does not exist" in err and "create it first" in err
    assert "Traceback" not in err and "Traceback" not in caplog.text
    assert stages == []
    failed = Corpus.objects.get(name="nobucket").builds.first()
    assert failed.status == BuildRun.FAILED and failed.error.startswith("the bucket 'no-such-bucket'")
