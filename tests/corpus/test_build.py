"""Building a corpus into an active index: registration, metadata, tables, incremental reuse,
activation and rollback, pruning, one build at a time, and what failure leaves behind."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import lancedb
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.errors import BuildInProgress, BuildStateConflict
from corpus.execution import build_activate, build_execute, builds_prune
from corpus.models import BuildRun, Corpus, TaxonomyKey
from corpus.services import build_cancel, build_request, build_start, corpus_create
from corpus.serving import active_index, forget_active, query_embedder
from retrieval import storage
from retrieval.embeddings import EmbeddingSpec, check_compatible, get_provider
from retrieval.errors import EmbeddingMismatch
from retrieval.format.metadata import read_metadata
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.validate import process_corpus
from tests.cli_helpers import build_cmd, build_corpus

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DOCS = ROOT / "corpus" / "sample_docs"
CHUNK_COLUMNS = [
    "chunk_id", "filepath", "title", "heading", "heading_level", "breadcrumb", "content", "ident",
    "chunk_index", "total_chunks", "start_line", "end_line", "file_key", "link_share", "keywords", "m_language",
    "m_scope",
    "vector",
]
DOCUMENT_COLUMNS = ["filepath", "title", "content", "size", "chunk_count", "outline", "file_key", "findings", "metadata",
                    "links"]


@pytest.fixture(autouse=True)
def _fresh_pointers():
    forget_active()
    yield
    forget_active()



def chunk_rows(build: BuildRun) -> list[dict]:
    table = storage.connect(storage.join(build.index_path, "lancedb")).open_table("chunks")
    return table.to_arrow().to_pylist()


def builds_on_storage(root, corpus: str) -> list[str]:
    """Build directories (prefixes) under a local or object-store root."""
    return storage.list_children(storage.join(root, corpus, "builds"))


def expected_chunk_count(source: Path) -> int:
    return sum(len(r.chunks) for r in process_corpus(scan_corpus(source), workers=1))


def test_build_index_registers_the_corpus_and_activates_its_first_build(any_index_root, copy_sample_docs):
    code, out, err = build_cmd("--corpus", "skyline", "--source", str(copy_sample_docs),
                               "--embedding-provider", "hash")
    assert code == 0, err
    corpus = Corpus.objects.get(name="skyline")
    build = corpus.active_build
    assert corpus.source_dir == str(copy_sample_docs)
    assert build.status == BuildRun.COMPLETE
    assert build.embedding_provider == "hash"
    assert str(build.index_path) == str(storage.join(any_index_root, "skyline", "builds", build.build_id))
    assert f"corpus skyline: build {build.build_id} active" in out
    assert f"{build.stats['total_chunks']} chunks" in out
    assert corpus.description.startswith("Skyline Payments API documentation")
    assert {t.key: t.values for t in TaxonomyKey.objects.filter(corpus=corpus)} == {
        "language": ["go", "python", "typescript"], "scope": ["global-guide", "sdk-specific"]}
    assert active_index("skyline").build_id == build.build_id


def test_metadata_json_describes_the_corpus_taxonomy_stats_embedding_and_files(index_root, copy_sample_docs):
    build = build_corpus("skyline", copy_sample_docs)
    raw = json.loads((Path(build.index_path) / "metadata.json").read_text())
    assert raw["build_id"] == build.build_id
    assert raw["corpus"] == "skyline"
    assert raw["corpus_description"] == ("Skyline Payments API documentation: guides and the Python, "
                                         "TypeScript and Go SDKs")
    assert raw["instructions"].startswith("Use search_docs")
    assert raw["taxonomy"] == {
        "language": {"description": "Filter results by SDK programming language.",
                     "values": ["go", "python", "typescript"], "vector_collapse": True},
        "scope": {"description": "Filter by documentation scope: global guides or SDK-specific pages.",
                  "values": ["global-guide", "sdk-specific"], "vector_collapse": False},
    }
    assert raw["auto_include"] == [{"when": "language", "unless": "scope", "include": {"scope": "global-guide"}}]
    total = expected_chunk_count(copy_sample_docs)
    stats = raw["stats"]
    assert (stats["total_files"], stats["total_chunks"]) == (42, total)
    assert (stats["chunked_files"], stats["reused_files"], stats["embedded_chunks"]) == (42, 0, total)
    assert stats["warnings"] == 0
    assert raw["embedding"] == {"provider": "hash", "model": "feature-hash-v1", "dimensions": 256}
    assert len(raw["files"]) == 42
    assert raw["files"]["guides/authentication.md"] == "Authentication"
    assert raw["files"]["guides/currencies.md"] == "Amounts and currencies"
    assert build.embedding == raw["embedding"]


def test_build_writes_chunk_and_document_tables_with_their_columns_and_indexes(index_root, copy_sample_docs):
    build = build_corpus("skyline", copy_sample_docs)
    db = lancedb.connect(Path(build.index_path) / "lancedb")
    chunks, documents = db.open_table("chunks"), db.open_table("documents")
    assert chunks.schema.names == CHUNK_COLUMNS
    assert documents.schema.names == DOCUMENT_COLUMNS
    assert chunks.count_rows() == expected_chunk_count(copy_sample_docs) == build.stats["total_chunks"]
    assert documents.count_rows() == 42
    indexed = {tuple(i.columns): i.index_type for i in chunks.list_indices()}
    assert indexed == {("heading",): "FTS", ("title",): "FTS", ("content",): "FTS", ("ident",): "FTS",
                       ("keywords",): "FTS", ("chunk_id",): "BTree",
                       ("filepath",): "BTree", ("m_language",): "Bitmap", ("m_scope",): "Bitmap"}
    rows = {r["chunk_id"]: r for r in chunks.to_arrow().to_pylist()}
    payments = rows["sdks/python/payments.md#payments/create-a-payment"]
    assert (payments["m_language"], payments["m_scope"]) == ("python", "sdk-specific")
    assert payments["content"].startswith("## Create a payment")  # stored text is unprefixed
    assert rows["guides/errors.md#errors/error-types"]["m_language"] is None
    assert len(payments["vector"]) == 256
    assert payments["link_share"] == 0.0


def test_incremental_rebuild_rechunks_only_the_changed_file_and_embeds_only_its_changed_chunk(
        any_index_root, copy_sample_docs):
    first = build_corpus("skyline", copy_sample_docs)
    retries = copy_sample_docs / "guides" / "retries.md"
    retries.write_text(retries.read_text() + "\nRetry budgets cap the total retries per minute.\n")
    second = build_corpus("skyline", copy_sample_docs)
    assert second.pk != first.pk
    assert Corpus.objects.get(name="skyline").active_build_id == second.pk
    assert (second.stats["chunked_files"], second.stats["reused_files"]) == (1, 41)
    assert second.stats["embedded_chunks"] == 1
    old = {r["chunk_id"]: r for r in chunk_rows(first)}
    new = {r["chunk_id"]: r for r in chunk_rows(second)}
    assert set(old) == set(new)
    changed = [cid for cid in new if new[cid]["content"] != old[cid]["content"]]
    assert len(changed) == 1 and changed[0].startswith("guides/retries.md#")
    assert "Retry budgets" in new[changed[0]]["content"]
    unchanged = "sdks/go/payments.md#payments/create-a-payment"
    np.testing.assert_array_equal(np.array(new[unchanged]["vector"]), np.array(old[unchanged]["vector"]))


def test_full_rebuild_rechunks_and_reembeds_everything(any_index_root, copy_sample_docs):
    build_corpus("skyline", copy_sample_docs)
    full = build_corpus("skyline", copy_sample_docs, "--full")
    assert full.kind == BuildRun.KIND_FULL
    assert (full.stats["chunked_files"], full.stats["reused_files"]) == (42, 0)
    assert full.stats["embedded_chunks"] == full.stats["total_chunks"]


def test_strict_build_keeps_previous_index_active_when_validation_fails(any_index_root, copy_sample_docs):
    good = build_corpus("skyline", copy_sample_docs)
    webhooks = copy_sample_docs / "guides" / "webhooks.md"
    webhooks.write_text(webhooks.read_text().replace('{"chunk_by": "h3"}', "{chunk_by: h3}"))
    code, _out, err = build_cmd("--corpus", "skyline", "--embedding-provider", "hash", "--strict")
    assert code == 1
    assert "guides/webhooks.md:46: error: malformed mcp_chunking_hint" in err
    assert "the previously active index (if any) keeps serving" in err
    corpus = Corpus.objects.get(name="skyline")
    assert corpus.active_build_id == good.pk
    failed = corpus.builds.first()
    assert failed.status == BuildRun.FAILED
    assert failed.error.startswith("validation found 1 error(s)")
    assert [(f["code"], f["file"], f["line"]) for f in failed.findings if f["severity"] == "error"] == [
        ("hint-malformed", "guides/webhooks.md", 46)]
    assert failed.index_path == ""
    assert builds_on_storage(any_index_root, "skyline") == [good.build_id]
    assert active_index("skyline").build_id == good.build_id


@pytest.mark.parametrize(("kind", "stage", "after"), [
    (BuildRun.KIND_INCREMENTAL, "write", 1),  # patching a copy of the previous tables
    (BuildRun.KIND_FULL, "index", 2),  # new tables, part of their indexes created
])
def test_interrupted_build_leaves_no_partial_directory_and_keeps_previous_build_active(
        any_index_root, copy_sample_docs, kind, stage, after):
    good = build_corpus("skyline", copy_sample_docs)
    (copy_sample_docs / "guides" / "new.md").write_text("# New\n\n## Section\n\nfresh text\n")
    corpus = Corpus.objects.get(name="skyline")
    build = build_request(corpus=corpus, kind=kind, embedding_provider="hash")

    def interrupt(reported: str, done: int, total: int) -> None:
        if reported == stage and done >= after:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_execute(build=build, echo=interrupt)
    build.refresh_from_db()
    assert build.status == BuildRun.FAILED
    assert "KeyboardInterrupt" in build.error
    assert build.finished_at is not None
    assert builds_on_storage(any_index_root, "skyline") == [good.build_id]
    corpus.refresh_from_db()
    assert corpus.active_build_id == good.pk
    assert build_request(corpus=corpus, embedding_provider="hash").status == BuildRun.QUEUED  # not left blocking


def test_cancelled_build_stops_and_keeps_previous_build_active(any_index_root, copy_sample_docs):
    good = build_corpus("skyline", copy_sample_docs)
    corpus = Corpus.objects.get(name="skyline")
    build = build_request(corpus=corpus, kind=BuildRun.KIND_FULL, embedding_provider="hash")

    def cancel_during_embedding(stage: str, done: int, total: int) -> None:
        if stage == "embed":
            build_cancel(build=BuildRun.objects.get(pk=build.pk))

    result = build_execute(build=build, echo=cancel_during_embedding)
    assert result.status == BuildRun.CANCELLED
    assert "cancelled" in result.error
    assert builds_on_storage(any_index_root, "skyline") == [good.build_id]
    corpus.refresh_from_db()
    assert corpus.active_build_id == good.pk


def test_cancelling_a_queued_build_releases_the_corpus(index_root, copy_sample_docs):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    queued = build_request(corpus=corpus, embedding_provider="hash")
    assert build_cancel(build=queued).status == BuildRun.CANCELLED
    assert build_request(corpus=corpus, embedding_provider="hash").status == BuildRun.QUEUED


def test_a_build_cancelled_while_queued_does_not_run_when_its_task_arrives_late(index_root, copy_sample_docs):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    queued = build_request(corpus=corpus, embedding_provider="hash")
    build_cancel(build=queued)
    late = build_execute(build=BuildRun.objects.get(pk=queued.pk))  # what the worker does with the message
    assert late.status == BuildRun.CANCELLED
    assert late.started_at is None
    assert Corpus.objects.get(name="skyline").active_build_id is None
    assert not (index_root / "skyline" / "builds").exists()


def test_a_build_task_delivered_twice_runs_once(index_root, copy_sample_docs):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    build = build_request(corpus=corpus, embedding_provider="hash")
    first = build_execute(build=BuildRun.objects.get(pk=build.pk))
    again = build_execute(build=BuildRun.objects.get(pk=build.pk))
    assert first.status == again.status == BuildRun.COMPLETE
    assert again.finished_at == first.finished_at


def test_second_build_request_while_one_is_in_flight_is_refused_clearly(index_root, copy_sample_docs):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    queued = build_request(corpus=corpus, embedding_provider="hash")
    with pytest.raises(BuildInProgress) as refused:
        build_request(corpus=corpus, embedding_provider="hash")
    assert str(refused.value) == (f"corpus 'skyline' already has a build in progress ({queued.build_id}); "
                                  "wait for it to finish or cancel it")
    BuildRun.objects.filter(pk=queued.pk).update(status=BuildRun.RUNNING)
    with pytest.raises(BuildInProgress):
        build_start(corpus=corpus, embedding_provider="hash")
    with pytest.raises(CommandError, match="already has a build in progress"):
        call_command("build_index", "--corpus", "skyline", "--no-progress")


def test_a_build_whose_worker_stopped_reporting_no_longer_blocks_the_corpus(index_root, copy_sample_docs):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    stuck = build_request(corpus=corpus, embedding_provider="hash")
    from django.utils import timezone

    BuildRun.objects.filter(pk=stuck.pk).update(status=BuildRun.RUNNING,
                                                heartbeat_at=timezone.now() - timedelta(hours=1))
    fresh = build_request(corpus=corpus, embedding_provider="hash")
    stuck.refresh_from_db()
    assert stuck.status == BuildRun.FAILED and "its worker stopped" in stuck.error
    assert fresh.status == BuildRun.QUEUED


def test_build_start_runs_the_celery_task_inline_when_no_broker_is_configured(
        index_root, copy_sample_docs, django_capture_on_commit_callbacks):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    with django_capture_on_commit_callbacks(execute=True):
        build = build_start(corpus=corpus, embedding_provider="hash")
    build.refresh_from_db()
    corpus.refresh_from_db()
    assert build.status == BuildRun.COMPLETE
    assert corpus.active_build_id == build.pk
    assert build.stage == "mapped"
    assert build.progress_done == build.progress_total > 0


def test_build_activate_rolls_back_to_an_earlier_build(any_index_root, copy_sample_docs):
    first = build_corpus("skyline", copy_sample_docs)
    (copy_sample_docs / "guides" / "new.md").write_text("# New\n\n## Section\n\nfresh text\n")
    second = build_corpus("skyline", copy_sample_docs)
    assert active_index("skyline").build_id == second.build_id
    build_activate(build=first)
    assert Corpus.objects.get(name="skyline").active_build_id == first.pk
    index = active_index("skyline")
    assert index.build_id == first.build_id
    assert "guides/new.md" not in index.metadata.files


def test_only_complete_builds_with_an_index_can_be_activated(any_index_root, copy_sample_docs):
    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    queued = build_request(corpus=corpus, embedding_provider="hash")
    with pytest.raises(BuildStateConflict, match="only complete builds can be activated"):
        build_activate(build=queued)


def test_builds_prune_keeps_the_last_n_and_never_the_active_one(any_index_root, copy_sample_docs):
    builds = []
    for n in range(3):
        (copy_sample_docs / "guides" / f"extra-{n}.md").write_text(f"# Extra {n}\n\n## Body\n\ntext {n}\n")
        builds.append(build_corpus("skyline", copy_sample_docs))
    first, second, third = builds
    build_activate(build=first)
    removed = builds_prune(corpus=Corpus.objects.get(name="skyline"), keep=1)
    assert removed == [second.build_id]
    for build in builds:
        build.refresh_from_db()
    assert second.index_path == ""
    assert builds_on_storage(any_index_root, "skyline") == sorted([first.build_id, third.build_id])
    with pytest.raises(BuildStateConflict):
        build_activate(build=second)


def test_each_build_prunes_to_docsmcp_keep_builds(any_index_root, copy_sample_docs, settings):
    settings.DOCSMCP_KEEP_BUILDS = 2
    builds = []
    for n in range(3):
        (copy_sample_docs / f"extra-{n}.md").write_text(f"# Extra {n}\n\n## Body\n\ntext {n}\n")
        builds.append(build_corpus("skyline", copy_sample_docs))
    on_disk = builds_on_storage(any_index_root, "skyline")
    assert on_disk == sorted(b.build_id for b in builds[1:])


def test_chunks_command_lists_what_the_active_build_holds_for_a_file(index_root, copy_sample_docs):
    build_corpus("skyline", copy_sample_docs)
    expected = next(r for r in process_corpus(scan_corpus(copy_sample_docs), workers=1)
                    if r.relpath == "guides/retries.md").chunks
    out = io.StringIO()
    call_command("chunks", "--corpus", "skyline", "--file", "guides/retries.md", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[:-1] == [f"{c.chunk_id}\t{c.heading}\tL{c.start_line}-{c.end_line}\t{len(c.content)} chars"
                          for c in expected]
    assert lines[-1].startswith(f"{len(expected)} chunks in build ")

    out = io.StringIO()
    call_command("chunks", "--corpus", "skyline", "--file", "guides/retries.md", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["build_id"] == Corpus.objects.get(name="skyline").active_build.build_id
    assert report["chunks"] == [{"chunk_id": c.chunk_id, "heading": c.heading, "lines": [c.start_line, c.end_line],
                                 "size": len(c.content)} for c in expected]


def test_chunks_command_refuses_an_unknown_file_and_a_corpus_without_a_build(index_root, copy_sample_docs):
    build_corpus("skyline", copy_sample_docs)
    with pytest.raises(CommandError, match="no chunks for file 'guides/nope.md'"):
        call_command("chunks", "--corpus", "skyline", "--file", "guides/nope.md")
    corpus_create(name="empty", source_dir=str(copy_sample_docs))
    with pytest.raises(CommandError, match="has no active build yet"):
        call_command("chunks", "--corpus", "empty")


def test_build_index_run_by_the_operator_registers_a_source_outside_the_allowed_roots(
        index_root, copy_sample_docs, settings, tmp_path):
    settings.DOCSMCP_SOURCE_ROOTS = [str(tmp_path / "allowed")]
    call_command("build_index", "--corpus", "skyline", "--source", str(copy_sample_docs),
                 "--embedding-provider", "hash", "--no-progress", stdout=io.StringIO())
    corpus = Corpus.objects.get(name="skyline")
    assert corpus.source_dir == str(copy_sample_docs.resolve()) and corpus.active_build is not None


def test_build_index_refuses_an_unknown_embedding_provider(index_root, copy_sample_docs):
    with pytest.raises(CommandError, match="unknown embedding provider 'nope'; choose one of hash, local, none, openai"):
        call_command("build_index", "--corpus", "skyline", "--source", str(copy_sample_docs),
                     "--embedding-provider", "nope", "--no-progress")


# --- embedding compatibility ---------------------------------------------------------------

def test_an_index_is_queried_with_the_provider_options_it_was_built_with(index_root, copy_sample_docs):
    corpus_create(name="small-vectors", source_dir=str(copy_sample_docs),
                  corpus_settings={"embedding_provider": "hash", "embedding_options": {"dimensions": 64}})
    code, _out, err = build_cmd("--corpus", "small-vectors")
    assert code == 0, err
    embedder = query_embedder(active_index("small-vectors"))
    assert embedder.spec == EmbeddingSpec("hash", "feature-hash-v1", 64)


def test_querying_an_index_with_another_embedding_space_is_refused(index_root, copy_sample_docs):
    corpus_create(name="drifted", source_dir=str(copy_sample_docs),
                  corpus_settings={"embedding_provider": "hash", "embedding_options": {"dimensions": 48}})
    assert build_cmd("--corpus", "drifted")[0] == 0
    Corpus.objects.filter(name="drifted").update(
        settings={"embedding_provider": "hash", "embedding_options": {"dimensions": 32}})
    with pytest.raises(EmbeddingMismatch, match=r"built with hash/feature-hash-v1 \(48 dims\); this server is "
                                                r"configured for hash/feature-hash-v1 \(32 dims\)"):
        query_embedder(active_index("drifted"))


def test_check_compatible_refuses_other_providers_and_fts_only_indexes(index_root, copy_sample_docs):
    build = build_corpus("skyline", copy_sample_docs)
    spec = EmbeddingSpec.from_dict(read_metadata(Path(build.index_path)).embedding)
    check_compatible(spec, get_provider("hash"))
    with pytest.raises(EmbeddingMismatch, match="rebuild the index or configure the same provider"):
        check_compatible(spec, get_provider("hash", dimensions=128))
    with pytest.raises(EmbeddingMismatch):
        check_compatible(spec, get_provider("none"))
    with pytest.raises(EmbeddingMismatch, match="built without embeddings"):
        check_compatible(None, get_provider("hash"))
    check_compatible(None, get_provider("none"))


def test_fts_only_build_has_no_vector_column_and_needs_no_query_embedder(index_root, copy_sample_docs):
    code, _out, err = build_cmd("--corpus", "plain", "--source", str(copy_sample_docs), "--embedding-provider", "none")
    assert code == 0, err
    build = Corpus.objects.get(name="plain").active_build
    assert build.embedding is None
    index = active_index("plain")
    assert "vector" not in index.chunks.schema.names
    assert query_embedder(index) is None
