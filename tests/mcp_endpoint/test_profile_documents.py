"""The documents profile (docs/contracts/documents-tools.md) end to end over HTTP with the official mcp client, at /mcp/documents/."""

from __future__ import annotations

import json

import httpx
import pytest

from tests import conftest, profile_fixtures
from tests.profile_fixtures import call, text_of, with_client

built_corpora = profile_fixtures.built_corpora
doc_corpora = profile_fixtures.doc_corpora
live_url = profile_fixtures.live_url
sample_build_dir = conftest.sample_build_dir

TOOLS = [
    "documents_list_collections", "documents_search", "documents_get_document", "documents_list_documents",
    "documents_get_outline", "documents_get_section", "documents_search_batch", "documents_find_related",
    "documents_feedback",
]
SEARCH_FIELDS = {"collection", "documentId", "documentTitle", "content", "relevanceScore", "distance",
                 "chunkIndex", "totalChunks", "chunkId"}


def url_of(base: str) -> str:
    return f"{base}/mcp/documents/"


@pytest.fixture
def http():
    with httpx.Client(timeout=60) as client:
        yield client


def run(base: str, *calls: tuple[str, dict], mode: str = "legacy") -> list:
    """Each (tool, arguments) through one official-client session; the CallToolResults in order."""

    async def work(client):
        return [await client.call_tool(name, args) for name, args in calls]

    return with_client(url_of(base), work, mode=mode)


def data(result) -> object:
    assert result.is_error is False, text_of(result)
    return json.loads(text_of(result))


# --- listing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_lists_all_eight_tools_with_schemas(doc_corpora, live_url, mode):
    async def work(client):
        return (await client.list_tools()).tools

    tools = with_client(url_of(live_url), work, mode=mode)
    assert [t.name for t in tools] == TOOLS
    by_name = {t.name: t for t in tools}
    search = by_name["documents_search"].input_schema["properties"]
    assert set(search) == {"query", "collections", "limit", "maxDistance", "hybridSearch"}
    assert search["hybridSearch"]["default"] is True
    batch = by_name["documents_search_batch"].input_schema["properties"]
    assert (batch["queries"]["minItems"], batch["queries"]["maxItems"], batch["limit"]["default"]) == (1, 10, 5)
    outline = by_name["documents_get_outline"].input_schema["properties"]["maxDepth"]
    assert (outline["minimum"], outline["maximum"], outline["default"]) == (1, 6, 3)
    listing = by_name["documents_list_documents"].input_schema["properties"]
    assert (listing["limit"]["default"], listing["offset"]["default"]) == (100, 0)
    assert by_name["documents_get_section"].input_schema["properties"]["includeSubsections"]["default"] is True
    assert by_name["documents_find_related"].input_schema["properties"]["sameDocument"]["default"] is False
    assert [t.name for t in tools if not t.annotations.read_only_hint] == ["documents_feedback"]


def test_list_collections_has_counts_descriptions_versions_and_aliases(doc_corpora, live_url):
    (result,) = run(live_url, ("documents_list_collections", {}))
    collections = data(result)
    assert [c["collection"] for c in collections] == ["postgresql", "sample", "ubuntu"]
    pg = collections[0]
    assert pg == {"collection": "postgresql", "documentCount": 4, "description": "PostgreSQL 16 official documentation",
                  "version": "16", "aliases": ["pg"]}
    assert collections[1]["version"] == "3.2" and collections[1]["documentCount"] > 20
    assert result.structured_content == {"collections": collections}


def test_list_collections_without_any_corpus(db, live_url):
    (result,) = run(live_url, ("documents_list_collections", {}))
    assert text_of(result) == "No document collections found."
    assert result.structured_content == {"collections": []}


# --- search ----------------------------------------------------------------------------------------


def test_search_returns_enhanced_results_across_collections(doc_corpora, live_url):
    (result,) = run(live_url, ("documents_search", {"query": "max_connections concurrent connections", "limit": 5}))
    items = data(result)
    assert result.structured_content == {"coverage": result.structured_content["coverage"], "results": items}
    assert result.structured_content["coverage"]["verdict"] == "covered"  # the sample docs document max_connections
    assert 1 <= len(items) <= 5
    top = items[0]
    assert set(top) >= SEARCH_FIELDS | {"sectionHeading"}
    assert top["collection"] == "postgresql" and "collectionId" not in top
    assert top["documentId"] == "runtime-config.md"
    assert top["documentTitle"] == "Server Configuration"
    assert top["sectionHeading"] == "Connections and Authentication"
    assert "max_connections" in top["content"]
    assert top["distance"] == pytest.approx(1 - top["relevanceScore"])
    assert all(0 <= i["relevanceScore"] <= 1 for i in items)
    assert 1 <= top["chunkIndex"] <= top["totalChunks"]
    scores = [i["relevanceScore"] for i in items]
    assert scores == sorted(scores, reverse=True)


