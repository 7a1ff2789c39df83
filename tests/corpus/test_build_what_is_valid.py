"""A docs folder as a team keeps it: a page with an error is left out and the rest served; build output,
installed packages and excluded paths are not pages; repeated warnings are told once."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from corpus.models import BuildRun, Corpus
from corpus.services import corpus_update
from corpus.serving import corpus_documents
from retrieval.ingest.exclude import Excluder, parse_rules
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.tree import scan_tree
from tests.cli_helpers import build_cmd, build_corpus

BAD_FRONT_MATTER = "---\ntitle: [unclosed\n---\n# Broken\n\nText.\n"


def break_page(docs: Path) -> str:
    """Give one page invalid YAML front matter, as four of Argo CD's design proposals have."""
    (docs / "guides" / "proposal.md").write_text(BAD_FRONT_MATTER)
    return "guides/proposal.md"


def served_files(name: str) -> set[str]:
    return {d.filepath for d in corpus_documents(name).documents}


@pytest.mark.django_db
def test_a_page_with_an_error_is_left_out_with_its_finding_and_the_rest_is_built(index_root, copy_sample_docs):
    bad = break_page(copy_sample_docs)
    code, out, err = build_cmd("--corpus", "skyline", "--source", str(copy_sample_docs),
                               "--embedding-provider", "hash")
    assert code == 0, err
    assert f"{bad}:1: error: invalid YAML front matter (line 2)" in err
    assert "fix: fix the YAML between the leading --- lines" in err
    assert "1 page(s) left out for errors (frontmatter-invalid 1)" in out
    build = Corpus.objects.get(name="skyline").active_build
    assert build.status == BuildRun.COMPLETE
    assert (build.stats["left_out_files"], build.stats["left_out"]) == (1, {"frontmatter-invalid": 1})
    assert build.stats["warnings_by_code"] == {}  # the sample's manifests set every page's strategy
    assert [(f["code"], f["file"]) for f in build.findings if f["severity"] == "error"] == [
        ("frontmatter-invalid", bad)]
    served = served_files("skyline")
    assert bad not in served and "guides/retries.md" in served and len(served) == 42


@pytest.mark.django_db
def test_the_page_comes_back_once_fixed_and_goes_once_broken_again(index_root, copy_sample_docs):
    bad = break_page(copy_sample_docs)
    build_corpus("skyline", copy_sample_docs)
    (copy_sample_docs / bad).write_text("---\ntitle: Proposal\n---\n# Proposal\n\nText.\n")
    build_corpus("skyline", copy_sample_docs)
    assert bad in served_files("skyline")
    (copy_sample_docs / bad).write_text(BAD_FRONT_MATTER)
    build_corpus("skyline", copy_sample_docs)  # a patched build: the page's rows are deleted
    assert bad not in served_files("skyline")


@pytest.mark.django_db
def test_strict_as_option_or_corpus_setting_fails_the_build_on_any_error(index_root, copy_sample_docs):
    break_page(copy_sample_docs)
    code, _out, err = build_cmd("--corpus", "skyline", "--source", str(copy_sample_docs),
                                "--embedding-provider", "hash", "--strict")
    assert code == 1 and "validation found 1 error(s); fix them before building" in err
    corpus = Corpus.objects.get(name="skyline")
    assert corpus.active_build_id is None
    corpus_update(corpus=corpus, corpus_settings={"strict": True})
    code, _out, err = build_cmd("--corpus", "skyline")
    assert code == 1 and corpus.builds.first().status == BuildRun.FAILED


@pytest.mark.django_db
def test_strict_setting_must_be_a_boolean(copy_sample_docs):
    from corpus.errors import CorpusError
    from corpus.services import corpus_create

    corpus = corpus_create(name="skyline", source_dir=str(copy_sample_docs))
    with pytest.raises(CorpusError, match="settings.strict must be true or false"):
        corpus_update(corpus=corpus, corpus_settings={"strict": "yes"})


@pytest.mark.django_db
def test_a_build_where_every_page_has_an_error_fails(index_root, tmp_path):
    (tmp_path / "a.md").write_text(BAD_FRONT_MATTER)
    code, _out, err = build_cmd("--corpus", "broken", "--source", str(tmp_path), "--embedding-provider", "hash")
    assert code == 1 and "no page without errors is left to build" in err


@pytest.mark.django_db
def test_pages_under_an_invalid_manifest_are_left_out(index_root, copy_sample_docs):
    (copy_sample_docs / "sdks" / "python" / ".docs-mcp.json").write_text(
        '{"version": "1", "strategy": {"chunk_by": "h9"}}')
    code, out, err = build_cmd("--corpus", "skyline", "--source", str(copy_sample_docs),
                               "--embedding-provider", "hash")
    assert code == 0, err
    assert "sdks/python/.docs-mcp.json:1: error:" in err and "left out for errors (manifest-invalid " in out
    served = served_files("skyline")
    assert "sdks/go/client.md" in served and not any(p.startswith("sdks/python/") for p in served)


def tree(root: Path, paths: dict[str, str]) -> Path:
    for relpath, text in paths.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


PAGES = {
    "index.md": "# Home\n",
    "node_modules/pkg/README.md": "# A package\n",
    "guides/node_modules/x/README.md": "# Another\n",
    "site/index.md": "# Built output\n",
    "build/index.md": "# Built output\n",
    "tutorials/public/index.md": "# A section named public\n",
    "drafts/idea.md": "# Draft\n",
    "guides/setup.md": "# Setup\n",
    "guides/setup.draft.md": "# Setup (draft)\n",
}


