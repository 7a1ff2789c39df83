"""Incremental builds at the retrieval level: a patched copy of the previous tables must answer
exactly as a full rebuild of the same sources would, and must never touch the previous build."""

from __future__ import annotations

import json
from pathlib import Path

import lancedb
import pytest

from retrieval import storage
from retrieval.embeddings import get_provider
from retrieval.format.metadata import read_metadata
from retrieval.ingest import indexes, tables
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.search.engine import SearchRequest, search
from retrieval.search.index import Index

SECRET = b"test-secret"
PAYMENTS = "sdks/python/payments.md"


def build(source: Path, out: Path, previous: Path | None = None, **kwargs):
    return build_index(BuildRequest(source, out, out.name, "skyline", provider=get_provider("hash"),
                                    previous_dir=previous, workers=1, **kwargs))


def rows(build_dir: Path, table: str = "chunks") -> dict[str, dict]:
    data = lancedb.connect(build_dir / "lancedb").open_table(table).to_arrow()
    key = "chunk_id" if table == "chunks" else "filepath"
    return {r[key]: {k: v for k, v in r.items() if k != "vector"} | {"vector": r.get("vector")} for r in data.to_pylist()}


def hits(build_dir: Path, query: str, **filters: str) -> list[str]:
    index = Index(build_dir)
    request = SearchRequest(query, filters=filters, limit=10, legs=("text", "ident", "phrase"))
    result = search(index, request, cursor_secret=SECRET)
    return [h.chunk_id for h in result.hits]


@pytest.fixture
def first(copy_sample_docs, tmp_path) -> Path:
    return build(copy_sample_docs, tmp_path / "b1").path


def test_patched_build_equals_a_full_rebuild_of_the_same_sources(copy_sample_docs, first, tmp_path):
    payments = copy_sample_docs / PAYMENTS
    payments.write_text(payments.read_text() + "\n## Capture later\n\nHold the zephyrcapture funds first.\n")
    (copy_sample_docs / "guides" / "payouts.md").unlink()
    (copy_sample_docs / "guides" / "fx.md").write_text("# FX\n\n## Rates\n\nQuotes refresh hourly.\n")
    before = rows(first)

    patched = build(copy_sample_docs, tmp_path / "b2", previous=first)
    full = build(copy_sample_docs, tmp_path / "b3")

    assert patched.stats["patched"] is True and full.stats["patched"] is False
    assert (patched.stats["chunked_files"], patched.stats["reused_files"]) == (2, 40)
    assert patched.metadata.taxonomy == full.metadata.taxonomy
    assert patched.metadata.files == full.metadata.files
    assert patched.stats["total_chunks"] == full.stats["total_chunks"]
    for table in ("chunks", "documents"):
        got, want = rows(patched.path, table), rows(full.path, table)
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == want[key], key
    assert not any(cid.startswith("guides/payouts.md#") for cid in rows(patched.path))
    linked = [f for f in (patched.path / "lancedb").rglob("*") if f.is_file() and f.stat().st_nlink > 1]
    assert any(f.suffix == ".lance" for f in linked)  # unchanged data and index files are shared, not copied
    assert rows(first) == before  # ... and the previous build is untouched
    assert hits(patched.path, "zephyrcapture") == [f"{PAYMENTS}#payments/capture-later"]
    assert hits(first, "zephyrcapture") == []
    assert hits(patched.path, "create a payment", language="python")[0] == f"{PAYMENTS}#payments/create-a-payment"


def test_incremental_build_keeps_the_taxonomy_of_files_it_did_not_parse(copy_sample_docs, first, tmp_path):
    retries = copy_sample_docs / "guides" / "retries.md"  # a global guide: no `language` of its own
    retries.write_text(retries.read_text() + "\nRetry budgets cap the total retries per minute.\n")
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert second.stats["chunked_files"] == 1
    assert second.metadata.taxonomy == read_metadata(first).taxonomy
    assert set(second.metadata.taxonomy["language"].values) == {"go", "python", "typescript"}
    go = hits(second.path, "create a payment", language="go", scope="sdk-specific")
    assert go and all(cid.startswith("sdks/go/") for cid in go)


def test_a_new_taxonomy_key_from_front_matter_is_added_to_a_patched_build(copy_sample_docs, first, tmp_path):
    (copy_sample_docs / "guides" / "beta.md").write_text(
        "---\nmcp_metadata:\n  stability: beta\n---\n# Beta\n\n## Preview features\n\nEarly access to quasarflow.\n")
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert second.stats["patched"] is True
    assert second.metadata.taxonomy["stability"].values == ("beta",)
    assert hits(second.path, "quasarflow", stability="beta") == ["guides/beta.md#beta/preview-features"]
    assert rows(second.path)[f"{PAYMENTS}#payments/create-a-payment"]["m_stability"] is None


def test_many_changed_files_rewrite_the_tables_reusing_unchanged_rows(copy_sample_docs, first, tmp_path):
    changed = sorted(copy_sample_docs.rglob("*.md"))[:20]
    for path in changed:
        path.write_text(path.read_text() + "\nA trailing note.\n")
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    full = build(copy_sample_docs, tmp_path / "b3")
    assert second.stats["patched"] is False
    assert (second.stats["chunked_files"], second.stats["reused_files"]) == (20, 22)
    assert rows(second.path) == rows(full.path)
    assert rows(second.path, "documents") == rows(full.path, "documents")


