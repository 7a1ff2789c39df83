"""The response budget (MCP_RESPONSE_TOKEN_BUDGET, tokens estimated as characters / 4) in every profile:
results stay within it, nothing is cut without a notice, and the notice says how to get the rest."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from mcp_endpoint.budget import CHARS_PER_TOKEN
from tests import conftest, profile_fixtures
from tests.mcp_endpoint.test_profile_citeloom import make_items
from tests.profile_fixtures import call

built_corpora = profile_fixtures.built_corpora
doc_corpora = profile_fixtures.doc_corpora
live_url = profile_fixtures.live_url
sample_build_dir = conftest.sample_build_dir
PYTHON_README = "sdks/python/README.md"  # the sample corpus's largest document, about 17 kB
TOKENS = 500  # 2,000 characters: far below what the calls below return unbudgeted


@pytest.fixture
def http():
    with httpx.Client(timeout=60) as client:
        yield client


@pytest.fixture
def tight(settings):
    settings.MCP_RESPONSE_TOKEN_BUDGET = TOKENS
    return TOKENS * CHARS_PER_TOKEN


def result_of(http, url: str, tool: str, arguments: dict, **kwargs) -> tuple[dict, str]:
    body = call(http, url, tool, arguments, **kwargs)
    result = body["result"]
    assert result["isError"] is False, result
    return result, "".join(block.get("text", "") for block in result["content"])


def docs(base: str) -> str:
    """The sample corpus's docs endpoint: with several corpora, /mcp/ searches them all (tests/mcp_endpoint/test_mcp_corpora.py)."""
    return f"{base}/mcp/c/sample/"


