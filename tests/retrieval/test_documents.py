"""Chunk and document retrieval: the docs tool contract's delimiter grammar and error texts, listings, outlines,
sections and related chunks, on the handwritten corpus."""

from __future__ import annotations

import pytest

from retrieval.errors import InvalidArgument, InvalidChunkId, NotFound
from retrieval.search.documents import (
    get_chunk,
    get_document,
    get_outline,
    get_section,
    list_documents,
    render_chunk_window,
)
from retrieval.search.related import find_related
from tests.retrieval_fixtures import (  # noqa: F401
    HANDWRITTEN,
    BrokenEmbedder,
    handwritten_fts_index,
    handwritten_index,
    hash_embedder,
)

LIMITS = "guides/rate-limits.md"
HTTP_429 = """## HTTP 429 responses

When you exceed the limit the API answers with HTTP 429 Too Many Requests and a JSON error body. \
The request was not performed, so it is safe to send it again later."""
RETRY_AFTER = """## Retry-After header

Every throttled response carries a Retry-After header: the number of seconds to wait before the next attempt."""
BACKOFF = """## Backoff strategy

Wait for the Retry-After delay, then retry with exponential backoff and jitter. Give up after five attempts \
and report the failure."""


def test_get_chunk_alone_renders_one_target_block(handwritten_index):  # noqa: F811
    window = get_chunk(handwritten_index, f"{LIMITS}#rate-limits/retry-after-header")
    assert render_chunk_window(window) == (
        f"--- Chunk: {LIMITS}#rate-limits/retry-after-header (Chunk 3 of 4) (Target) ---\n{RETRY_AFTER}")


def test_get_chunk_with_context_uses_the_exact_delimiter_grammar(handwritten_index):  # noqa: F811
    window = get_chunk(handwritten_index, f"{LIMITS}#rate-limits/retry-after-header", context=1)
    assert render_chunk_window(window) == (
        f"--- Chunk: {LIMITS}#rate-limits/http-429-responses (Chunk 2 of 4) (Context: -1) ---\n{HTTP_429}\n\n"
        f"--- Chunk: {LIMITS}#rate-limits/retry-after-header (Chunk 3 of 4) (Target) ---\n{RETRY_AFTER}\n\n"
        f"--- Chunk: {LIMITS}#rate-limits/backoff-strategy (Chunk 4 of 4) (Context: +1) ---\n{BACKOFF}")


def test_context_stops_at_the_file_edges(handwritten_index):  # noqa: F811
    window = get_chunk(handwritten_index, f"{LIMITS}#_preamble", context=5)
    text = render_chunk_window(window)
    assert text.startswith(f"--- Chunk: {LIMITS}#_preamble (Chunk 1 of 4) (Target) ---\n# Rate limits\n")
    assert [c.chunk_index for c in window.chunks] == [1, 2, 3, 4]
    assert text.count("(Target)") == 1
    assert "(Context: +3) ---\n## Backoff strategy" in text
    assert window.before == []


def test_chunk_records_carry_position_and_metadata(handwritten_index):  # noqa: F811
    target = get_chunk(handwritten_index, "sdks/python/users.md#users/clientlistusers").target
    assert (target.chunk_index, target.total_chunks, target.heading, target.title) == (
        2, 4, "client.list_users()", "Users")
    assert target.metadata == {"language": "python", "scope": "sdk-specific"}
    assert target.breadcrumb == "Users > client.list_users()"


def test_unknown_chunk_id_gives_the_seed_error_text(handwritten_index):  # noqa: F811
    with pytest.raises(NotFound) as err:
        get_chunk(handwritten_index, "guides/retries.md#does-not-exist")
    assert str(err.value) == ("Chunk ID 'guides/retries.md#does-not-exist' not found. "
                              "Use search_docs to discover valid chunk IDs.")


@pytest.mark.parametrize(("chunk_id", "reason"), [
    ("", "it is empty"),
    ("   ", "it is empty"),
    (" guides/a.md", "leading or trailing whitespace"),
    ("#backoff-strategy", "it has no file path"),
    ("../etc/passwd", "'..'"),
    ("guides/../../secret.md#x", "'..'"),
    ("/etc/passwd", "relative to the docs root"),
    ("guides\\a.md", "forward slashes"),
    ("guides//a.md", "empty segments"),
    ("guides/a.md#", "heading path after '#' is empty"),
    ("guides/a.md#two words", "slugs without spaces"),
    ("guides/a.md\n#x", "control characters"),
])
def test_malformed_chunk_ids_name_the_expected_format(handwritten_index, chunk_id, reason):  # noqa: F811
    with pytest.raises(InvalidChunkId) as err:
        get_chunk(handwritten_index, chunk_id)
    message = str(err.value)
    assert message.startswith("Invalid chunk ID '") and reason in message
    assert "Expected '{filepath}' or '{filepath}#{heading-path}'" in message


@pytest.mark.parametrize("context", [-1, 6, "1", True])
def test_context_out_of_range_is_refused(handwritten_index, context):  # noqa: F811
    with pytest.raises(InvalidArgument, match="context must be an integer from 0 to 5"):
        get_chunk(handwritten_index, f"{LIMITS}#_preamble", context=context)