def test_patched_rows_are_indexed_as_new_segments_merged_once_there_are_many(copy_sample_docs, first, tmp_path,
                                                                                monkeypatch):
    monkeypatch.setattr(indexes, "MAX_INDEX_SEGMENTS", 3)
    previous, segments = first, []
    for n, language in enumerate(("python", "go", "typescript")):
        payments = copy_sample_docs / "sdks" / language / "payments.md"  # a segment whose rows all go is dropped
        payments.write_text(payments.read_text() + f"\nEdit number {n}: vortexmark{n}.\n")
        result = build(copy_sample_docs, tmp_path / f"b{n + 2}", previous=previous)
        assert result.stats["patched"] is True
        table = lancedb.connect(result.path / "lancedb").open_table("chunks")
        stats = [table.index_stats(i.name) for i in table.list_indices()]
        assert {s.num_unindexed_rows for s in stats} == {0}  # no full-text query falls back to a flat scan
        segments.append({s.num_indices for s in stats})
        assert hits(result.path, f"vortexmark{n}") == [f"sdks/{language}/payments.md#payments/refund-a-payment"]
        previous = result.path
    assert segments == [{2}, {3}, {1}]


def test_a_previous_build_with_another_table_schema_is_not_reused(copy_sample_docs, first, tmp_path):
    documents = lancedb.connect(first / "lancedb").open_table("documents")
    documents.drop_columns(["metadata"])  # as written before per-file metadata was stored
    (first / "files.json").unlink()  # and before builds kept their per-file records beside the tables
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert (second.stats["chunked_files"], second.stats["reused_files"]) == (42, 0)
    assert json.loads((second.path / "metadata.json").read_text())["taxonomy"].keys() == {"language", "scope"}


def test_a_patched_build_copies_files_it_cannot_hard_link(copy_sample_docs, first, tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(tables.os, "link", refuse)
    payments = copy_sample_docs / PAYMENTS
    payments.write_text(payments.read_text() + "\nCopied rather than linked: nebulacopy.\n")
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert second.stats["patched"] is True
    assert hits(second.path, "nebulacopy") == [f"{PAYMENTS}#payments/refund-a-payment"]
    data = next((second.path / "lancedb" / "chunks.lance" / "data").iterdir())
    assert data.stat().st_nlink == 1


def test_a_previous_build_whose_records_name_another_schema_is_not_reused(copy_sample_docs, first, tmp_path):
    records = json.loads((first / "files.json").read_text())
    (first / "files.json").write_text(json.dumps({**records, "schema": "written-by-another-version"}))
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert (second.stats["chunked_files"], second.stats["reused_files"]) == (42, 0)


def test_an_unchanged_corpus_builds_without_opening_a_table_and_answers_the_same(copy_sample_docs, first, tmp_path,
                                                                                monkeypatch):
    def no_lancedb(*args, **kwargs):
        raise AssertionError("an unchanged corpus opened a LanceDB table")

    monkeypatch.setattr(storage, "connect", no_lancedb)
    second = build(copy_sample_docs, tmp_path / "b2", previous=first)
    assert (second.stats["reused_files"], second.stats["chunked_files"], second.stats["embedded_chunks"]) == (42, 0, 0)
    assert second.stats["total_chunks"] == read_metadata(first).stats["total_chunks"]
    monkeypatch.undo()
    assert rows(second.path) == rows(first)
    assert hits(second.path, "refund a payment") == hits(first, "refund a payment")
    (copy_sample_docs / "guides" / "fx.md").write_text("# FX\n\n## Rates\n\nQuotes refresh zanzibar hourly.\n")
    third = build(copy_sample_docs, tmp_path / "b3", previous=second.path)  # and the next build patches it
    assert third.stats["patched"] is True and hits(third.path, "zanzibar") == ["guides/fx.md#fx/rates"]


def test_a_source_diff_decides_which_files_are_read_again(copy_sample_docs, first, tmp_path):
    """The diff a git source gives from the previous build's commit names what changed; a file it
    does not name keeps its rows, and a changed manifest makes every file's content decide again."""
    payments = copy_sample_docs / PAYMENTS
    payments.write_text(payments.read_text() + "\nNamed by the diff: quokkadiff.\n")
    second = build(copy_sample_docs, tmp_path / "b2", previous=first, changed=frozenset({PAYMENTS}))
    assert (second.stats["chunked_files"], second.stats["reused_files"]) == (1, 41)
    assert hits(second.path, "quokkadiff") == [f"{PAYMENTS}#payments/refund-a-payment"]

    (copy_sample_docs / "guides" / "retries.md").write_text("# Retries\n\nRewritten: wombatdiff.\n")
    unnamed = build(copy_sample_docs, tmp_path / "b3", previous=second.path, changed=frozenset())
    assert unnamed.stats["chunked_files"] == 0 and hits(unnamed.path, "wombatdiff") == []

    manifest = copy_sample_docs / ".docs-mcp.json"
    manifest.write_text(manifest.read_text())  # named by the diff, even unchanged: every file is keyed again
    rekeyed = build(copy_sample_docs, tmp_path / "b4", previous=unnamed.path, changed=frozenset({".docs-mcp.json"}))
    assert rekeyed.stats["chunked_files"] == 1
    assert [hit.partition("#")[0] for hit in hits(rekeyed.path, "wombatdiff")] == ["guides/retries.md"]