def test_an_alias_in_comes_back_as_the_collection_with_its_id(doc_corpora, live_url):
    by_alias, by_name = run(
        live_url,
        ("documents_search", {"query": "VACUUM ANALYZE", "collections": ["pg"]}),
        ("documents_search", {"query": "VACUUM ANALYZE", "collections": ["postgresql"]}),
    )
    aliased = data(by_alias)
    assert aliased and all(i["collection"] == "pg" and i["collectionId"] == "postgresql" for i in aliased)
    named = data(by_name)
    assert all(i["collection"] == "postgresql" and "collectionId" not in i for i in named)
    assert [i["chunkId"] for i in aliased] == [i["chunkId"] for i in named]


def test_search_stays_inside_the_named_collections(doc_corpora, live_url):
    (result,) = run(live_url, ("documents_search", {"query": "overview", "collections": ["ubuntu"], "limit": 10}))
    assert {i["collection"] for i in data(result)} == {"ubuntu"}


def test_max_distance_filters_results(doc_corpora, live_url):
    loose, strict = run(
        live_url,
        ("documents_search", {"query": "index types", "collections": ["postgresql"], "limit": 10}),
        ("documents_search", {"query": "index types", "collections": ["postgresql"], "limit": 10,
                              "maxDistance": 0.2}),
    )
    everything = data(loose)
    kept = data(strict)
    assert kept == [i for i in everything if i["distance"] <= 0.2]
    assert len(kept) < len(everything)


def test_hybrid_search_false_uses_the_vector_leg(doc_corpora, live_url, monkeypatch):
    from retrieval.search import engine as engine

    seen = []
    original = engine.search

    def spy(index, request, **kwargs):
        seen.append(request.legs)
        return original(index, request, **kwargs)

    monkeypatch.setattr("retrieval.search.engine.search", spy)  # as corpus.serving calls it
    (result,) = run(live_url, ("documents_search", {"query": "index", "collections": ["postgresql"],
                                                    "hybridSearch": False}))
    assert result.is_error is False
    assert seen == [("vector",)]


def test_no_results_says_so(doc_corpora, live_url):
    (result,) = run(live_url, ("documents_search", {"query": "zzqxv", "collections": ["ubuntu"],
                                                    "hybridSearch": False}))
    assert result.is_error is False
    assert text_of(result) == "No results found for the given query."
    assert result.structured_content["results"] == []
    assert result.structured_content["coverage"]["verdict"] == "not_covered"


def test_unknown_collection_names_the_available_ones(doc_corpora, live_url):
    (result,) = run(live_url, ("documents_search", {"query": "x", "collections": ["mysql"]}))
    assert result.is_error is True
    assert text_of(result) == ('Collection "mysql" not found. Available collections: postgresql (aliases: pg), '
                               "sample, ubuntu.")


def test_search_batch_runs_each_query_sharing_one_embedding(doc_corpora, live_url, monkeypatch):
    from retrieval.search import engine as engine

    batches = []
    original = engine.search_batch

    def spy(index, requests, **kwargs):
        batches.append((index.metadata.corpus, [r.query for r in requests]))
        return original(index, requests, **kwargs)

    monkeypatch.setattr("retrieval.search.engine.search_batch", spy)  # as corpus.serving calls it
    (result,) = run(live_url, ("documents_search_batch", {"queries": [
        {"query": "VACUUM ANALYZE", "collections": ["pg"]},
        {"query": "netplan network interfaces", "collections": ["ubuntu"]},
        {"query": "B-tree index", "collections": ["postgresql"]},
    ], "limit": 2}))
    payload = data(result)
    assert result.structured_content == payload
    assert [r["query"] for r in payload["results"]] == ["VACUUM ANALYZE", "netplan network interfaces", "B-tree index"]
    first, second, third = (r["results"] for r in payload["results"])
    assert first[0]["collection"] == "pg" and first[0]["collectionId"] == "postgresql"
    assert first[0]["documentId"] == "maintenance.md"
    assert second[0]["documentId"] == "networking.md"
    assert third[0]["collection"] == "postgresql" and "collectionId" not in third[0]
    assert all(len(r["results"]) <= 2 for r in payload["results"])
    assert batches == [("postgresql", ["VACUUM ANALYZE", "B-tree index"])]  # ubuntu alone takes search()