def test_get_document_returns_the_whole_file(handwritten_index):  # noqa: F811
    document = get_document(handwritten_index, LIMITS)
    assert document.content == (HANDWRITTEN / LIMITS).read_text()
    assert (document.title, document.size, document.chunk_count) == ("Rate limits", len(document.content), 4)
    with pytest.raises(NotFound, match="Document 'guides/nope.md' not found. Use list_documents"):
        get_document(handwritten_index, "guides/nope.md")
    with pytest.raises(InvalidArgument, match="Invalid document path"):
        get_document(handwritten_index, "../x.md")


def test_list_documents_pages_by_path_with_a_total(handwritten_index):  # noqa: F811
    everything = list_documents(handwritten_index)
    assert [d.filepath for d in everything.documents] == [
        "guides/connections.md", "guides/rate-limits.md", "guides/views.md",
        "sdks/python/errors.md", "sdks/python/users.md", "sdks/typescript/errors.md"]
    assert everything.total == 6 and not everything.has_more
    page = list_documents(handwritten_index, limit=2, offset=1)
    assert [d.filepath for d in page.documents] == ["guides/rate-limits.md", "guides/views.md"]
    assert page.total == 6 and page.has_more
    assert list_documents(handwritten_index, limit=2, offset=4).has_more is False
    assert list_documents(handwritten_index, offset=10).documents == []
    with pytest.raises(InvalidArgument):
        list_documents(handwritten_index, limit=0)


def test_outline_has_levels_text_and_lines_and_ignores_fenced_code(handwritten_index):  # noqa: F811
    outline = get_outline(handwritten_index, "guides/connections.md")
    assert outline.title == "Connection pooling"
    assert [(e.level, e.text, e.line) for e in outline.entries] == [
        (1, "Connection pooling", 1), (2, "max_connections", 5), (3, "Sizing the pool", 9), (2, "Timeouts", 18)]
    shallow = get_outline(handwritten_index, "guides/connections.md", max_depth=2)
    assert [e.text for e in shallow.entries] == ["Connection pooling", "max_connections", "Timeouts"]
    with pytest.raises(InvalidArgument, match="max_depth"):
        get_outline(handwritten_index, "guides/connections.md", max_depth=7)


def test_section_runs_to_the_next_heading_of_its_level(handwritten_index):  # noqa: F811
    section = get_section(handwritten_index, "guides/connections.md", "MAX_CONNECTIONS")
    assert (section.heading, section.level, section.start_line, section.end_line) == ("max_connections", 2, 5, 16)
    assert section.content.startswith("## max_connections\n")
    assert section.content.endswith("export SKYLINE_MAX_CONNECTIONS=20\n```")
    assert "# one connection per thread" in section.content  # a comment in code is not a heading


def test_section_without_subsections_stops_at_any_heading(handwritten_index):  # noqa: F811
    section = get_section(handwritten_index, "guides/connections.md", "max_connections", include_subsections=False)
    assert (section.start_line, section.end_line) == (5, 7)
    assert "Sizing" not in section.content


def test_section_matches_a_substring_and_exact_matches_win(handwritten_index):  # noqa: F811
    assert get_section(handwritten_index, "guides/connections.md", "sizing").heading == "Sizing the pool"
    assert get_section(handwritten_index, "sdks/python/errors.md", "errors").heading == "Errors"


def test_missing_section_lists_the_headings(handwritten_index):  # noqa: F811
    with pytest.raises(NotFound) as err:
        get_section(handwritten_index, "guides/connections.md", "retries")
    assert str(err.value) == ("Section 'retries' not found in 'guides/connections.md'. Its headings: "
                              "'Connection pooling', 'max_connections', 'Sizing the pool', 'Timeouts'. "
                              "Use get_outline to list them.")


def test_related_by_document_centroid_excludes_the_document(handwritten_index):  # noqa: F811
    result = find_related(handwritten_index, LIMITS, limit=3)
    assert result.method == "vector" and len(result.hits) == 3
    assert all(h.filepath != LIMITS for h in result.hits)
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_related_may_include_the_same_document(handwritten_index):  # noqa: F811
    result = find_related(handwritten_index, LIMITS, limit=3, same_document=True)
    assert {h.filepath for h in result.hits} == {LIMITS}


def test_related_by_chunk_text_embeds_the_text(handwritten_index, hash_embedder):  # noqa: F811
    result = find_related(handwritten_index, "sdks/python/errors.md", chunk_text="retry after a 429 with backoff",
                          limit=2, embedder=hash_embedder)
    assert result.method == "vector"
    assert [h.chunk_id for h in result.hits] == [f"{LIMITS}#rate-limits/retry-after-header",
                                                 f"{LIMITS}#rate-limits/backoff-strategy"]


def test_related_without_vectors_searches_the_documents_headings(handwritten_fts_index):  # noqa: F811
    result = find_related(handwritten_fts_index, LIMITS, limit=3)
    assert result.method == "lexical"
    assert result.hits[0].chunk_id == "sdks/python/errors.md#errors/ratelimiterror"
    assert all(h.filepath != LIMITS for h in result.hits)


def test_related_for_an_unknown_document_is_not_found(handwritten_index):  # noqa: F811
    with pytest.raises(NotFound, match="Document 'nope.md' not found"):
        find_related(handwritten_index, "nope.md")


def test_related_falls_back_to_full_text_when_the_embedder_fails(handwritten_index, caplog):  # noqa: F811
    result = find_related(handwritten_index, "sdks/python/errors.md", chunk_text="retry after a 429 with backoff",
                          limit=2, embedder=BrokenEmbedder())
    assert result.method == "lexical" and result.hits
    assert "embedding the probe failed" in caplog.text
