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

from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.pages import file_text
from retrieval.ingest.sitegen import clean, detect
from retrieval.ingest.tree import scan_tree
from retrieval.ingest.validate import validate_corpus

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


FENCE = re.compile(r"^\s*(?:[-*+]\s+)*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")


def prose_lines(text: str) -> list[str]:
    """The lines of a chunk outside its code, code spans as ``: docs about a generator show its syntax as code."""
    out, fence = [], ""
    for line in text.split("\n"):
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = ""
        elif match:
            fence = match.group(1)
        else:
            out.append(CODE_SPAN.sub("``", line))
    return out


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
    left = [(chunk_id, line) for chunk_id, chunk in chunks.items() for line in prose_lines(chunk.content)
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


def test_every_leaf_bundle_keeps_its_index_only_a_bundle_inside_another_told_once():
    files = {"_index.md": b"# Site\n", "index.md": b"# Home\n", "about.md": b"# About\n",
             "posts/a/index.md": b"# A\n", "posts/a/notes.md": b"# Notes\n", "posts/a/img/cap.md": b"# Cap\n",
             "posts/a/inner/index.md": b"# Inner\n", "posts/a/inner/x.md": b"# X\n",
             "posts/ab/index.md": b"# AB\n", "posts/a-b/index.md": b"# A-B\n", "posts/a-b/z.md": b"# Z\n",
             **{f"posts/p{n}/index.md": b"# P\n" for n in range(200)}}
    scan = scan_tree(Path("git#abc"), files)
    assert scan.generator == "hugo"
    assert sorted(p for p in scan.files if not p.startswith("posts/p")) == [
        "_index.md", "about.md", "index.md", "posts/a-b/index.md", "posts/a/index.md", "posts/ab/index.md"]
    assert sum(p.startswith("posts/p") for p in scan.files) == 200
    assert sorted(scan.excluded) == ["posts/a-b/z.md", "posts/a/img/cap.md", "posts/a/inner/index.md",
                                     "posts/a/inner/x.md", "posts/a/notes.md"]
    told = {f.file: f.message.split(" page(s)")[0] for f in scan.findings if f.code == "hugo-bundle-resources"}
    assert told == {"posts/a/index.md": "4", "posts/a-b/index.md": "1"}


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


def test_a_mkdocs_markdown_include_is_told_and_leaves_no_syntax():
    """Argo CD's reference pages are one `{!docs/...yaml!}` in a code block (markdown-include)."""
    _scan, chunks, findings = chunks_of(ROOTS["mkdocs"])
    example = chunks["user-guide/sync.md#sync-options/example-configuration"].content
    assert "{!" not in example and "A complete example of the configuration map:" in example
    assert [(f.file, f.line) for f in findings if "markdown-include of 'docs/user-guide/example-cm.yaml'" in f.message] \
        == [("user-guide/sync.md", 35)]


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
    assert "Install\n```bash\npip install example\n```" in install  # {code-block} is a code block, its caption text
    assert "Note:\nThe package needs Python 3.10" in install
    assert "Warning: Old releases\n\nReleases before 2.0" in install
    config = chunks["install.md#installation/configuration"].content
    assert "Settings are read from example.toml; see the options." in config
    assert "### Linux\nPut the file" in config and "### Windows\n" in config
    assert "usage" not in config  # the toctree's entries are navigation, not text
    assert "Body of a directive nobody knows." in config
    assert [f.message for f in findings if f.code == "generator-syntax" and f.file == "install.md"] == [
        "directive {mystery} is not one docsmcp knows: its markers are dropped, its body kept"]


def test_myst_roles_and_directives_written_as_code_stay_as_written():
    """mystmd's own docs name directives in code spans (`{note}`) and show examples as source: a
    role is only a role outside code, and an example block stays code, its inner fences too."""
    _scan, chunks, _findings = chunks_of(ROOTS["sphinx"])
    preamble = chunks["authoring.md#_preamble"].content
    assert "Write a `{note}` or a `{warning}` directive for a callout; replace `{count}` with a number." in preamble
    assert "The render function reads the page, the figure directive too." in preamble  # domain roles
    examples = chunks["authoring.md#authoring/examples-shown-as-written"].content
    assert "````markdown\n:::{tip} Title\nA tip, as its source reads.\n:::\n\n```{math}\ne = mc^2\n```\n````" \
        in examples
    assert "````\n\n---\ntitle: front matter inside the example\n---\n\n```{code-cell} python\n" in examples
    assert "```mermaid\ngraph LR\n  parse --> render\n```" in examples
    assert "The parse and render pipeline\n\n\nPages are parsed, then rendered." in examples  # alt and caption
    assert "authoring.md#authoring/examples-shown-as-written/title-front-matter-inside-the-example" not in chunks


def test_myst_directive_options_after_the_name_and_fences_in_list_items():
    _scan, chunks, findings = chunks_of(ROOTS["sphinx"])
    options = chunks["authoring.md#authoring/callout-options"].content
    assert "Note: Inline options\nClasses and options may follow" in options
    assert "See also: Generated lists" in options and "{example:generated-list}" not in options
    tables = chunks["authoring.md#authoring/tables"].content
    assert "  - ```yaml\n    type: strong\n    ```" in tables  # a fence opening a list item is code
    assert "(results-target)=" not in tables  # the target after it is still markup
    results = chunks["authoring.md#authoring/results"].content
    assert ":context:" not in results and "{toc}" not in results
    assert "The results section is plain text." in results


def test_jsx_written_in_code_spans_is_code():
    """TypeScript generics in inline code are not components: `Slice<SliceState>` keeps its type."""
    _scan, chunks, findings = chunks_of(ROOTS["docusaurus"])
    typing = chunks["guides/typing.md#_preamble"].content
    assert "`createSlice<SliceState>` gives a `Slice<SliceState, Reducers>`." in typing
    assert "a `Dictionary<Entity>` and `<Provider store={store}>` wrapped the app." in typing
    assert not [f for f in findings if f.file == "guides/typing.md" and f.code == "generator-syntax"]


def test_html_written_with_jsx_attributes_loses_its_tags_and_keeps_its_text():
    """`<div className=...>` and `<img src={useBaseUrl(...)} alt=...>` are JSX a reader never sees."""
    _scan, chunks, _findings = chunks_of(ROOTS["docusaurus"])
    browser = chunks["guides/typing.md#typing-slices/the-store-in-the-browser"].content
    assert "The Redux DevTools showing the store" in browser
    assert "A walk through the store in two minutes" in browser  # an iframe's title
    for syntax in ("className", "useBaseUrl", "src=", "<div", "</div>", "<table", "</table>", "/>", "<iframe",
                   "</iframe>", "style=", "avatar"):  # `alt={avatar.name}` is a value the page's code holds
        assert syntax not in browser, syntax
    assert "<tr><td>Cached</td></tr>" in browser  # plain HTML, as markdown keeps it


def test_a_component_whose_attribute_is_an_array_of_objects_vanishes():
    _scan, chunks, _findings = chunks_of(ROOTS["docusaurus"])
    installing = chunks["guides/typing.md#typing-slices/installing"].content
    assert "values={[" not in installing and "label: 'npm'" not in installing and "<Tabs" not in installing
    assert "### npm\n\nRun `npm install @reduxjs/toolkit`." in installing


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


@pytest.mark.parametrize("config", ["myst.yml", "_toc.yml"])
def test_a_mystmd_or_jupyter_book_folder_is_read_as_myst(tmp_path, config):
    """mystmd and Jupyter Book keep no conf.py: their myst.yml (or Jupyter Book 1's _toc.yml, beside
    a _config.yml Jekyll would also claim) names them."""
    (tmp_path / config).write_text("version: 1\n")
    (tmp_path / "_config.yml").write_text("title: Book\n")
    (tmp_path / "intro.md").write_text("# Intro\n\nPlain text.\n")
    assert detect(tmp_path, {"intro.md": b"# Intro\n"}).name == "sphinx"


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
