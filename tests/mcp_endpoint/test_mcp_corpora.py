"""/mcp/ of a server holding several corpora: `list_corpora` finds the right one, search_docs and get_doc
take `corpus`, a search without it merges every readable corpus's hits; per-corpus URLs and one-corpus
servers are unchanged, and an API key limited to some corpora sees nothing of the others.
A live server over real HTTP, corpora built with `manage.py build_index`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest

from corpus.apikeys import create_api_key
from tests import fixtures_mcp
from tests.mcp_endpoint.test_mcp_docs_profile import SEARCH_SCHEMA, build, raw_call

docs_server = fixtures_mcp.docs_server

FASTAPI_PAGES = {
    "dependencies.md": "# Dependencies\n\nFastAPI has a dependency injection system: declare a parameter with "
                       "`Depends()` and FastAPI calls the dependency for each request.\n\n## Sub-dependencies\n\n"
                       "Dependencies can depend on other dependencies; FastAPI solves the whole graph.\n",
    "path-params.md": "# Path parameters\n\nDeclare path parameters with Python format strings in the route "
                      "path; FastAPI validates them with type hints.\n",
    "routers.md": "# Bigger applications with APIRouter\n\nSplit an app into routers and include them with "
                  "`app.include_router()`.\n",
}
KUBE_PAGES = {
    "pods.md": "# Pods\n\nA Pod is the smallest deployable unit of computing in Kubernetes: one or more "
               "containers sharing storage and network.\n",
    "deployments.md": "# Deployments\n\nA Deployment manages a replicated set of Pods and rolls out updates; "
                      "inject configuration with ConfigMaps.\n",
}


def write_pages(root: Path, pages: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (root / name).write_text(text)
    return root


@pytest.fixture
def http():
    with httpx.Client(timeout=60) as client:
        yield client


@pytest.fixture
def corpora(docs_server, index_root, tmp_path, settings):
    """The sample corpus (the default) plus `fastapi` and `kubernetes`, each built and active."""
    from corpus.models import Corpus

    settings.DOCSMCP_SOURCE_ROOTS = [str(tmp_path)]
    build("fastapi", write_pages(tmp_path / "fastapi", FASTAPI_PAGES))
    build("kubernetes", write_pages(tmp_path / "kubernetes", KUBE_PAGES))
    Corpus.objects.filter(name="fastapi").update(description="FastAPI web framework for building APIs with Python")
    Corpus.objects.filter(name="kubernetes").update(description="Kubernetes container orchestration")
    return docs_server


def call(http: httpx.Client, url: str, name: str, arguments: dict, key: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    response = fixtures_mcp.post(http, url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                             "params": {"name": name, "arguments": arguments}},
                                 version="2025-11-25", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def tools(http: httpx.Client, url: str, key: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    response = fixtures_mcp.post(http, url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 version="2025-11-25", headers=headers)
    assert response.status_code == 200, response.text
    return {t["name"]: t for t in response.json()["result"]["tools"]}


def parsed(result: dict) -> dict:
    assert result["isError"] is False, result["content"]
    body = json.loads(result["content"][0]["text"])
    assert result.get("structuredContent", body) == body
    return body


def test_a_one_corpus_server_keeps_todays_endpoint(docs_server, http):
    listed = tools(http, f"{docs_server}/mcp/")
    assert set(listed) == {"search_docs", "get_doc", "docs_feedback"}
    assert listed["search_docs"]["inputSchema"] == SEARCH_SCHEMA
    hits = parsed(raw_call(http, f"{docs_server}/mcp/", "search_docs", {"query": "retries"})["result"])["hits"]
    assert hits and all("corpus" not in hit for hit in hits)


def test_list_corpora_ranks_the_library_a_question_is_about(corpora, http):
    url = f"{corpora}/mcp/"
    listed = parsed(call(http, url, "list_corpora", {}))["corpora"]
    assert [c["name"] for c in listed] == ["fastapi", "kubernetes", "sample"]
    fastapi = listed[0]
    assert fastapi["pages"] == 3 and fastapi["chunks"] >= 3 and fastapi["last_built"]
    assert fastapi["description"].startswith("FastAPI web framework")
    assert fastapi["freshness"]["indexed_at"] == fastapi["last_built"] and fastapi["freshness"]["stale"] is False

    for query, first in [("fastapi dependency injection", "fastapi"), ("how do I roll out a deployment of pods",
                                                                       "kubernetes"),
                         ("Skyline payments SDK retries", "sample")]:
        ranked = parsed(call(http, url, "list_corpora", {"query": query}))["corpora"]
        assert ranked[0]["name"] == first, (query, ranked)
        assert ranked[0]["score"] > ranked[1]["score"]


def test_list_corpora_finds_the_corpus_whose_pages_hold_an_identifier_or_the_questions_words(corpora, http):
    """Neither the names, descriptions nor page titles hold these: the page text does."""
    url = f"{corpora}/mcp/"
    for query, first in [("ConfigMaps", "kubernetes"), ("X-RateLimit-Remaining", "sample"),
                         ("app.include_router()", "fastapi"),
                         ("which card number makes a charge fail in test mode", "sample")]:
        ranked = parsed(call(http, url, "list_corpora", {"query": query}))["corpora"]
        assert ranked[0]["name"] == first, (query, ranked)
        assert ranked[0]["score"] > ranked[1]["score"]
    nothing = parsed(call(http, url, "list_corpora", {"query": "zyzzyva"}))["corpora"]
    assert [c["score"] for c in nothing] == [0, 0, 0]


def test_list_corpora_is_only_on_the_shared_endpoint_and_per_corpus_urls_are_unchanged(corpora, http):
    shared = tools(http, f"{corpora}/mcp/")
    assert "list_corpora" in shared
    # The docs tool contract's properties (the default corpus's filters) are kept as they are; `corpus` and `version` are added.
    properties = shared["search_docs"]["inputSchema"]["properties"]
    assert {k: v for k, v in properties.items() if k not in ("corpus", "version")} == SEARCH_SCHEMA["properties"]
    filtered = parsed(call(http, f"{corpora}/mcp/", "search_docs", {"query": "retries", "language": "python"}))
    assert {h["corpus"] for h in filtered["hits"]} == {"sample"}  # the default corpus, as before
    assert {h["metadata"].get("language") for h in filtered["hits"]} <= {"python", None}  # None: auto-included guides
    assert shared["search_docs"]["inputSchema"]["properties"]["corpus"]["enum"] == ["fastapi", "kubernetes", "sample"]
    assert shared["get_doc"]["inputSchema"]["properties"]["corpus"]["enum"] == ["fastapi", "kubernetes", "sample"]
    own = tools(http, f"{corpora}/mcp/c/sample/")
    assert set(own) == {"search_docs", "get_doc", "docs_feedback"}
    assert own["search_docs"]["inputSchema"] == SEARCH_SCHEMA
    assert "corpus" not in own["get_doc"]["inputSchema"]["properties"]
    hits = parsed(call(http, f"{corpora}/mcp/c/fastapi/", "search_docs", {"query": "dependency injection"}))["hits"]
    assert hits and all("corpus" not in hit for hit in hits)


def test_many_corpora_make_corpus_a_string_with_did_you_mean(corpora, http, settings):
    settings.DOCSMCP_CORPUS_ENUM_MAX = 2
    url = f"{corpora}/mcp/"
    prop = tools(http, url)["search_docs"]["inputSchema"]["properties"]["corpus"]
    assert prop["type"] == "string" and "enum" not in prop
    wrong = call(http, url, "search_docs", {"query": "pods", "corpus": "kubernets"})
    assert wrong["isError"] is True
    assert wrong["content"][0]["text"] == "unknown corpus 'kubernets'; did you mean 'kubernetes'?"
    wrong = call(http, url, "get_doc", {"chunk_id": "pods.md#pods", "corpus": "zzz"})
    assert wrong["isError"] is True and "unknown corpus 'zzz'; call list_corpora" in wrong["content"][0]["text"]
    found = parsed(call(http, url, "search_docs", {"query": "pods", "corpus": "kubernetes"}))["hits"]
    assert found and {h["corpus"] for h in found} == {"kubernetes"}


def test_a_search_without_corpus_ranks_the_corpora_whose_pages_match_and_says_which(corpora, http):
    """Corpora without a semantic model's vectors are routed by the words of their pages."""
    url = f"{corpora}/mcp/"
    found = parsed(call(http, url, "search_docs", {"query": "declare a dependency with Depends", "limit": 50}))
    assert found["hits"] and {h["corpus"] for h in found["hits"]} == {"fastapi"}
    assert found["notice"].startswith("Ranked fastapi of the 3 corpora (those that best match the query)")
    found = parsed(call(http, url, "search_docs", {"query": "X-RateLimit-Remaining", "limit": 50}))
    assert found["hits"] and {h["corpus"] for h in found["hits"]} == {"sample"}


