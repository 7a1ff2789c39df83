"""Docs folders as their site generator writes them: detected, and read for what their syntax means.

The folders under tests/corpora/sitegen/ are small sites in each generator's own layout and syntax
(a config file beside the pages, the shortcodes, admonitions, MDX components and directives real
pages use); every chunk they give is scanned for syntax left over.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from retrieval.ingest.sitegen import clean, detect
from retrieval.ingest.sources import file_text, scan_corpus, scan_tree, validate_corpus

SITES = Path(__file__).parent.parent / "corpora" / "sitegen"
ROOTS = {  # the folder a user serves, and where the generator's configuration sits
    "hugo": SITES / "hugo" / "content" / "docs",
    "mkdocs": SITES / "mkdocs" / "docs",
    "docusaurus": SITES / "docusaurus" / "docs",
    "sphinx": SITES / "myst" / "docs",
    "jekyll": SITES / "jekyll" / "docs",
}
LEFTOVER = {  # syntax a reader of the rendered page never sees
    "hugo": [r"\{\{[<%]", r"[>%]\}\}", r"<!--", r"\{#[\w-]+\}"],
    "mkdocs": [r"^\s*!!!", r"^\s*\?\?\?", r'^\s*===\+? "', r"--8<--", r"<!--", r"\{ ?#[\w-]+ ?\}"],
    "docusaurus": [r"^import ", r"^export ", r"</?Tabs", r"</?TabItem", r"^:::", r"\{/\*", r"<Highlight",
                   r"<DocCardList", r"\{#[\w-]+\}"],
    "sphinx": [r"^```\{", r"^:{3,}", r"^\([\w-]+\)=", r"^%", r"^\+\+\+", r"\{\w+\}`", r"^:\w+:"],
    "jekyll": [r"\{%", r"\{\{ ?site\.", r"^\{:"],
}


def chunks_of(root: Path):
    scan, results, findings = validate_corpus(root, workers=1)
    return scan, {c.chunk_id: c for r in results for c in r.chunks}, findings


@pytest.mark.parametrize("generator", sorted(ROOTS))
def test_each_generator_is_detected_from_the_configuration_beside_its_pages(generator):
    scan, _chunks, _findings = chunks_of(ROOTS[generator])
    assert scan.generator == generator


@pytest.mark.parametrize("generator", sorted(ROOTS))
def test_no_chunk_of_a_real_format_site_keeps_its_generator_syntax(generator):
    _scan, chunks, _findings = chunks_of(ROOTS[generator])
    assert chunks
    left = [(chunk_id, line) for chunk_id, chunk in chunks.items() for line in chunk.content.split("\n")
            if any(re.search(p, line) for p in LEFTOVER[generator])]
    assert left == []


@pytest.mark.parametrize("generator", sorted(ROOTS))
def test_cleaning_keeps_every_line_where_the_author_wrote_it(generator):
    root = ROOTS[generator]
    for page in sorted(p for p in root.rglob("*") if p.suffix in (".md", ".mdx")):
        text = file_text(page.read_bytes())
        cleaned = clean(text, generator, page.relative_to(root).as_posix()).text
        assert cleaned.count("\n") == text.count("\n"), page
    _scan, chunks, _findings = chunks_of(root)
    for chunk in chunks.values():
        source = (root / chunk.filepath).read_text().split("\n")
        if chunk.heading_level:  # the chunk starts at its heading, on the source line its numbers give
            assert source[chunk.start_line - 1].lstrip().startswith("#" * chunk.heading_level + " "), chunk.chunk_id


def test_hugo_shortcodes_keep_their_text_notes_become_notes_and_tabs_sub_sections():
    _scan, chunks, findings = chunks_of(ROOTS["hugo"])
    preamble = chunks["concepts/nodes.md#_preamble"].content
    assert "is managed by the\ncontrol plane\nand contains" in preamble
    assert "a\ncontainer runtime, and the kube-proxy." in preamble  # no text: the term's words
    management = chunks["concepts/nodes.md#management"]
    assert management.content.startswith("## Management\n")  # `{#management}` is an anchor, not text
    assert "Note:\nKubernetes keeps the object" in management.content
    assert "Reviewers: this paragraph is hidden" not in "".join(c.content for c in chunks.values())
    status = chunks["concepts/nodes.md#node-status"].content
    assert "### Linux\nCheck the kubelet service with `systemctl status kubelet`." in status
    assert "### Windows\n" in status
    assert "## What's next" in chunks["concepts/nodes.md#whats-next"].content
    assert "(/docs/reference/glossary/node.md)" in chunks["concepts/nodes.md#whats-next"].content
    unknown = [f for f in findings if f.code == "generator-syntax"]
    assert [(f.file, f.line) for f in unknown if "mystery-widget" in f.message] == [("concepts/nodes.md", 66)]
    assert any("codenew" in f.message and "pods/simple-pod.yaml" in f.message for f in unknown)


def test_hugo_leaf_bundle_resources_are_not_pages():
    """reference/glossary/index.md makes the folder a leaf bundle: node.md is data the glossary page
    shows, not a page of the site."""
    scan, chunks, findings = chunks_of(ROOTS["hugo"])
    assert "reference/glossary/node.md" in scan.excluded
    assert not any(c.startswith("reference/glossary/node.md") for c in chunks)
    assert "reference/glossary/index.md#_preamble" in chunks
    assert [f.code for f in findings if f.file == "reference/glossary/index.md" and f.code != "strategy-default"] == [
        "hugo-bundle-resources"]


def test_mkdocs_admonitions_become_labelled_paragraphs_and_tabs_sub_sections():
    _scan, chunks, _findings = chunks_of(ROOTS["mkdocs"])
    overview = chunks["index.md#_preamble"].content
    assert "Warning: Security\nOnly install it in a namespace you trust." in overview
    assert "Note:\nThis collapsible note" in overview
    assert "Tip: Faster syncs\nEnable the webhook" in overview
    cli = chunks["user-guide/sync.md#sync-options/installing-the-cli"].content
    assert "### Linux\n\nDownload the binary" in cli
    assert "```bash\ncurl -sSL" in cli  # the tab's code block is dedented, still a fence
    assert "### macOS\n" in cli and "Note:\nHomebrew updates the CLI" in cli


def test_mdx_imports_vanish_tabs_become_sub_sections_and_admonitions_paragraphs():
    _scan, chunks, findings = chunks_of(ROOTS["docusaurus"])
    started = chunks["intro.mdx#tutorial-intro/getting-started"].content
    assert "### npm\n\nRun `npm init docusaurus`" in started
    assert "### Yarn\n" in started
    assert "Tip: Node version\n" in started
    assert "The classic template ships a blog." in started
    assert "Caution: Outdated hosts" in chunks["guides/deploy.md#_preamble"].content
    assert "Danger:\nNever commit" in chunks["guides/deploy.md#_preamble"].content
    kinds = sorted(f.message.split(" is ")[0] for f in findings if f.code == "generator-syntax")
    assert kinds == ["JSX component <Highlight>"]  # DocCardList draws the sidebar: no finding, no text


def test_myst_directives_roles_and_targets_read_as_the_page_shows_them():
    _scan, chunks, findings = chunks_of(ROOTS["sphinx"])
    install = chunks["install.md#_preamble"].content
    assert "```bash\n\npip install example\n```" in install  # {code-block} is a code block
    assert "Note:\nThe package needs Python 3.10" in install
    assert "Warning: Old releases\n\nReleases before 2.0" in install
    config = chunks["install.md#installation/configuration"].content
    assert "Settings are read from example.toml; see the options." in config
    assert "### Linux\nPut the file" in config and "### Windows\n" in config
    assert "usage" not in config  # the toctree's entries are navigation, not text
    assert "Body of a directive nobody knows." in config
    assert [f.message for f in findings if f.code == "generator-syntax"] == [
        "directive {mystery} is not one docsmcp knows: its markers are dropped, its body kept"]


def test_jekyll_liquid_tags_vanish_highlight_is_code_and_raw_stays_literal():
    _scan, chunks, _findings = chunks_of(ROOTS["jekyll"])
    requirements = chunks["setup.md#setup/requirements"].content
    assert "```ruby\ngem install bundler\n```" in requirements
    assert "[configuration](docs/setup.md)" in requirements
    assert "Templates use {{ page.title }} to show the title." in requirements


def test_the_manifest_names_the_generator_or_turns_reading_off(tmp_path):
    site = tmp_path / "docs"
    shutil.copytree(ROOTS["mkdocs"], site)  # no mkdocs.yml above this copy
    page = "!!! note\n    Read me.\n\n## Part\n\nText.\n"
    (site / "index.md").write_text(page)
    scan, chunks, _ = chunks_of(site)
    assert scan.generator == "mkdocs"  # from the pages' syntax
    (site / ".docs-mcp.json").write_text(json.dumps({"version": "1", "generator": "none"}))
    scan, chunks, _ = chunks_of(site)
    assert scan.generator == "" and "!!! note" in chunks["index.md#_preamble"].content
    (site / ".docs-mcp.json").write_text(json.dumps({"version": "1", "generator": "hugo"}))
    assert chunks_of(site)[0].generator == "hugo"
    (site / ".docs-mcp.json").write_text(json.dumps({"version": "1", "generator": "gatsby"}))
    _scan, _chunks, findings = chunks_of(site)
    assert [f.message for f in findings if f.code == "manifest-invalid"] == [
        ".docs-mcp.json: unknown generator 'gatsby'; use one of auto, none, hugo, mkdocs, docusaurus, sphinx, jekyll"]


def test_a_plain_folder_is_read_as_plain_markdown(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nUse {{ braces }} and !!! marks freely.\n")
    (tmp_path / "b.md").write_text("# B\n\n<!-- a comment stays -->\n")
    scan, chunks, _ = chunks_of(tmp_path)
    assert scan.generator == ""
    assert "{{ braces }}" in chunks["a.md#_preamble"].content
    assert "<!-- a comment stays -->" in chunks["b.md#_preamble"].content


def test_a_tree_from_git_is_detected_from_its_top_level_files():
    root = ROOTS["mkdocs"].parent
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert detect(None, {}, names={"mkdocs.yml", "docs"}).name == "mkdocs"
    scan = scan_tree(Path("git#abc"), files)
    assert scan.generator == "mkdocs" and "docs/index.md" in scan.files


def test_an_include_inside_the_corpus_is_resolved_onto_its_line_and_one_outside_is_not_read(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(SITES / "hugo", site)
    docs = site / "content" / "docs"
    _scan, chunks, findings = chunks_of(docs)
    status = chunks["concepts/nodes.md#node-status"]
    assert ("## Node status\n\nYou need a Kubernetes cluster, and the kubectl command-line tool must be "
            "configured to communicate with your cluster.\n\nTo view") in status.content
    assert status.end_line == 57  # the included text took the include's line: later lines did not move
    (site / "secret.md").write_text("SECRET outside the corpus\n")
    page = docs / "concepts" / "nodes.md"
    page.write_text(page.read_text().replace('"prereqs.md"', '"../../../secret.md"'))
    _scan, chunks, findings = chunks_of(docs)
    assert "SECRET" not in "".join(c.content for c in chunks.values())
    assert any("'../../../secret.md' is not resolved" in f.message for f in findings)


def test_editing_an_included_page_changes_the_key_of_the_page_that_includes_it(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOTS["hugo"], docs)
    before = scan_corpus(docs).file_key("concepts/nodes.md")
    (docs / "includes" / "prereqs.md").write_text("You need a cluster.\n")
    scan = scan_corpus(docs)
    assert scan.file_key("concepts/nodes.md") != before
    assert scan.any_included(frozenset({"includes/prereqs.md"}))