def _all_ids(http, base: str, args: dict) -> tuple[list[str], list[dict]]:
    ids, pages, cursor = [], [], None
    while True:
        result, text = result_of(http, docs(base), "search_docs", {**args, **({"cursor": cursor} if cursor else {})})
        page = json.loads(text)
        pages.append((len(text), page))
        ids += [h["chunk_id"] for h in page["hits"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return ids, pages


def test_search_docs_shortens_snippets_then_moves_hits_to_the_next_page(doc_corpora, live_url, http, settings):
    args = {"query": "payment refund webhook retries", "limit": 50}
    settings.MCP_RESPONSE_TOKEN_BUDGET = 100_000
    full_ids, full_pages = _all_ids(http, live_url, args)
    assert "notice" not in full_pages[0][1]
    assert full_pages[0][0] > 2000 * CHARS_PER_TOKEN // 4  # unbudgeted, the first page is well over 500 tokens

    settings.MCP_RESPONSE_TOKEN_BUDGET = 7500  # 50 hits, each with its version, revision and indexed_at
    _, roomy = result_of(http, docs(live_url), "search_docs", args)
    trimmed = json.loads(roomy)
    assert len(roomy) <= 7500 * CHARS_PER_TOKEN
    assert trimmed["notice"].startswith("Snippets were shortened to ")
    limit = int(re.search(r"shortened to (\d+) characters", trimmed["notice"]).group(1))
    assert [h["chunk_id"] for h in trimmed["hits"]] == full_ids[:50]
    assert all(len(h["snippet"]) <= limit for h in trimmed["hits"])

    settings.MCP_RESPONSE_TOKEN_BUDGET = TOKENS
    ids, pages = _all_ids(http, live_url, args)
    assert ids == full_ids  # every hit still reachable, in order, none twice
    assert all(size <= TOKENS * CHARS_PER_TOKEN for size, _ in pages)
    assert "next_cursor continues with the next hit" in pages[0][1]["notice"]
    assert len(pages[0][1]["hits"]) < 50


def test_an_over_budget_page_ends_early_and_continues_from_its_cursor_without_searching_again(
        doc_corpora, live_url, http, settings, monkeypatch):
    from retrieval.search import engine

    args = {"query": "payment refund webhook retries", "limit": 50}
    settings.MCP_RESPONSE_TOKEN_BUDGET = 100_000
    full_ids, _ = _all_ids(http, live_url, args)
    searches = []
    original = engine.search

    def counted(index, request, **kwargs):
        searches.append(request)
        return original(index, request, **kwargs)

    monkeypatch.setattr("retrieval.search.engine.search", counted)  # where corpus.serving calls it
    settings.MCP_RESPONSE_TOKEN_BUDGET = TOKENS
    _, text = result_of(http, docs(live_url), "search_docs", args)
    first = json.loads(text)
    assert len(searches) == 1  # the page was cut to fit, not searched for again with a smaller limit
    kept = len(first["hits"])
    assert 0 < kept < 50 and first["next_cursor"]
    _, text = result_of(http, docs(live_url), "search_docs", {**args, "cursor": first["next_cursor"]})
    second = json.loads(text)
    assert [h["chunk_id"] for h in first["hits"] + second["hits"]] == full_ids[:kept + len(second["hits"])]


def test_get_doc_keeps_the_target_and_names_the_chunks_it_left_out(doc_corpora, live_url, http, tight):
    _, found = result_of(http, docs(live_url), "search_docs", {"query": "connection pool", "language": "python"})
    target = next(h["chunk_id"] for h in json.loads(found)["hits"] if h["filepath"] == PYTHON_README)
    _, text = result_of(http, docs(live_url), "get_doc", {"chunk_id": target, "context": 5})
    assert len(text) <= tight, text
    assert re.search(rf"--- Chunk: {re.escape(target)} \(Chunk \d+ of \d+\) \(Target\) ---", text)
    left_out = re.search(r"Not shown: (.+?)\. Call get_doc", text).group(1).split(", ")
    assert left_out and target not in left_out
    for chunk_id in left_out:  # each one the notice names can be fetched as told
        assert f"--- Chunk: {chunk_id} (" not in text
        _, alone = result_of(http, docs(live_url), "get_doc", {"chunk_id": chunk_id})
        assert f"--- Chunk: {chunk_id} " in alone


def documents(base: str) -> str:
    return f"{base}/mcp/documents/"


def test_documents_get_document_and_section_return_the_first_part_and_what_to_ask_next(
        doc_corpora, live_url, http, settings):
    args = {"collection": "sample", "document": PYTHON_README}
    full = result_of(http, documents(live_url), "documents_get_document", args)[0]["structuredContent"]
    assert "notice" not in full and len(full["content"]) > TOKENS * CHARS_PER_TOKEN
    settings.MCP_RESPONSE_TOKEN_BUDGET = TOKENS
    result, text = result_of(http, documents(live_url), "documents_get_document", args)
    cut = result["structuredContent"]
    assert len(text) <= TOKENS * CHARS_PER_TOKEN and json.loads(text) == cut
    assert full["content"].startswith(cut["content"]) and len(cut["content"]) < len(full["content"])
    next_line = int(re.search(r"stops before source line (\d+)", cut["notice"]).group(1))
    assert next_line == cut["content"].count("\n") + 2
    section = re.search(r"start with: '([^']+)'", cut["notice"]).group(1)
    assert "documents_get_section" in cut["notice"]
    settings.MCP_RESPONSE_TOKEN_BUDGET = 8000
    named = result_of(http, documents(live_url), "documents_get_section", {**args, "section": section})[0]
    assert named["structuredContent"]["section"] == section  # the section the notice names is readable
    settings.MCP_RESPONSE_TOKEN_BUDGET = 200
    small, text = result_of(http, documents(live_url), "documents_get_section", {**args, "section": section})
    if len(named["structuredContent"]["content"]) > 200 * CHARS_PER_TOKEN:
        assert "notice" in small["structuredContent"]
    assert len(text) <= 200 * CHARS_PER_TOKEN


def test_documents_search_shortens_contents_with_a_notice(doc_corpora, live_url, http, tight):
    result, text = result_of(http, documents(live_url), "documents_search", {"query": "index", "limit": 20})
    assert len(text) <= tight
    assert "was shortened" in result["structuredContent"]["notice"] and text.endswith("]")


def test_techdoc_results_stay_within_the_budget(doc_corpora, live_url, http, tight):
    url = f"{live_url}/mcp/techdoc/"
    result, text = result_of(http, url, "get_document", {"document_id": f"sample/{PYTHON_README}"})
    assert len(text) <= tight and "[Cut to fit the response budget" in text
    result, text = result_of(http, url, "search_documentation", {"query": "index", "max_results": 20})
    assert len(text) <= tight and "shortened" in result["content"][-1]["text"]


def test_citeloom_find_chunks_stays_within_the_budget(transactional_db, index_root, live_url, http, tight):
    from corpus.apikeys import create_api_key
    from corpus.chunkstore import project_create

    project_create(project="citeloom/budget", embed_model="hash/feature-hash-v1", dimensions=64)
    _, key = create_api_key("budget-test", ["read", "write"])
    auth = {"Authorization": f"Bearer {key}"}
    long_text = "Layers keep policy apart from detail. " * 200
    url = f"{live_url}/mcp/citeloom/"
    items = make_items("citeloom/budget", 10, text_of_item=lambda i: f"{long_text} ({i})")
    stored = call(http, url, "store_chunks", {"project": "citeloom/budget", "items": items, "final_batch": True},
                  headers=auth)
    assert stored.get("result", {}).get("isError") is False, stored
    query = {"project": "citeloom/budget", "query": "policy and detail", "top_k": 10, "include_full_text": True}
    result, text = result_of(http, url, "find_chunks", query, headers=auth)
    payload = result["structuredContent"]
    assert len(text) <= tight and json.loads(text) == payload
    assert "full_text and render_text were shortened" in payload["notice"] and payload["count"] == len(payload["items"])


def test_any_other_result_over_budget_keeps_its_first_part_and_says_so(settings):
    from mcp_endpoint.budget import fit_result
    from mcp_endpoint.profiles import ToolResult

    settings.MCP_RESPONSE_TOKEN_BUDGET = TOKENS
    small = ToolResult.json({"a": 1})
    assert fit_result(small) is small
    big = ToolResult.json({"lines": [f"line {n}" for n in range(2000)]})
    cut = fit_result(big)
    text = cut.content[0]["text"]
    assert len(text) <= TOKENS * CHARS_PER_TOKEN and big.content[0]["text"].startswith(text.split("\n\n[Cut:")[0])
    assert text.endswith("one section or chunk at a time).]") and "500 tokens" in text
    assert cut.structured is None  # no longer the data the text shows