def test_a_search_without_corpus_merges_every_corpus_and_hits_keep_their_chunk_ids(corpora, http, settings):
    settings.DOCSMCP_SEARCH_ROUTE_TOP = 0  # every corpus ranked
    url = f"{corpora}/mcp/"
    merged = parsed(call(http, url, "search_docs", {"query": "dependency injection pods", "limit": 50}))
    corpora_hit = {h["corpus"] for h in merged["hits"]}
    assert {"fastapi", "kubernetes"} <= corpora_hit
    scores = [h["score"] for h in merged["hits"]]
    assert scores == sorted(scores, reverse=True)
    result = call(http, url, "search_docs", {"query": "dependency injection pods", "limit": 50})
    links = {block["uri"] for block in result["content"][1:]}
    assert "docs://fastapi/dependencies.md" in links and "docs://kubernetes/pods.md" in links
    own = parsed(call(http, f"{corpora}/mcp/c/fastapi/", "search_docs",
                      {"query": "dependency injection pods", "limit": 50}))["hits"]
    fastapi = [h for h in merged["hits"] if h["corpus"] == "fastapi"]
    assert [(h["chunk_id"], h["filepath"]) for h in fastapi] == [(h["chunk_id"], h["filepath"]) for h in own]

    first = fastapi[0]
    read = call(http, url, "get_doc", {"chunk_id": first["chunk_id"], "corpus": "fastapi"})
    assert read["isError"] is False and "Depends()" in read["content"][0]["text"]
    # Without `corpus`, get_doc reads the default corpus, as before.
    assert call(http, url, "get_doc", {"chunk_id": first["chunk_id"]})["isError"] is True


