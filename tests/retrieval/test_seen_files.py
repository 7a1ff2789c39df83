"""A folder rebuilt reads only the pages whose stat changed since the previous build read them
(retrieval/ingest/seen.py), and builds exactly what reading every page would."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from retrieval.embeddings import get_provider
from retrieval.errors import ConfigError
from retrieval.ingest import files as files_module
from retrieval.ingest import folder, seen
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.ingest.folder import scan_corpus

from .test_build_incremental import PAYMENTS, hits, rows
from .test_sitegen import SITES


def build(source: Path, out: Path, previous: Path | None = None, **kwargs):
    return build_index(BuildRequest(source, out, out.name, "skyline", provider=get_provider("hash"),
                                    previous_dir=previous, workers=1, **kwargs))


@pytest.fixture
def not_racy(monkeypatch):
    """The sample corpus is copied just before each test builds it: every page would be too recent to trust."""
    monkeypatch.setattr(seen, "RACY_NS", 0)


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The markdown pages whose bytes a build reads."""
    found: list[str] = []
    real = files_module.read_regular_file

    def counting(path, max_bytes, **kwargs):
        if str(path).endswith(".md"):
            found.append(str(path))
        return real(path, max_bytes, **kwargs)

    monkeypatch.setattr(folder, "read_regular_file", counting)
    monkeypatch.setattr(seen, "read_regular_file", counting)
    return found


def records(build_dir: Path) -> dict:
    return json.loads((build_dir / "files.json").read_text())


def test_a_rebuild_reads_only_the_changed_page_and_equals_a_full_build(copy_sample_docs, tmp_path, not_racy, reads):
    first = build(copy_sample_docs, tmp_path / "b1")
    assert len(records(first.path)["sources"]["stats"]) == 42
    payments = copy_sample_docs / PAYMENTS
    payments.write_text(payments.read_text() + "\n## Capture later\n\nHold the zephyrcapture funds first.\n")
    reads.clear()

    patched = build(copy_sample_docs, tmp_path / "b2", previous=first.path)
    assert reads == [str(payments)]
    assert (patched.stats["chunked_files"], patched.stats["reused_files"]) == (1, 41)
    full = build(copy_sample_docs, tmp_path / "b3")
    assert patched.stats["revision"] == full.stats["revision"]
    for table in ("chunks", "documents"):
        assert rows(patched.path, table) == rows(full.path, table)
    assert records(patched.path) == records(full.path)
    assert hits(patched.path, "zephyrcapture") == [f"{PAYMENTS}#payments/capture-later"]


def test_an_edit_that_keeps_the_size_and_the_modification_time_is_read(copy_sample_docs, tmp_path, not_racy):
    first = build(copy_sample_docs, tmp_path / "b1")
    payments = copy_sample_docs / PAYMENTS
    before, text = payments.stat(), payments.read_text()
    payments.write_text(text.replace("Refund", "Rxfund", 1))  # same size ...
    os.utime(payments, ns=(before.st_atime_ns, before.st_mtime_ns))  # ... same mtime: only the ctime tells
    assert payments.stat().st_size == before.st_size
    second = build(copy_sample_docs, tmp_path / "b2", previous=first.path)
    assert second.stats["chunked_files"] == 1


def test_a_changed_manifest_keys_every_page_from_its_bytes(copy_sample_docs, tmp_path, not_racy, reads):
    first = build(copy_sample_docs, tmp_path / "b1")
    manifest = copy_sample_docs / ".docs-mcp.json"
    data = json.loads(manifest.read_text())
    data["description"] = "Another description"
    manifest.write_text(json.dumps(data))
    reads.clear()
    second = build(copy_sample_docs, tmp_path / "b2", previous=first.path)
    assert len(reads) == 42
    full = build(copy_sample_docs, tmp_path / "b3")
    assert rows(second.path, "documents") == rows(full.path, "documents")
    assert records(second.path) == records(full.path)


def test_a_page_written_just_before_the_scan_is_not_recorded(tmp_path):
    """Racily clean: another edit in the same timestamp tick would keep its stat, so it is read next time."""
    (tmp_path / "old.md").write_text("# Old\n")
    past = time.time_ns() - 10 * seen.RACY_NS
    os.utime(tmp_path / "old.md", ns=(past, past))
    (tmp_path / "new.md").write_text("# New\n")
    scan = scan_corpus(tmp_path)
    assert "new.md" not in scan.seen  # its ctime is now too, whatever its mtime says
    assert set(scan.files) == {"old.md", "new.md"}


def test_an_unchanged_page_is_read_when_its_bytes_are_asked_for(copy_sample_docs, not_racy, reads):
    first = scan_corpus(copy_sample_docs)
    known = folder.Known(first.seen, first.signatures)
    reads.clear()
    again = scan_corpus(copy_sample_docs, known=known)
    assert reads == [] and again.files.unchanged(PAYMENTS)
    assert again.files[PAYMENTS] == (copy_sample_docs / PAYMENTS).read_bytes()
    assert reads == [str(copy_sample_docs / PAYMENTS)]
    assert (again.generator, list(again.files)) == (first.generator, list(first.files))


def test_a_page_removed_after_the_scan_fails_the_build_saying_to_build_again(copy_sample_docs, not_racy):
    first = scan_corpus(copy_sample_docs)
    again = scan_corpus(copy_sample_docs, known=folder.Known(first.seen, first.signatures))
    (copy_sample_docs / PAYMENTS).unlink()
    with pytest.raises(ConfigError, match=f"{PAYMENTS} changed while the build was reading the folder"):
        again.files[PAYMENTS]


def test_a_changed_page_is_looked_at_again_for_its_generator_syntax(tmp_path, not_racy):
    for n in range(4):
        (tmp_path / f"page{n}.md").write_text(f"# Page {n}\n\nPlain text.\n")
    first = scan_corpus(tmp_path)
    assert first.generator == "" and first.signatures == {f"page{n}.md": [] for n in range(4)}
    for n in range(2):
        (tmp_path / f"page{n}.md").write_text(f"# Page {n}\n\n!!! note\n    An admonition.\n")
    again = scan_corpus(tmp_path, known=folder.Known(first.seen, first.signatures))
    assert again.generator == "mkdocs"
    assert again.signatures["page0.md"] == ["mkdocs"] and again.files.unchanged("page3.md")


def test_under_a_site_generator_a_page_is_read_again_when_a_page_it_includes_changed(tmp_path, not_racy, reads):
    site = tmp_path / "site"
    shutil.copytree(SITES / "hugo", site)
    docs = site / "content" / "docs"
    first = build(docs, tmp_path / "b1")
    assert records(first.path)["sources"]["includes"] == {"concepts/nodes.md": ["includes/prereqs.md"]}
    (docs / "includes" / "prereqs.md").write_text("You need a wombatcluster.\n")
    reads.clear()
    second = build(docs, tmp_path / "b2", previous=first.path)
    assert sorted(Path(p).relative_to(docs).as_posix() for p in set(reads)) == [
        "concepts/nodes.md", "includes/prereqs.md"]
    assert second.stats["chunked_files"] == 2
    full = build(docs, tmp_path / "b3")
    for table in ("chunks", "documents"):
        assert rows(second.path, table) == rows(full.path, table)
    assert records(second.path) == records(full.path)

    (docs / "concepts" / "new.md").write_text("# New\n\nA page more.\n")  # another set of pages: all read
    reads.clear()
    third = build(docs, tmp_path / "b4", previous=second.path)
    assert len(set(reads)) == len(records(third.path)["files"]) and third.stats["chunked_files"] == 1
