"""Sources are checked when they are read, not only when registered: the source directory still
resolves inside DOCSMCP_SOURCE_ROOTS, fixes write only inside it, only regular files are opened,
and a file over DOCSMCP_MAX_FILE_BYTES is skipped with a finding."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from corpus.errors import FixError
from corpus.execution import build_execute
from corpus.fix_decisions import fix_approve
from corpus.fixes import fix_scan
from corpus.models import BuildRun, Corpus
from corpus.services import build_request, corpus_create
from tests.cli_helpers import build_cmd
from tests.conftest import SAMPLE_DOCS
from tests.git_helpers import Repo

pytestmark = pytest.mark.django_db


@pytest.fixture
def roots(tmp_path, settings) -> Path:
    """One allowed root, and a directory beside it (outside every root) holding other markdown."""
    root = tmp_path / "roots"
    root.mkdir()
    settings.DOCSMCP_SOURCE_ROOTS = [str(root)]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\n## Keys\n\nThe launch codes are 0000.\n")
    return root


def registered(name: str, source: Path) -> Corpus:
    """A corpus registered the way the REST API and the admin do: held to DOCSMCP_SOURCE_ROOTS."""
    return corpus_create(name=name, source_dir=str(source), corpus_settings={"embedding_provider": "hash"})


def swap_for_link(directory: Path, target: Path) -> None:
    shutil.rmtree(directory)
    directory.symlink_to(target, target_is_directory=True)


def build(corpus: Corpus, kind: str = BuildRun.KIND_INCREMENTAL) -> BuildRun:
    return build_execute(build=build_request(corpus=corpus, kind=kind))


# --- the source directory, resolved at every build ----------------------------------------------

@pytest.mark.parametrize("kind", [BuildRun.KIND_INCREMENTAL, BuildRun.KIND_VALIDATE])
def test_a_source_dir_replaced_by_a_link_outside_the_roots_is_refused_at_build_time(roots, index_root, kind):
    docs = roots / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    corpus = registered("swapped", docs)
    assert build(corpus).status == BuildRun.COMPLETE
    swap_for_link(docs, roots.parent / "outside")
    refused = build(corpus, kind)
    assert refused.status == BuildRun.FAILED
    assert "DOCSMCP_SOURCE_ROOTS" in refused.error and "outside" not in refused.error  # the target is not named
    assert refused.findings == [] and not refused.index_path
    corpus.refresh_from_db()
    assert corpus.active_build.build_id != refused.build_id  # the previous build keeps serving


def test_a_link_to_another_directory_inside_the_roots_still_builds(roots, index_root):
    real = roots / "real"
    shutil.copytree(SAMPLE_DOCS, real)
    (roots / "docs").symlink_to(real, target_is_directory=True)
    corpus = registered("linked", roots / "docs")
    assert build(corpus).status == BuildRun.COMPLETE


def test_a_directory_the_operator_registered_outside_the_roots_keeps_building(roots, index_root, tmp_path):
    operators = tmp_path / "operators-docs"
    shutil.copytree(SAMPLE_DOCS, operators)
    code, _out, err = build_cmd("--corpus", "operator", "--source", str(operators))
    assert code == 0, err
    assert build(Corpus.objects.get(name="operator")).status == BuildRun.COMPLETE
    swap_for_link(operators, roots.parent / "outside")  # but not once it leads somewhere else
    assert build(Corpus.objects.get(name="operator")).status == BuildRun.FAILED


def test_an_approved_fix_never_writes_through_a_source_dir_swapped_for_a_link(roots, tmp_path):
    docs = roots / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    (docs / ".docs-mcp.json").unlink()  # so the scan proposes a manifest
    corpus = registered("fixme", docs)
    bootstrap = next(p for p in fix_scan(corpus=corpus) if p.kind == "bootstrap-manifest")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(docs, elsewhere)  # identical files, so the proposal's base hash still matches there
    swap_for_link(docs, elsewhere)
    with pytest.raises(FixError, match="DOCSMCP_SOURCE_ROOTS"):
        fix_approve(proposal=bootstrap, user="api-key:test")
    assert not (elsewhere / ".docs-mcp.json").exists()
    bootstrap.refresh_from_db()
    assert bootstrap.status == "pending"


def test_a_fix_is_never_written_through_a_directory_swapped_for_a_link_after_the_check(roots, tmp_path):
    from retrieval.fixes.apply import UnsafeTarget, atomic_write, resolve_target

    docs = roots / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "a.md").write_text("# A\n")
    target = resolve_target(docs, "guides/a.md")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.md").write_text("# Elsewhere\n")
    swap_for_link(docs / "guides", elsewhere)
    with pytest.raises(UnsafeTarget, match="not a plain directory"):
        atomic_write(target, "# Changed\n", root=docs)
    assert (elsewhere / "a.md").read_text() == "# Elsewhere\n"


def test_a_git_repository_inside_the_roots_swapped_for_a_link_is_not_fetched(roots, index_root, tmp_path, settings,
                                                                            writer_client):
    import json

    from tests.git_helpers import sample_repo

    settings.DOCSMCP_GIT_CACHE_DIR = tmp_path / "git-cache"
    repo = sample_repo(roots / "repo")
    body = {"name": "gitswap", "git_url": repo.url, "git_subdir": "docs"}
    created = writer_client.post("/api/v1/corpora", data=json.dumps(body), content_type="application/json")
    assert created.status_code == 201, created.content
    corpus = Corpus.objects.get(name="gitswap")
    assert build(corpus).status == BuildRun.COMPLETE
    other = sample_repo(tmp_path / "outside-repo")
    other.write("secret.md", "# Secret\n\n## Keys\n\nThe launch codes.\n")
    other.commit("secret")
    swap_for_link(repo.path, other.path)
    refused = build(corpus)
    assert refused.status == BuildRun.FAILED and "DOCSMCP_SOURCE_ROOTS" in refused.error
    assert "outside-repo" not in refused.error


# --- only regular files ------------------------------------------------------------------------

@pytest.fixture
def pipe_watch():
    """Opens the writing end of a named pipe whenever a reader waits on it: a scan that opened the
    pipe then reads an empty file instead of hanging, and `opened` says that it happened."""
    state = {"opened": False, "stop": threading.Event(), "paths": []}

    def watch():
        while not state["stop"].wait(0.05):
            for path in state["paths"]:
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:  # ENXIO: nobody is reading
                    continue
                state["opened"] = True
                os.close(fd)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    yield state
    state["stop"].set()
    thread.join()


def test_named_pipes_and_sockets_in_a_directory_corpus_are_skipped_with_a_finding(roots, index_root, pipe_watch):
    docs = roots / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    os.mkfifo(docs / "pipe.md")
    os.mkfifo(docs / "guides" / ".docs-mcp.json")
    (docs / "linked-pipe.md").symlink_to("pipe.md")
    pipe_watch["paths"] += [docs / "pipe.md", docs / "guides" / ".docs-mcp.json"]
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(docs / "socket.md"))
    try:
        result = build(registered("pipes", docs))
    finally:
        listener.close()
    assert not pipe_watch["opened"], "the build opened a named pipe"
    assert result.status == BuildRun.COMPLETE, result.error
    skipped = {(f["file"], f["severity"]) for f in result.findings if f["code"] == "not-regular-file"}
    assert skipped == {("pipe.md", "warning"), ("linked-pipe.md", "warning"), ("socket.md", "warning"),
                       ("guides/.docs-mcp.json", "warning")}
    assert any("named pipe" in f["message"] for f in result.findings if f["file"] == "pipe.md")
    assert result.stats["total_files"] == len(list(SAMPLE_DOCS.rglob("*.md")))


def test_a_fix_preview_never_opens_a_named_pipe(roots, pipe_watch):
    from corpus.fix_decisions import fix_preview

    docs = roots / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    (docs / ".docs-mcp.json").unlink()
    corpus = registered("previewed", docs)
    bootstrap = next(p for p in fix_scan(corpus=corpus) if p.kind == "bootstrap-manifest")
    os.mkfifo(docs / "guides" / ".docs-mcp.json")
    os.mkfifo(docs / "guides" / "pipe.md")
    pipe_watch["paths"] += [docs / "guides" / ".docs-mcp.json", docs / "guides" / "pipe.md"]
    preview = fix_preview(proposal=bootstrap, limit=100)
    assert not pipe_watch["opened"], "the preview opened a named pipe"
    assert not preview.error and preview.files
    assert "guides/pipe.md" not in {f.relpath for f in preview.files}


# --- the per-file size limit -------------------------------------------------------------------

def big_page(size: int) -> str:
    body = "\n\n".join(f"## Part {n}\n\n" + "word " * 200 for n in range(size // 1000 + 1))
    return "# Big\n\n" + body


def test_a_file_over_the_size_limit_is_skipped_with_a_finding_that_names_it(roots, index_root, settings):
    settings.DOCSMCP_MAX_FILE_BYTES = 50_000
    docs = roots / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    (docs / "huge.md").write_text(big_page(120_000))
    result = build(registered("sized", docs))
    assert result.status == BuildRun.COMPLETE, result.error
    (finding,) = [f for f in result.findings if f["code"] == "file-too-large"]
    assert finding["file"] == "huge.md" and finding["severity"] == "warning"
    assert f"{(docs / 'huge.md').stat().st_size:,} bytes" in finding["message"] and "50,000" in finding["message"]
    assert "DOCSMCP_MAX_FILE_BYTES" in finding["suggestion"]
    assert result.stats["total_files"] == len(list(SAMPLE_DOCS.rglob("*.md")))
    settings.DOCSMCP_MAX_FILE_BYTES = 1_000_000
    assert build(Corpus.objects.get(name="sized")).stats["total_files"] == len(list(SAMPLE_DOCS.rglob("*.md"))) + 1


def test_a_git_blob_over_the_size_limit_is_never_read(tmp_path, settings, index_root):
    from corpus.gitsource import read_source

    settings.DOCSMCP_GIT_CACHE_DIR = tmp_path / "git-cache"
    settings.DOCSMCP_MAX_FILE_BYTES = 50_000
    repo = Repo(tmp_path / "repo")
    repo.write("small.md", "# Small\n\n## Part\n\nText.\n")
    repo.write("huge.md", big_page(120_000))
    (repo.path / "alias.md").symlink_to("huge.md")
    repo.commit()
    code, _out, err = build_cmd("--corpus", "gitsized", "--git", repo.url)
    assert code == 0, err
    snapshot = read_source(Corpus.objects.get(name="gitsized"))
    assert "huge.md" not in snapshot.scan.files and "small.md" in snapshot.scan.files
    too_large = {f.file for f in snapshot.scan.findings if f.code == "file-too-large"}
    assert too_large == {"huge.md", "alias.md"}
    built = Corpus.objects.get(name="gitsized").active_build
    assert built.stats["total_files"] == 1
    assert any(f["code"] == "file-too-large" and f["file"] == "huge.md" for f in built.findings)