def test_defaults_leave_out_installed_packages_and_build_output_at_the_root(tmp_path):
    scan = scan_corpus(tree(tmp_path, PAGES))
    assert sorted(scan.files) == ["drafts/idea.md", "guides/setup.draft.md", "guides/setup.md", "index.md",
                                  "tutorials/public/index.md"]
    assert sorted(scan.excluded) == ["build/", "guides/node_modules/", "node_modules/", "site/"]


def test_manifest_exclude_and_docsmcpignore_follow_gitignore_rules(tmp_path):
    tree(tmp_path, {**PAGES, ".docs-mcp.json": json.dumps({"version": "1", "exclude": ["drafts/"]}),
                    ".docsmcpignore": "# keep the built pages of build/\n!/build/\n",
                    "guides/.docsmcpignore": "*.draft.md\n"})
    scan = scan_corpus(tmp_path)
    assert sorted(scan.files) == ["build/index.md", "guides/setup.md", "index.md", "tutorials/public/index.md"]
    # the same tree read from git gives the same pages
    files = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert sorted(scan_tree(Path("git#abc"), files).files) == sorted(scan.files)


def test_an_exclude_that_is_not_a_list_of_patterns_is_a_manifest_error(tmp_path):
    tree(tmp_path, {"a.md": "# A\n", ".docs-mcp.json": json.dumps({"version": "1", "exclude": "drafts/"})})
    scan = scan_corpus(tmp_path)
    assert [f.code for f in scan.findings] == ["manifest-invalid"]
    assert "\"exclude\" must be a list of patterns" in scan.findings[0].message


@pytest.mark.parametrize(("patterns", "path", "is_dir", "excluded"), [
    (["*.draft.md"], "a/b/c.draft.md", False, True),
    (["/drafts/"], "drafts", True, True),
    (["/drafts/"], "a/drafts", True, False),
    (["drafts/"], "drafts", False, False),  # a trailing slash matches folders only
    (["docs/**/old"], "docs/x/y/old", True, True),
    (["*.md", "!keep.md"], "keep.md", False, False),
])
def test_exclude_patterns_match_as_in_gitignore(patterns, path, is_dir, excluded):
    assert Excluder(parse_rules(patterns)).excluded(path, is_dir) is excluded


def test_a_path_is_judged_by_every_rule_added_before_it_is_asked_about():
    rules = Excluder(parse_rules(["/build/"]))
    assert [rules.excluded_path(p) for p in ("guides/old/a.md", "build/x/b.md", "guides/c.md")] == [False, True, False]
    rules.add(parse_rules(["old/"], "guides"))  # a folder's .docsmcpignore, met later on the way down
    assert [rules.excluded_path(p) for p in ("guides/old/a.md", "build/x/b.md", "guides/c.md")] == [True, True, False]
    rules.add(parse_rules(["!/build/"]))
    assert not rules.excluded_path("build/x/b.md")


def run_validate(*args: str) -> str:
    out = io.StringIO()
    with contextlib.suppress(SystemExit):  # exit status 1 on errors
        call_command("validate_docs", *args, "--no-progress", stdout=out)
    return out.getvalue()


def test_a_warning_repeated_on_every_page_is_told_once_with_its_count_and_listed_on_request(tmp_path):
    for n in range(6):
        (tmp_path / f"page{n}.md").write_text(f"# Page {n}\n\nText.\n")
    output = run_validate("--source", str(tmp_path))
    assert output.count("strategy-default") == 1
    assert ("warning: strategy-default x6 on 6 page(s) (page0.md, page1.md, page2.md and 3 more): "
            "e.g. no chunking strategy set") in output
    assert output.rstrip().endswith("6 files, 6 chunks, 0 error(s), 6 warning(s)")
    every = run_validate("--source", str(tmp_path), "--warnings")
    assert every.count("[strategy-default]") == 6 and "page5.md: warning: no chunking strategy set" in every


def test_validate_docs_says_which_pages_a_build_would_leave_out(tmp_path):
    (tmp_path / "good.md").write_text("# Good\n")
    (tmp_path / "bad.md").write_text(BAD_FRONT_MATTER)
    output = run_validate("--source", str(tmp_path))
    assert "a build leaves out the 1 page(s) with errors and builds the rest (with --strict it fails)" in output


def test_unknown_syntax_is_told_once_per_kind_with_its_count(tmp_path):
    for n in range(4):
        (tmp_path / f"page{n}.md").write_text(f"# Page {n}\n\n{{{{< widget >}}}} and {{{{< gadget >}}}}\n")
    (tmp_path / "_index.md").write_text("# Section\n")
    output = run_validate("--source", str(tmp_path))
    assert "read as Hugo (Hugo section pages (_index.md))" in output
    assert "warning: generator-syntax (hugo shortcode widget) x4 on 4 page(s)" in output
    assert "warning: generator-syntax (hugo shortcode gadget) x4 on 4 page(s)" in output
    assert run_validate("--source", str(tmp_path), "--warnings").count("[generator-syntax]") == 8


@pytest.mark.django_db
def test_docsmcp_serve_builds_what_is_valid_and_strict_refuses_to_serve_a_folder_with_errors(index_root, tmp_path):
    from mcp_endpoint.folder import FolderError, prepare_folder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nText.\n")
    (docs / "bad.md").write_text(BAD_FRONT_MATTER)
    with pytest.raises(FolderError, match="has no build to serve"):
        prepare_folder(docs, io.StringIO(), "serve", strict=True)
    said = io.StringIO()
    prepare_folder(docs, said, "serve")
    assert "1 page(s) left out for errors (frontmatter-invalid 1)" in said.getvalue()
    assert served_files("docs") == {"good.md"}
