"""REST API: search and chunk retrieval on a corpus's active build, mirroring search_docs and get_doc."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from corpus.models import BuildRun
from tests.api_helpers import assert_error, call

TARGET = "guides/retries.md#retries/when-to-retry"


def search(client, **params):
    return call(client, "post", "/corpora/sample/search", params)


def test_search_returns_seed_000_hits_with_the_build_that_answered(client, sample_corpus):
    response = search(client, query="RateLimitError", limit=3)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["corpus"], body["build_id"], body["hint"]) == ("sample", "sample-build", None)
    assert len(body["hits"]) == 3 and body["next_cursor"]
    hit = body["hits"][0]
    assert set(hit) == {"chunk_id", "score", "heading", "breadcrumb", "snippet", "filepath", "metadata", "title",
                        "chunk_index", "total_chunks", "version", "revision", "indexed_at"}
    assert "RateLimitError" in hit["heading"] + hit["snippet"]
    assert 0 <= hit["score"] <= 1


def test_get_and_post_search_answer_the_same(client, sample_corpus):
    filters = {"language": "python"}
    posted = search(client, query="retries", limit=5, filters=filters).json()
    got = call(client, "get", f"/corpora/sample/search?query=retries&limit=5&filters={quote(json.dumps(filters))}")
    assert got.status_code == 200, got.content
    assert got.json() == posted
    assert posted["filters"] == filters
    assert posted["auto_included"] == [{"scope": "global-guide"}]
    assert {h["metadata"].get("language", "any") for h in posted["hits"]} <= {"python", "any"}


def test_the_cursor_walks_pages_without_duplicates(client, sample_corpus):
    first = search(client, query="client", limit=4).json()
    second = search(client, query="client", cursor=first["next_cursor"]).json()
    assert len(second["hits"]) == 4  # the page size travels in the cursor
    assert not {h["chunk_id"] for h in first["hits"]} & {h["chunk_id"] for h in second["hits"]}


def test_a_filtered_search_with_no_hits_carries_a_hint(client, sample_corpus):
    body = search(client, query="zzqqxx", filters={"language": "go"}).json()
    assert body["hits"] == [] and body["next_cursor"] is None
    assert body["hint"]["message"].startswith("0 results found")
    assert isinstance(body["hint"]["suggested_filters"], dict)


@pytest.mark.parametrize("params, status, code, text", [
    ({"query": "x", "filters": {"language": "cobol"}}, 400, "invalid_filter", "use one of: go, python, typescript"),
    ({"query": "x", "filters": {"colour": "red"}}, 400, "invalid_filter", "language"),
    ({"query": "x", "cursor": "forged"}, 400, "invalid_cursor", "without a cursor"),
    ({"query": "   "}, 400, "invalid_argument", "non-empty"),
    ({"query": "x", "limit": 0}, 422, "validation_error", "limit"),
    ({"query": "x", "limit": 51}, 422, "validation_error", "limit"),
    ({"query": "x", "filters": {"language": 3}}, 422, "validation_error", "filters.language"),
    ({"query": "x", "filters": ["python"]}, 422, "validation_error", "filters"),
    ({"query": "x", "page": 2}, 422, "validation_error", "page: unknown field"),
    ({}, 422, "validation_error", "query"),
    ({"query": "x" * 2001}, 422, "validation_error", "query"),
])
def test_search_refuses_bad_input_saying_what_to_change(client, sample_corpus, params, status, code, text):
    assert_error(search(client, **params), status, code, text)


def test_a_cursor_from_another_query_is_refused(client, sample_corpus):
    cursor = search(client, query="retries", limit=2).json()["next_cursor"]
    assert_error(search(client, query="webhooks", cursor=cursor), 400, "invalid_cursor", "different query")


@pytest.mark.parametrize("filters", ["not json", "[1]", '{"language": 1}', "null"])
def test_get_search_refuses_filters_that_are_not_a_json_object_of_strings(client, sample_corpus, filters):
    response = call(client, "get", f"/corpora/sample/search?query=x&filters={quote(filters)}")
    assert_error(response, 400, "invalid_filter", "JSON object of strings")


def test_get_search_needs_a_query(client, sample_corpus):
    assert_error(call(client, "get", "/corpora/sample/search"), 422, "validation_error", "query")


def test_search_of_an_unknown_corpus_is_404(client, sample_corpus):
    assert_error(search_in(client, "ghost"), 404, "corpus_not_found")


def test_search_of_a_corpus_without_an_active_build_is_409(client, writer_client, sample_corpus, tmp_path):
    assert call(writer_client, "post", "/corpora", {"name": "fresh", "source_dir": str(tmp_path)}).status_code == 201
    assert_error(search_in(client, "fresh"), 409, "no_active_build", "build")
    assert_error(call(client, "get", "/corpora/fresh/chunk?chunk_id=a.md"), 409, "no_active_build")


def search_in(client, name):
    return call(client, "post", f"/corpora/{name}/search", {"query": "retries"})


def test_search_follows_a_rollback_at_once(client, writer_client, sample_corpus):
    active = sample_corpus.active_build
    BuildRun.objects.create(corpus=sample_corpus, build_id="second", status=BuildRun.COMPLETE,
                            index_path=active.index_path, embedding=active.embedding, stats=active.stats)
    assert call(writer_client, "post", "/corpora/sample/builds/second/activate").status_code == 200
    assert search(client, query="retries").json()["build_id"] == "sample-build"  # same index directory
    assert call(client, "get", "/corpora/sample").json()["active_build"]["build_id"] == "second"


def test_chunk_with_context_renders_the_get_doc_delimiters(client, sample_corpus):
    response = call(client, "get", f"/corpora/sample/chunks/{quote(TARGET)}?context=1")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["chunk_id"] == TARGET
    assert [c["offset"] for c in body["chunks"]] == [-1, 0, 1]
    target = body["chunks"][1]
    assert (target["chunk_id"], target["chunk_index"], target["total_chunks"]) == (TARGET, 2, 6)
    assert f"--- Chunk: {TARGET} (Chunk 2 of 6) (Target) ---\n{target['content']}" in body["text"]
    assert body["text"].startswith("--- Chunk: guides/retries.md#_preamble (Chunk 1 of 6) (Context: -1) ---\n")
    assert body["text"].count("(Target)") == 1


def test_chunk_by_query_parameter_answers_the_same(client, sample_corpus):
    by_path = call(client, "get", f"/corpora/sample/chunks/{quote(TARGET)}?context=2").json()
    by_query = call(client, "get", f"/corpora/sample/chunk?chunk_id={quote(TARGET)}&context=2").json()
    assert by_path == by_query


def test_chunk_without_context_is_only_the_target(client, sample_corpus):
    body = call(client, "get", f"/corpora/sample/chunks/{quote(TARGET)}").json()
    assert [c["chunk_id"] for c in body["chunks"]] == [TARGET]


@pytest.mark.parametrize("path, status, code, text", [
    (f"chunks/{quote('guides/retries.md#no-such-heading')}", 404, "not_found", "Use search_docs"),
    ("chunks/..%2Fsecrets.md", 400, "invalid_chunk_id", "must not contain '..'"),
    (f"chunks/{quote(TARGET)}?context=6", 422, "validation_error", "context"),
    (f"chunks/{quote(TARGET)}?context=-1", 422, "validation_error", "context"),
    (f"chunks/{quote(TARGET)}?context=two", 422, "validation_error", "context"),
    ("chunk", 422, "validation_error", "chunk_id"),
    (f"chunk?chunk_id={quote('guides/retries.md#')}", 400, "invalid_chunk_id", "empty"),
])
def test_chunk_refuses_bad_input(client, sample_corpus, path, status, code, text):
    assert_error(call(client, "get", f"/corpora/sample/{path}"), status, code, text)