def test_search_batch_limits(doc_corpora, live_url):
    async def work(client):
        outcomes = []
        for queries in ([], [{"query": f"q{n}"} for n in range(11)]):
            result = await client.call_tool("documents_search_batch", {"queries": queries})
            outcomes.append((result.is_error, text_of(result)))
        return outcomes

    # the client speaks 2025-11-25 or later: argument errors are isError results (SEP-1303)
    (empty, eleven) = with_client(url_of(live_url), work)
    assert empty[0] is eleven[0] is True
    assert "at least 1 item" in empty[1]
    assert "at most 10 item" in eleven[1]


def test_each_query_of_a_batch_counts_against_the_rate_limit(doc_corpora, live_url, http, settings, monkeypatch):
    from mcp_endpoint import ratelimit

    monkeypatch.setattr(ratelimit, "_now", lambda: 1_800_000_030.0)  # mid-window: never straddles a minute
    settings.MCP_RATE_LIMIT_PER_MINUTE = 15
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}

    def batch(n: int) -> httpx.Response:
        arguments = {"queries": [{"query": f"index {i}"} for i in range(n)]}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "documents_search_batch", "arguments": arguments}}
        return http.post(url_of(live_url), json=body, headers=headers)

    first = batch(10)  # ten searches: ten of the fifteen
    assert first.status_code == 200 and first.json()["result"]["isError"] is False
    refused = batch(10).json()["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("Rate limit exceeded: 15 requests per minute, and each query "
                                                    "of documents_search_batch counts as one. Retry after 30 seconds")
    assert batch(1).status_code == 429


# --- documents --------------------------------------------------------------------------------------


def test_get_document_by_name_and_alias(doc_corpora, live_url):
    by_name, by_alias, missing = run(
        live_url,
        ("documents_get_document", {"collection": "postgresql", "document": "indexes.md"}),
        ("documents_get_document", {"collection": "pg", "document": "indexes.md"}),
        ("documents_get_document", {"collection": "pg", "document": "nope.md"}),
    )
    document = data(by_name)
    assert document == {"collection": "postgresql", "document": "indexes.md", "title": "Indexes",
                        "content": profile_fixtures.POSTGRESQL["indexes.md"]}
    assert by_name.structured_content == document
    assert data(by_alias) == {**document, "collection": "pg", "collectionId": "postgresql"}
    assert missing.is_error is True
    assert text_of(missing) == 'Document "nope.md" not found in collection "pg".'


def test_list_documents_pages(doc_corpora, live_url):
    first, second, everything = run(
        live_url,
        ("documents_list_documents", {"collection": "postgresql", "limit": 3}),
        ("documents_list_documents", {"collection": "postgresql", "limit": 3, "offset": 3}),
        ("documents_list_documents", {"collection": "pg"}),
    )
    page1, page2, whole = data(first), data(second), data(everything)
    assert page1["total"] == page2["total"] == 4
    assert page1["hasMore"] is True and page2["hasMore"] is False
    assert [d["id"] for d in page1["documents"] + page2["documents"]] == \
        ["indexes.md", "maintenance.md", "overview.md", "runtime-config.md"]
    assert page1["documents"][0] == {"id": "indexes.md", "title": "Indexes",
                                     "size": len(profile_fixtures.POSTGRESQL["indexes.md"])}
    assert whole["collection"] == "pg" and whole["collectionId"] == "postgresql"
    assert len(whole["documents"]) == 4 and whole["hasMore"] is False


def test_get_outline_respects_max_depth_and_gives_lines(doc_corpora, live_url):
    default, shallow, missing = run(
        live_url,
        ("documents_get_outline", {"collection": "postgresql", "document": "indexes.md"}),
        ("documents_get_outline", {"collection": "postgresql", "document": "indexes.md", "maxDepth": 2}),
        ("documents_get_outline", {"collection": "postgresql", "document": "gone.md"}),
    )
    outline = data(default)
    assert outline["title"] == "Indexes" and outline["document"] == "indexes.md"
    assert outline["outline"] == [
        {"level": 1, "text": "Indexes", "line": 1},
        {"level": 2, "text": "Index Types", "line": 5},
        {"level": 3, "text": "B-tree", "line": 9},
        {"level": 2, "text": "Multicolumn Indexes", "line": 13},
    ]
    assert [e["level"] for e in data(shallow)["outline"]] == [1, 2, 2]
    assert text_of(missing) == 'Document "gone.md" not found in collection "postgresql".'