def test_paging_a_merged_search_neither_skips_nor_repeats(corpora, http):
    url = f"{corpora}/mcp/"
    whole = parsed(call(http, url, "search_docs", {"query": "pods dependency payments", "limit": 12}))["hits"]
    pages, cursor = [], None
    while True:
        args = {"query": "pods dependency payments", "limit": 4}
        if cursor:
            args["cursor"] = cursor
        page = parsed(call(http, url, "search_docs", args))
        pages += page["hits"]
        cursor = page["next_cursor"]
        if not cursor or len(pages) >= 12:
            break
    key = [(h["corpus"], h["chunk_id"]) for h in pages[:12]]
    assert key == [(h["corpus"], h["chunk_id"]) for h in whole]
    other = call(http, url, "search_docs", {"query": "something else", "cursor": cursor or "x.y"})
    assert other["isError"] is True


def test_a_key_limited_to_one_corpus_never_sees_the_others(corpora, http, settings):
    _row, key = create_api_key("fastapi-only", ["read"], corpora=["fastapi"])
    url = f"{corpora}/mcp/"
    listed = parsed(call(http, url, "list_corpora", {"query": "kubernetes pods"}, key))["corpora"]
    assert [c["name"] for c in listed] == ["fastapi"]
    schema = tools(http, url, key)["search_docs"]
    assert schema["inputSchema"]["properties"]["corpus"]["enum"] == ["fastapi"]
    assert "kubernetes" not in json.dumps(schema) and "sample" not in schema["description"]
    hits = parsed(call(http, url, "search_docs", {"query": "pods deployments kubernetes", "limit": 50}, key))["hits"]
    assert {h["corpus"] for h in hits} <= {"fastapi"}
    for tool, args in [("search_docs", {"query": "pods", "corpus": "kubernetes"}),
                       ("get_doc", {"chunk_id": "pods.md#pods", "corpus": "kubernetes"})]:
        refused = call(http, url, tool, args, key)
        assert refused["isError"] is True
        assert "sample" not in refused["content"][0]["text"], refused

    settings.DOCSMCP_CORPUS_ENUM_MAX = 0  # a free string: the handler refuses it, suggesting only what the key sees
    refused = call(http, url, "search_docs", {"query": "pods", "corpus": "kubernetes"}, key)
    assert refused["content"][0]["text"] == "unknown corpus 'kubernetes'; call list_corpora for the corpora you can search."
    refused = call(http, url, "get_doc", {"chunk_id": "x", "corpus": "fastapy"}, key)
    assert refused["content"][0]["text"] == "unknown corpus 'fastapy'; did you mean 'fastapi'?"


def test_with_more_corpora_than_one_search_covers_it_searches_those_that_best_match(corpora, http, settings):
    settings.DOCSMCP_SEARCH_ALL_MAX = 1
    url = f"{corpora}/mcp/"
    found = parsed(call(http, url, "search_docs", {"query": "kubernetes pods deployment"}))
    assert found["hits"] and {h["corpus"] for h in found["hits"]} == {"kubernetes"}
    assert found["notice"].startswith("Searched the 1 of 3 corpora that best match the query (kubernetes)")
    nothing = call(http, url, "search_docs", {"query": "zyzzyva"})
    assert nothing["isError"] is True and "call list_corpora and pass `corpus`" in nothing["content"][0]["text"]


