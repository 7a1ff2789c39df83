"""MkDocs' markdown-include (`{!docs/operator-manual/argocd-cm.yaml!}`), resolved inside the corpus root.

tests/corpora/sitegen/mkdocs-includes/ is shaped like Argo CD's site: mkdocs.yml beside docs/ (the
folder served), a `-yaml.md` page whose whole content is a code block including a YAML file of
docs/, a page including a corpus page and a Lua script beside docs/, a page whose includes climb out
with `..`, and secret.yaml beside docs/ that no include may read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import lancedb
import pytest

from retrieval.embeddings import get_provider
from retrieval.ingest import seen
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.sitegen import clean
from retrieval.ingest.tree import scan_tree
from retrieval.ingest.validate import validate_corpus
from retrieval.search.documents import get_document, get_section
from retrieval.search.index import Index

SITE = Path(__file__).parent.parent / "corpora" / "sitegen" / "mkdocs-includes"
ROOT = SITE / "docs"
CM_PAGE = "operator-manual/argocd-cm-yaml.md"
CM_FILE = "operator-manual/argocd-cm.yaml"


def chunks_of(root: Path):
    scan, results, findings = validate_corpus(root, workers=1)
    return scan, {c.chunk_id: c for r in results for c in r.chunks}, findings


def told(findings, relpath: str) -> list[tuple[int, str]]:
    return [(f.line, f.message.split(" is not resolved")[0]) for f in findings
            if f.file == relpath and f.kind == "mkdocs markdown-include"]


def all_text(chunks) -> str:
    return "\n".join(c.content for c in chunks.values())


def test_a_yaml_file_inside_the_root_takes_the_place_of_its_include_in_the_code_block():
    scan, chunks, findings = chunks_of(ROOT)
    assert scan.generator == "mkdocs" and scan.site_prefix == "docs"
    example = [c for c in chunks.values() if c.filepath == CM_PAGE and "```yaml" in c.content][0].content
    assert ("```yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n" in example
            and '  statusbadge.enabled: "true"\n' in example and example.endswith("timeout.reconciliation: 180s\n```"))
    after = chunks[f"{CM_PAGE}#argocd-cmyaml-example/applying-it"]
    assert after.start_line == 9 + 13  # the page as served: the file's 14 lines took the include's one
    assert "{!" not in all_text(chunks)
    assert told(findings, CM_PAGE) == []
    assert CM_FILE in scan.include_files and CM_FILE not in scan.files  # read for its includer, not a page


def test_a_corpus_page_named_by_a_markdown_include_is_included_on_its_line_like_a_snippet():
    _scan, chunks, _findings = chunks_of(ROOT)
    builtin = chunks["operator-manual/resource_actions.md#resource-actions/built-in-actions"].content
    assert "Built-in actions | Resource | Action | | --- | --- | | apps/Deployment | restart |" in builtin


def test_includes_leaving_the_root_are_not_read_and_told_once_per_page():
    _scan, chunks, findings = chunks_of(ROOT)
    text = all_text(chunks)
    assert "OUTSIDE-the-root" not in text and "SECRET" not in text
    # the Lua script beside docs/ and an absolute path: one finding for the page, at the first
    assert told(findings, "operator-manual/resource_actions.md") == [
        (12, "markdown-include of 'resource_customizations/apps/Deployment/actions/discovery.lua'")]
    assert told(findings, "operator-manual/escape.md") == [(6, "markdown-include of 'docs/../secret.yaml'")]
    kinds = [f for f in findings if f.kind == "mkdocs markdown-include"]
    assert all("copy the text into the page, or serve the folder that holds both" in f.suggestion for f in kinds)


def test_a_link_leading_out_of_the_root_is_not_followed(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(SITE, site)
    manual = site / "docs" / "operator-manual"
    (manual / "argocd-cm.yaml").unlink()
    os.symlink(site / "secret.yaml", manual / "argocd-cm.yaml")
    scan, chunks, findings = chunks_of(site / "docs")
    assert "SECRET" not in all_text(chunks) and CM_FILE not in scan.include_files
    assert told(findings, CM_PAGE) == [(6, "markdown-include of 'docs/operator-manual/argocd-cm.yaml'")]
    (manual / "argocd-cm.yaml").unlink()  # a link that stays inside the root is read
    (manual / "real.yaml").write_text("kind: ConfigMap\nlinked: true\n")
    os.symlink("real.yaml", manual / "argocd-cm.yaml")
    _scan, chunks, findings = chunks_of(site / "docs")
    assert "linked: true" in all_text(chunks) and told(findings, CM_PAGE) == []


def test_a_file_over_the_limit_is_not_read(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(SITE, site)
    (site / "docs" / CM_FILE).write_text("key: value\n" * 30_000)
    scan, _chunks, findings = chunks_of(site / "docs")
    assert CM_FILE not in scan.include_files and told(findings, CM_PAGE)


def test_a_mkdocs_yml_in_the_served_folder_starts_the_paths_there(tmp_path):
    shutil.copytree(ROOT, tmp_path / "docs")
    shutil.copy(SITE / "mkdocs.yml", tmp_path / "docs" / "mkdocs.yml")
    page = tmp_path / "docs" / CM_PAGE
    page.write_text(page.read_text().replace("{!docs/operator-manual/", "{!operator-manual/"))
    scan, chunks, findings = chunks_of(tmp_path / "docs")
    assert scan.site_prefix == "" and "statusbadge.enabled" in all_text(chunks) and told(findings, CM_PAGE) == []


def tree_files() -> dict[str, bytes]:
    return {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in ROOT.rglob("*") if p.is_file()}


def test_a_tree_from_git_resolves_its_includes_from_the_files_it_holds():
    """A git source's `docs/` subdirectory: the paths start from the repository's top, above it."""
    files = tree_files()
    scan = scan_tree(Path("git#abc"), {**files, "mkdocs.yml": b"site_name: x\n"}, site_prefix="docs")
    assert scan.generator == "mkdocs" and scan.included(CM_PAGE) == {
        "{!docs/operator-manual/argocd-cm.yaml!}": files[CM_FILE]}
    before = scan.file_key(CM_PAGE)
    edited = scan_tree(Path("git#def"), {**files, "mkdocs.yml": b"site_name: x\n",
                                         CM_FILE: files[CM_FILE] + b"  newsetting: on\n"}, site_prefix="docs")
    assert edited.file_key(CM_PAGE) != before
    assert edited.file_key("operator-manual/escape.md") == scan.file_key("operator-manual/escape.md")
    assert edited.any_included(frozenset({CM_FILE}))  # a diff naming only the YAML file re-keys its includer
    linked = scan_tree(Path("git#ghi"), {**files, "mkdocs.yml": b"site_name: x\n"},
                       links={CM_FILE: ""}, site_prefix="docs")  # a link leaving the tree
    assert linked.included(CM_PAGE) == {}


@pytest.mark.parametrize("recorded", [False, True], ids=["pages-just-written", "pages-stat-recorded"])
def test_editing_an_included_yaml_file_chunks_its_includer_again(tmp_path, monkeypatch, recorded):
    """Also when the pages' stats were recorded (retrieval/ingest/seen.py): the includer is unchanged
    on disk, and only the file it includes, which has no stat of its own recorded, was edited."""
    if recorded:
        monkeypatch.setattr(seen, "RACY_NS", 0)
    docs = tmp_path / "site" / "docs"
    shutil.copytree(SITE, docs.parent)

    def build(out: str, previous: Path | None = None, **kwargs):
        return build_index(BuildRequest(docs, tmp_path / out, out, "argo", provider=get_provider("hash"),
                                        previous_dir=previous, workers=1, **kwargs))

    first = build("b1").path
    (docs / CM_FILE).write_text((docs / CM_FILE).read_text() + "\n  # Leave orphaned resources alone\n"
                                "  resource.zorpignore: true\n")
    second = build("b2", previous=first)
    assert (second.stats["chunked_files"], second.stats["reused_files"]) == (1, 4)
    served = lancedb.connect(second.path / "lancedb").open_table("chunks").to_arrow().to_pylist()
    assert any("resource.zorpignore: true" in row["content"] for row in served if row["filepath"] == CM_PAGE)
    index = Index(second.path)
    assert "resource.zorpignore: true" in get_document(index, CM_PAGE).content
    section = get_section(index, CM_PAGE, "Applying it")  # outline and served text count the same lines
    assert section.content == "## Applying it\n\nApply the map with `kubectl apply -n argocd -f argocd-cm.yaml`."
    # a git build given the diff: the YAML file alone changed, its includer is chunked again
    (docs / CM_FILE).write_text((docs / CM_FILE).read_text().replace("zorpignore", "zorpkeep"))
    third = build("b3", previous=second.path, scan=scan_corpus(docs), changed=frozenset({CM_FILE}))
    assert third.stats["chunked_files"] == 1
    served = lancedb.connect(third.path / "lancedb").open_table("chunks").to_arrow().to_pylist()
    assert any("resource.zorpkeep: true" in row["content"] for row in served if row["filepath"] == CM_PAGE)


def test_a_file_in_a_list_items_code_block_is_indented_as_its_include_and_crlf_pages_are_read():
    included = {"{!docs/a.yaml!}": "k: 1\nnested:\n  v: 2\n"}
    listed = clean("# T\n\n1. Apply:\n\n    ```yaml\n    {!docs/a.yaml!}\n    ```\n", "mkdocs", "p.md", included)
    assert listed.text == "# T\n\n1. Apply:\n\n    ```yaml\n    k: 1\n    nested:\n      v: 2\n    ```\n"
    crlf = clean("# T\r\n\r\n```yaml\r\n{!docs/a.yaml!}\r\n```\r\n", "mkdocs", "p.md", included)
    assert "k: 1\nnested:\n  v: 2\n```" in crlf.text and not crlf.notices


def test_a_file_an_unchanged_page_includes_is_read_once_it_appears(tmp_path, monkeypatch):
    """The page's stat was recorded and it did not change; the file its include names did not exist at
    the first build. The page is keyed again from its bytes, so the new file takes the include's place."""
    monkeypatch.setattr(seen, "RACY_NS", 0)
    docs = tmp_path / "site" / "docs"
    shutil.copytree(SITE, docs.parent)
    included = (docs / CM_FILE).read_text()
    (docs / CM_FILE).unlink()

    def build(out: str, previous: Path | None = None):
        return build_index(BuildRequest(docs, tmp_path / out, out, "argo", provider=get_provider("hash"),
                                        previous_dir=previous, workers=1))

    first = build("b1").path
    assert "statusbadge.enabled" not in get_document(Index(first), CM_PAGE).content
    (docs / CM_FILE).write_text(included)
    second = build("b2", previous=first)
    assert "statusbadge.enabled" in get_document(Index(second.path), CM_PAGE).content