def test_get_section_matches_case_insensitively_with_and_without_subsections(doc_corpora, live_url):
    whole, alone, partial, missing, no_doc = run(
        live_url,
        ("documents_get_section", {"collection": "postgresql", "document": "indexes.md", "section": "index TYPES"}),
        ("documents_get_section", {"collection": "postgresql", "document": "indexes.md", "section": "Index Types",
                                   "includeSubsections": False}),
        ("documents_get_section", {"collection": "pg", "document": "indexes.md", "section": "multicolumn"}),
        ("documents_get_section", {"collection": "postgresql", "document": "indexes.md", "section": "Partial"}),
        ("documents_get_section", {"collection": "postgresql", "document": "x.md", "section": "Partial"}),
    )
    section = data(whole)
    assert section["section"] == "Index Types" and section["level"] == 2
    assert (section["startLine"], section["endLine"]) == (5, 11)
    assert "### B-tree" in section["content"] and section["content"].startswith("## Index Types")
    only = data(alone)
    assert (only["startLine"], only["endLine"]) == (5, 7) and "### B-tree" not in only["content"]
    assert data(partial)["section"] == "Multicolumn Indexes"
    assert data(partial)["collection"] == "pg"
    assert missing.is_error and text_of(missing) == 'Section "Partial" not found in document "indexes.md".'
    assert no_doc.is_error and text_of(no_doc) == 'Document "x.md" not found in collection "postgresql".'


def test_find_related_from_centroid_and_chunk(doc_corpora, live_url):
    centroid, chunk, same, missing = run(
        live_url,
        ("documents_find_related", {"collection": "sample", "document": "guides/retries.md"}),
        ("documents_find_related", {"collection": "sample", "document": "guides/retries.md",
                                    "chunk": "exponential backoff with jitter between retries", "limit": 3}),
        ("documents_find_related", {"collection": "sample", "document": "guides/retries.md", "sameDocument": True,
                                    "limit": 50}),
        ("documents_find_related", {"collection": "sample", "document": "guides/none.md"}),
    )
    related = data(centroid)
    assert related["source"] == {"collection": "sample", "document": "guides/retries.md"}
    assert related["method"] == "vector"
    assert 1 <= len(related["related"]) <= 5
    assert all(r["document"] != "guides/retries.md" for r in related["related"])
    first = related["related"][0]
    assert set(first) >= {"collection", "document", "content", "relevanceScore"}
    assert 0 <= first["relevanceScore"] <= 1
    assert len(data(chunk)["related"]) <= 3
    assert any(r["document"] == "guides/retries.md" for r in data(same)["related"])
    assert text_of(missing) == 'Document "guides/none.md" not found in collection "sample".'


def test_collections_are_isolated(doc_corpora, live_url):
    """A document of one collection is not found through another, and search never crosses the filter."""
    wrong, right = run(
        live_url,
        ("documents_get_document", {"collection": "ubuntu", "document": "indexes.md"}),
        ("documents_get_document", {"collection": "ubuntu", "document": "overview.md"}),
    )
    assert wrong.is_error and text_of(wrong) == 'Document "indexes.md" not found in collection "ubuntu".'
    assert "Ubuntu Overview" in data(right)["content"]


def test_a_chunks_project_is_not_a_collection(doc_corpora, live_url, index_root):
    from corpus.chunkstore import project_create

    project_create(project="citeloom/clean-arch")
    (result,) = run(live_url, ("documents_list_documents", {"collection": "proj-citeloom-clean-arch"}))
    assert result.is_error and "not found" in text_of(result)


def test_schema_errors_are_invalid_params(doc_corpora, live_url, http):
    body = call(http, url_of(live_url), "documents_get_outline",
                {"collection": "postgresql", "document": "indexes.md", "maxDepth": 7})
    assert body["error"]["code"] == -32602
    assert "Argument 'maxDepth' must be an integer from 1 to 6; got 7." in body["error"]["message"]


def test_every_profile_tool_error_code_and_setting_is_documented(db, settings):
    from pathlib import Path

    from mcp_endpoint.profiles import Context
    from mcp_endpoint.profiles.registry import get_profile

    docs = (Path(__file__).resolve().parents[2] / "docs" / "profiles.md").read_text()
    names = []
    for profile in ("documents", "techdoc", "citeloom"):
        names += [t.name for t in get_profile(profile).tools(Context(request=None, profile=profile))]
    names += ["INVALID_PROJECT", "EMBEDDING_MISMATCH", "HYBRID_NOT_SUPPORTED", "INDEX_UNAVAILABLE", "TIMEOUT",
              "DOCSMCP_DEFAULT_PROFILE", "CITELOOM_MAX_CHARS_PER_CHUNK", "CITELOOM_MAX_TOP_K", "CITELOOM_BATCH_MIN",
              "CITELOOM_BATCH_MAX", "CITELOOM_MAX_BODY_BYTES", "allow_model_migration", "final_batch",
              "query_embedding", "hybridSearch", "document_id"]
    names += [f"CITELOOM_TIMEOUT_{tool.upper()}" for tool in settings.CITELOOM_TIMEOUTS]
    assert [n for n in names if f"`{n}`" not in docs] == []