def test_a_search_across_more_corpora_than_it_ranks_ranks_those_that_hold_the_answer(corpora, http, settings,
                                                                                     tmp_path):
    from django.core.management import call_command

    # Two corpora embedded with the local model, routed by their chunks' cosines; the three others have
    # word-hash vectors, routed by the words of their pages: one of each kind is ranked.
    for name, pages in (("web", FASTAPI_PAGES), ("cluster", KUBE_PAGES)):
        call_command("build_index", "--corpus", name, "--source", str(write_pages(tmp_path / name, pages)),
                     "--embedding-provider", "local", "--full", "--no-progress", stdout=io.StringIO())
    url = f"{corpora}/mcp/"
    settings.DOCSMCP_SEARCH_ROUTE_TOP = 1
    for query, routed, worded in [("dependency injection with Depends", "web", "fastapi"),
                                  ("roll out a deployment of pods", "cluster", "kubernetes")]:
        found = parsed(call(http, url, "search_docs", {"query": query, "limit": 50}))
        searched = {h["corpus"] for h in found["hits"]}
        assert searched == {routed, worded}, (query, found)
        # The reply says where its hits come from.
        ranked = ", ".join(sorted([routed, worded]))
        assert found["notice"].startswith(f"Ranked {ranked} of the 5 corpora (those that best match the query); "
                                          "pass `corpus` to search another."), found["notice"]
    settings.DOCSMCP_SEARCH_ROUTE_TOP = 0  # every corpus ranked
    hits = parsed(call(http, url, "search_docs", {"query": "dependency injection pods", "limit": 50}))["hits"]
    assert {"web", "cluster", "fastapi", "kubernetes"} <= {h["corpus"] for h in hits}


def test_a_question_another_corpus_holds_is_not_covered_and_names_that_corpus(corpora, http, settings, tmp_path):
    """Asked of the Kubernetes docs, a FastAPI question finds Kubernetes pages that share its words
    ("inject", "configuration"); the FastAPI docs embedded by the same model beside them are closer to it,
    by meaning and by words, so the verdict says so and names them. Only to a caller who may read them."""
    from django.core.management import call_command

    for name, pages in (("web", FASTAPI_PAGES), ("cluster", KUBE_PAGES)):
        call_command("build_index", "--corpus", name, "--source", str(write_pages(tmp_path / name, pages)),
                     "--embedding-provider", "local", "--full", "--no-progress", stdout=io.StringIO())
    url = f"{corpora}/mcp/"
    parsed(call(http, url, "search_docs", {"query": "path parameters", "corpus": "web"}))  # open, as warming does
    asked = {"query": "How do I inject a dependency into a route with Depends()?", "corpus": "cluster"}
    found = parsed(call(http, url, "search_docs", asked))
    assert found["hits"] and {h["chunk_id"].split("#")[0] for h in found["hits"]} <= set(KUBE_PAGES)
    assert found["coverage"]["verdict"] == "not_covered" and found["coverage"]["elsewhere"] == "web"
    assert "the corpus `web` on this server is closer to it" in found["coverage"]["notice"]

    answered = parsed(call(http, url, "search_docs", {"query": "How does a Deployment roll out updates to its Pods?",
                                                      "corpus": "cluster"}))
    assert answered["coverage"]["verdict"] != "not_covered" and "elsewhere" not in answered["coverage"]

    _row, key = create_api_key("cluster-only", ["read"], corpora=["cluster"])
    alone = parsed(call(http, url, "search_docs", asked, key))
    assert "elsewhere" not in alone["coverage"]  # `web` is not the key's to know of


def test_a_full_text_corpus_is_judged_with_its_share_of_the_question_words(corpora, http, tmp_path):
    """Two full-text corpora beside the word-hash ones: a search of one is scored with its share of the
    question's word evidence among the server's corpora (coverage.with_word_share), so a payments
    question asked of a few Kubernetes pages scores lower than those pages alone would score it."""
    import shutil

    from django.core.management import call_command

    from corpus.models import Corpus
    from retrieval.search.engine import SearchRequest, search
    from retrieval.search.index import Index
    from tests.conftest import ROOT, SAMPLE_DOCS

    for name, source in (("payments-text", SAMPLE_DOCS), ("kube-text", ROOT / "tests/corpora/sitegen/hugo/content/docs")):
        shutil.copytree(source, tmp_path / name)
        call_command("build_index", "--corpus", name, "--source", str(tmp_path / name), "--embedding-provider",
                     "none", "--full", "--no-progress", stdout=io.StringIO())
    url, query = f"{corpora}/mcp/", "How do I retry a failed request with backoff?"
    assert parsed(call(http, url, "search_docs", {"query": query, "corpus": "payments-text"}))["coverage"][
        "verdict"] == "covered"
    asked = parsed(call(http, url, "search_docs", {"query": query, "corpus": "kube-text"}))["coverage"]
    alone = search(Index(Path(Corpus.objects.get(name="kube-text").active_build.index_path)), SearchRequest(query),
                   cursor_secret=b"test").coverage
    assert asked["verdict"] == "not_covered" and asked["score"] < alone.score


