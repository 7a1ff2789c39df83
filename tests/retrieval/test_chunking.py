"""Chunk IDs and chunk boundaries: the conformance cases of the build pipeline contract's chunk identity scheme.

Every case states the exact chunk IDs, line ranges and contents an author (and an agent
calling get_doc) will see. docs/chunking.md describes the rules these pin down.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.format.slugs import slugify
from retrieval.ingest.chunking import chunk_document
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.manifest import Strategy, parse_manifest
from retrieval.ingest.pages import process_file
from retrieval.ingest.parsing import parse_markdown
from retrieval.ingest.validate import process_corpus

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DOCS = ROOT / "corpus" / "sample_docs"
K8S_DOCS = ROOT.parent / "shared" / "bench" / "k8s" / "corpus"  # the shared benchmark data, when present


def chunk(text: str, chunk_by: str = "h2", path: str = "doc.md", **sizes):
    return chunk_document(path, parse_markdown(text), Strategy(chunk_by, **sizes))


def ids(chunks) -> list[str]:
    return [c.chunk_id for c in chunks]


def spans(chunks) -> list[tuple[str, int, int]]:
    return [(c.chunk_id, c.start_line, c.end_line) for c in chunks]


def chunk_with_hints(text: str, path: str = "doc.md"):
    """Chunks as the build makes them: inline hints resolved, no manifest (default h2)."""
    result = process_file(path, text.encode(), "key", {}, {})
    return result.chunks, [f for f in result.findings if f.code != "strategy-default"]


# --- the ID scheme ------------------------------------------------------------------------

def test_h2_split_under_a_repeated_h1_scopes_slugs_to_the_parent():
    text = "# A\n\n## x\n\none\n\n# A\n\n## x\n\ntwo\n"
    assert spans(chunk(text)) == [("doc.md#a/x", 1, 5), ("doc.md#a-2/x", 7, 11)]


def test_h2_chunk_holding_its_bare_h1_starts_at_the_h1():
    chunks = chunk("# A\n\n## x\n\none\n\n# A\n\n## x\n\ntwo\n")
    assert chunks[0].content == "# A\n\n## x\n\none"
    assert chunks[1].content == "# A\n\n## x\n\ntwo"


def test_text_before_the_first_split_heading_is_the_preamble():
    chunks = chunk("Intro paragraph.\n\nMore intro.\n\n## Setup\n\nbody\n", path="guides/retries.md")
    assert spans(chunks) == [("guides/retries.md#_preamble", 1, 3), ("guides/retries.md#setup", 5, 7)]
    assert chunks[0].content == "Intro paragraph.\n\nMore intro."
    assert chunks[0].heading_level == 0


def test_preamble_under_an_h1_with_content_keeps_the_h1():
    chunks = chunk("# Guide\n\nWhat this guide covers.\n\n## Step one\n\ndo it\n")
    assert spans(chunks) == [("doc.md#_preamble", 1, 3), ("doc.md#guide/step-one", 5, 7)]
    assert chunks[0].content == "# Guide\n\nWhat this guide covers."


def test_setext_headings_are_headings():
    text = "Title\n=====\n\nSub\n---\n\nbody\n\nOther\n-----\n\nmore\n"
    chunks = chunk(text)
    assert spans(chunks) == [("doc.md#title/sub", 1, 7), ("doc.md#title/other", 9, 12)]
    assert chunks[1].heading == "Other"
    assert chunks[1].heading_level == 2
    assert chunks[1].content == "Other\n-----\n\nmore"


def test_heading_syntax_inside_a_fence_is_code_and_the_fence_stays_whole():
    text = "## Real\n\n```md\n## Not a heading\ncode\n```\n\n## Next\n\nx\n"
    chunks = chunk(text)
    assert spans(chunks) == [("doc.md#real", 1, 6), ("doc.md#next", 8, 10)]
    assert chunks[0].content == "## Real\n\n```md\n## Not a heading\ncode\n```"


def test_h3_strategy_with_interleaved_h2_starts_a_chunk_at_every_h2_and_h3():
    text = "# T\n\n## A\n\n### a1\n\nx\n\n### a2\n\ny\n\n## B\n\nz\n\n### b1\n\nw\n"
    chunks = chunk(text, "h3")
    assert spans(chunks) == [
        ("doc.md#t/a/a1", 1, 7),
        ("doc.md#t/a/a2", 9, 11),
        ("doc.md#t/b", 13, 15),
        ("doc.md#t/b/b1", 17, 19),
    ]
    assert chunks[2].content == "## B\n\nz"
    assert chunks[1].breadcrumb == "T > A > a2"


def test_h1_strategy_keeps_h2_sections_inside_their_h1():
    text = "# One\n\n## a\n\nx\n\n# Two\n\n## b\n\ny\n"
    assert spans(chunk(text, "h1")) == [("doc.md#one", 1, 5), ("doc.md#two", 7, 11)]


def test_file_strategy_gives_one_chunk_whose_id_is_the_path():
    text = "# User\n\nA user.\n\n## Fields\n\n| name | type |\n| --- | --- |\n| id | string |\n"
    chunks = chunk(text, "file", path="models/user.md")
    assert spans(chunks) == [("models/user.md", 1, 9)]
    assert chunks[0].content == text.rstrip("\n")
    assert chunks[0].heading == "User"


def test_empty_file_gives_no_chunks():
    assert chunk("") == []
    assert chunk("\n\n   \n") == []


@pytest.mark.parametrize(("heading", "slug"), [
    ("`getToken()` Method", "gettoken-method"),
    ("Café & Crème_brûlée!", "caf-crmebrle"),
    ("日本語", "section"),
    ("v2.0 Release (beta)", "v20-release-beta"),
    ("OAuth 2.0", "oauth-20"),
    ("  Leading -- and -- trailing  ", "leading-and-trailing"),
    ("_preamble", "preamble"),
])
def test_heading_text_slugifies_per_seed_001(heading, slug):
    assert ids(chunk(f"## {heading}\n\nbody\n")) == [f"doc.md#{slug}"]


def test_slugify_drops_everything_outside_a_to_z_digits_space_and_hyphen():
    assert slugify("Hello, World") == "hello-world"
    assert slugify("a  b") == "a-b"
    assert slugify("!!!") == "section"


def test_heading_field_is_plain_text_without_inline_markup():
    chunks = chunk("## `getToken()` Method\n\nbody\n")
    assert chunks[0].heading == "getToken() Method"


def test_duplicate_headings_get_numbered_suffixes_in_document_order():
    text = "## Examples\n\na\n\n## Examples\n\nb\n\n## Examples\n\nc\n"
    assert ids(chunk(text, path="guides/retries.md")) == [
        "guides/retries.md#examples", "guides/retries.md#examples-2", "guides/retries.md#examples-3"]


def test_a_heading_whose_slug_equals_a_generated_suffix_never_collides():
    text = "## Login\n\na\n\n## Login\n\nb\n\n## Login 2\n\nc\n"
    chunks = chunk(text)
    assert ids(chunks) == ["doc.md#login", "doc.md#login-2", "doc.md#login-2-2"]
    assert [c.heading for c in chunks] == ["Login", "Login", "Login 2"]


def test_generated_suffix_skips_a_slug_an_earlier_heading_already_took():
    text = "## Login 2\n\na\n\n## Login\n\nb\n\n## Login\n\nc\n"
    assert ids(chunk(text)) == ["doc.md#login-2", "doc.md#login", "doc.md#login-3"]


def test_same_heading_under_different_parents_keeps_the_clean_slug():
    text = "# Python\n\n## Install\n\npip\n\n# Go\n\n## Install\n\ngo get\n"
    assert ids(chunk(text)) == ["doc.md#python/install", "doc.md#go/install"]


# --- oversized sections, parts and the minimum size ---------------------------------------

PARA = " ".join(["word"] * 20)  # 99 characters


def test_oversized_section_splits_at_its_deeper_headings_first():
    text = f"## Big\n\nintro\n\n### One\n\n{PARA}\n\n### Two\n\n{PARA}\n"
    chunks = chunk(text, max_chunk_size=150)
    assert spans(chunks) == [("doc.md#big", 1, 3), ("doc.md#big/one", 5, 7), ("doc.md#big/two", 9, 11)]
    assert chunks[1].content == f"### One\n\n{PARA}"
    assert chunks[1].breadcrumb == "Big > One"


def test_section_under_the_limit_is_not_split_at_deeper_headings():
    text = f"## Big\n\nintro\n\n### One\n\n{PARA}\n"
    assert ids(chunk(text, max_chunk_size=10_000)) == ["doc.md#big"]


def test_oversized_section_without_deeper_headings_splits_at_block_boundaries_into_parts():
    text = "## Big\n\n" + "\n\n".join([PARA] * 5) + "\n"
    chunks = chunk(text, max_chunk_size=250)
    assert spans(chunks) == [("doc.md#big", 1, 5), ("doc.md#big-part-2", 7, 9), ("doc.md#big-part-3", 11, 11)]
    assert chunks[1].content == f"{PARA}\n\n{PARA}"
    assert all(c.heading == "Big" for c in chunks)


def test_a_code_block_larger_than_the_limit_stays_whole_and_keeps_its_heading():
    code = "```python\n" + "x = 1\n" * 100 + "```"
    chunks = chunk(f"## C\n\n{code}\n\nafter\n", max_chunk_size=100)
    assert spans(chunks) == [("doc.md#c", 1, 104), ("doc.md#c-part-2", 106, 106)]
    assert chunks[0].content == f"## C\n\n{code}"


def test_block_splitting_never_cuts_inside_a_list_or_table():
    table = "| a | b |\n| --- | --- |\n" + "| 1 | 2 |\n" * 30
    items = "".join(f"- item {n}\n" for n in range(30))
    chunks = chunk(f"## T\n\n{table}\n{items}", max_chunk_size=200)
    assert [c.content for c in chunks] == [f"## T\n\n{table.rstrip()}", items.rstrip()]


def test_min_chunk_size_merges_a_small_trailing_part_into_the_previous_part():
    para = " ".join(["word"] * 28)  # 139 characters
    text = f"## S\n\n{para}\n\n{para}\n\nshort tail\n"
    assert spans(chunk(text, max_chunk_size=150)) == [
        ("doc.md#s", 1, 3), ("doc.md#s-part-2", 5, 5), ("doc.md#s-part-3", 7, 7)]
    merged = chunk(text, max_chunk_size=150, min_chunk_size=20)
    assert spans(merged) == [("doc.md#s", 1, 3), ("doc.md#s-part-2", 5, 7)]
    assert merged[1].content == f"{para}\n\nshort tail"


def test_min_chunk_size_never_merges_separate_sections():
    chunks = chunk("## A\n\nx\n\n## B\n\ny\n", min_chunk_size=1000)
    assert ids(chunks) == ["doc.md#a", "doc.md#b"]


# --- inline hints -------------------------------------------------------------------------

HINTED = (
    "# T\n\n## A\n\nx\n\n### a1\n\ny\n\n"
    '<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->\n'
    "## B\n\nz\n\n### b1\n\nw\n\n### b2\n\nv\n"
)


def test_section_hint_splits_only_its_own_section_one_level_deeper():
    chunks, findings = chunk_with_hints(HINTED)
    assert findings == []
    assert spans(chunks) == [("doc.md#t/a", 1, 11), ("doc.md#t/b", 12, 14),
                             ("doc.md#t/b/b1", 16, 18), ("doc.md#t/b/b2", 20, 22)]
    assert "### a1" in chunks[0].content


def test_section_hint_ends_at_the_next_heading_of_its_level():
    text = HINTED + "\n## C\n\nc\n\n### c1\n\nd\n"
    chunks, _ = chunk_with_hints(text)
    assert ids(chunks)[-1] == "doc.md#t/c"
    assert "### c1" in chunks[-1].content


def test_section_hint_at_its_own_level_keeps_that_section_whole_under_a_deeper_strategy():
    text = ('# T\n\n<!-- mcp_chunking_hint: {"chunk_by": "h2"} -->\n## A\n\n### a1\n\nx\n\n'
            "## B\n\n### b1\n\ny\n")
    manifests = {"": parse_manifest('{"version": "1", "strategy": {"chunk_by": "h3"}}', "")}
    result = process_file("doc.md", text.encode(), "key", manifests, {})
    assert result.findings == []
    assert spans(result.chunks) == [("doc.md#t/a", 1, 8), ("doc.md#t/b/b1", 10, 14)]


def test_section_hint_applies_even_when_the_file_has_no_heading_at_the_split_level():
    text = 'Intro.\n\n<!-- mcp_chunking_hint: {"chunk_by": "h3"} -->\n# T\n\ntext\n\n### x\n\ny\n'
    chunks, findings = chunk_with_hints(text)
    assert findings == []
    assert spans(chunks) == [("doc.md#_preamble", 1, 3), ("doc.md#t", 4, 6), ("doc.md#t/x", 8, 10)]


def test_file_level_hint_at_the_top_sets_the_strategy_for_the_whole_file():
    text = '<!-- mcp_chunking_hint: {"chunk_by": "file"} -->\n# T\n\n## a\n\nx\n\n## b\n\ny\n'
    chunks, findings = chunk_with_hints(text, path="models/t.md")
    assert findings == []
    assert spans(chunks) == [("models/t.md", 1, 10)]


def test_file_level_hint_may_carry_sizes():
    text = ('<!-- mcp_chunking_hint: {"chunk_by": "h3", "max_chunk_size": 5000} -->\n'
            "# T\n\n## a\n\n### a1\n\nx\n\n## b\n\ny\n")
    chunks, findings = chunk_with_hints(text)
    assert findings == []
    assert ids(chunks) == ["doc.md#t/a/a1", "doc.md#t/b"]


def test_a_hint_comment_alone_before_the_first_heading_does_not_become_a_chunk():
    text = '<!-- mcp_chunking_hint: {"chunk_by": "h2"} -->\n\n## a\n\nx\n'
    chunks, _ = chunk_with_hints(text)
    assert spans(chunks) == [("doc.md#a", 1, 5)]


# --- content, context and lines -----------------------------------------------------------

def test_embedding_input_is_the_context_prefix_plus_the_unprefixed_source_slice():
    text = "# Setup\n\nIntro.\n\n## Retries\n\nRetry with `backoff`.\n\n### Jitter\n\nAdd jitter.\n"
    chunks = chunk(text, "h3")
    jitter = chunks[-1]
    assert jitter.chunk_id == "doc.md#setup/retries/jitter"
    assert jitter.content == "### Jitter\n\nAdd jitter."
    assert jitter.context == "Setup > Retries > Jitter"
    assert jitter.embed_text == "Setup > Retries > Jitter\n\n### Jitter\n\nAdd jitter."
    lines = text.split("\n")
    assert "\n".join(lines[jitter.start_line - 1:jitter.end_line]) == jitter.content


def test_context_prefix_names_the_document_title_when_the_heading_path_does_not():
    chunks = chunk("# Payments\n\nAbout.\n\n## Create\n\nPOST\n", "h2")
    assert chunks[-1].context == "Payments > Create"
    no_title = chunk("## Create\n\nPOST\n")
    assert no_title[0].context == "Create"
    assert no_title[0].embed_text == "Create\n\n## Create\n\nPOST"


def test_start_and_end_lines_skip_front_matter_and_trailing_blank_lines():
    text = "---\ntitle: Retries\n---\n\nIntro.\n\n## Backoff\n\nWait.\n\n\n\n## Limits\n\nFive.\n\n"
    chunks = chunk(text)
    assert spans(chunks) == [("doc.md#_preamble", 5, 5), ("doc.md#backoff", 7, 9), ("doc.md#limits", 13, 15)]
    assert chunks[1].content == "## Backoff\n\nWait."


def test_chunk_index_counts_chunks_in_file_order():
    chunks = chunk("pre\n\n## a\n\nx\n\n## b\n\ny\n")
    assert [c.chunk_index for c in chunks] == [0, 1, 2]


def test_crlf_line_endings_give_the_same_chunks_as_lf():
    text = "# A\n\n## x\n\none\n"
    assert spans(chunk(text.replace("\n", "\r\n"))) == spans(chunk(text))


# --- properties over real corpora ---------------------------------------------------------

def _corpora() -> list:
    roots: list = [SAMPLE_DOCS]
    if K8S_DOCS.is_dir():
        roots.append(pytest.param(K8S_DOCS, marks=pytest.mark.slow))  # a benchmark corpus: the slow tier
    return roots


@pytest.mark.parametrize("root", _corpora(), ids=lambda p: p.name if p != SAMPLE_DOCS else "sample_docs")
def test_every_file_has_unique_ids_and_its_chunks_cover_each_content_line_exactly_once(root):
    scan = scan_corpus(root)
    results = process_corpus(scan, workers=1)
    assert len(results) >= 40
    problems: list[str] = []
    for result in results:
        chunk_ids = [c.chunk_id for c in result.chunks]
        if len(chunk_ids) != len(set(chunk_ids)):
            problems.append(f"{result.relpath}: duplicate chunk IDs {chunk_ids}")
        text = scan.files[result.relpath].decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        doc = parse_markdown(text)
        seen = [0] * len(lines)
        for item in result.chunks:
            if "\n".join(lines[item.start_line - 1:item.end_line]) != item.content:
                problems.append(f"{item.chunk_id}: content is not the source slice of its lines")
            for n in range(item.start_line - 1, item.end_line):
                seen[n] += 1
        for n, line in enumerate(lines):
            if n >= doc.frontmatter_end and line.strip() and seen[n] != 1:
                problems.append(f"{result.relpath}:{n + 1} is in {seen[n]} chunks: {line[:60]!r}")
                break
        if any(c.content.strip() == "" for c in result.chunks):
            problems.append(f"{result.relpath}: an empty chunk")
    assert problems == []


def test_no_chunk_of_the_sample_corpus_is_a_bare_heading():
    results = process_corpus(scan_corpus(SAMPLE_DOCS), workers=1)
    bare = [c.chunk_id for r in results for c in r.chunks
            if all(line.startswith("#") or not line.strip() for line in c.content.split("\n"))]
    assert bare == []