def test_list_corpora_follows_the_catalog_and_reads_it_once(corpora, http, tmp_path):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from corpus.models import Corpus
    from corpus.serving import corpus_cards

    url = f"{corpora}/mcp/"
    assert [c["name"] for c in parsed(call(http, url, "list_corpora", {}))["corpora"]] == ["fastapi", "kubernetes",
                                                                                          "sample"]
    corpus_cards()
    with CaptureQueriesContext(connection) as queries:
        corpus_cards("kubernetes pods")
    assert len(queries) == 1  # the catalog's signature; the cards and their profiles are kept

    fastapi = Corpus.objects.get(name="fastapi")
    fastapi.description = "FastAPI: modern Python web framework"
    fastapi.save()
    listed = parsed(call(http, url, "list_corpora", {"query": "modern framework"}))["corpora"]
    assert listed[0]["name"] == "fastapi" and listed[0]["description"] == "FastAPI: modern Python web framework"
    build("helm", write_pages(tmp_path / "helm", {"charts.md": "# Charts\n\nA Helm chart packages Kubernetes "
                                                                "manifests.\n"}))
    listed = parsed(call(http, url, "list_corpora", {"query": "helm charts"}))["corpora"]
    assert listed[0]["name"] == "helm" and listed[0]["pages"] == 1


def test_feedback_at_the_shared_endpoint_is_filed_under_the_corpus_it_is_about(corpora, http, settings, tmp_path):
    from corpus import querylog
    from corpus.models import Feedback

    settings.DOCSMCP_QUERY_LOG = querylog.FULL
    url = f"{corpora}/mcp/"
    schema = tools(http, url)["docs_feedback"]["inputSchema"]["properties"]["corpus"]
    assert schema["enum"] == ["fastapi", "kubernetes", "sample"]
    hits = parsed(call(http, url, "search_docs", {"query": "dependency injection Depends", "limit": 50}))["hits"]
    fastapi = next(h for h in hits if h["corpus"] == "fastapi")
    replies = [call(http, url, "docs_feedback", args) for args in (
        {"verdict": "helpful", "chunk_id": fastapi["chunk_id"]},  # the corpus whose page the chunk is on
        {"verdict": "wrong", "chunk_id": "pods.md#pods", "corpus": "kubernetes"},  # named
        {"verdict": "missing", "query": "how do I refund?"},  # about no chunk: the default corpus
    )]
    assert [r["isError"] for r in replies] == [False, False, False]
    assert querylog.flush()
    filed = {(f.verdict, f.corpus, f.chunk_id) for f in Feedback.objects.all()}
    assert filed == {("helpful", "fastapi", fastapi["chunk_id"]), ("wrong", "kubernetes", "pods.md#pods"),
                     ("missing", "sample", "")}

    build("kubernetes-copy", write_pages(tmp_path / "kubernetes-copy", KUBE_PAGES))  # a second corpus with pods.md
    ambiguous = call(http, url, "docs_feedback", {"verdict": "wrong", "chunk_id": "pods.md#pods"})
    assert ambiguous["isError"] is True
    assert ambiguous["content"][0]["text"].startswith("Several corpora have the page of chunk 'pods.md#pods' "
                                                      "(kubernetes, kubernetes-copy); nothing was stored.")
    settings.DOCSMCP_CORPUS_ENUM_MAX = 0  # a free string: the handler suggests the nearest name
    unknown = call(http, url, "docs_feedback", {"verdict": "wrong", "corpus": "kubernets"})
    assert unknown["content"][0]["text"] == "unknown corpus 'kubernets'; did you mean 'kubernetes'?"
    _row, key = create_api_key("fastapi-only", ["read"], corpora=["fastapi"])
    limited = call(http, url, "docs_feedback", {"verdict": "wrong", "chunk_id": "pods.md#pods"}, key)
    assert limited["isError"] is False  # kubernetes is not the key's: the report is the default corpus's
    assert querylog.flush() and Feedback.objects.count() == 4
