"""The query log: every search and read call is recorded off the request path, on every surface.

Calls go through the real transports (a live HTTP server, the REST API, a stdio subprocess, the eval
runner) against the sample build; the writer thread writes to this session's PostgreSQL database
(committed rows, hence transactional_db via live_server), and `querylog.flush()` waits for it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from django.core.management import call_command

from corpus import querylog
from corpus.apikeys import create_api_key
from corpus.models import Feedback, QueryRecord
from tests import fixtures_mcp, profile_fixtures, services
from tests.corpus import test_degraded
from tests.fixtures_mcp import modern_post
from tests.profile_fixtures import call, rpc

docs_server = fixtures_mcp.docs_server  # bound here so the tests below can request them by name
built_corpora = profile_fixtures.built_corpora
doc_corpora = profile_fixtures.doc_corpora
live_url = profile_fixtures.live_url
own_database_server = test_degraded.own_database_server
UA = {"User-Agent": "agent-under-test/2.1"}


@pytest.fixture
def logging_on(transactional_db, settings):
    settings.DOCSMCP_QUERY_LOG = querylog.FULL
    querylog.flush()
    QueryRecord.objects.all().delete()
    Feedback.objects.all().delete()
    yield settings
    querylog.flush()


def records(**filters) -> list[QueryRecord]:
    assert querylog.flush(), querylog.stats()
    return list(QueryRecord.objects.filter(**filters).order_by("at", "pk"))


def test_search_and_get_doc_over_http_are_recorded_with_their_context(logging_on, docs_server):
    url = f"{docs_server}/mcp/"
    _row, key = create_api_key("support-bot", ["read"])
    with httpx.Client(timeout=60) as http:
        found = call(http, url, "search_docs", {"query": "retry backoff", "limit": 3, "language": "python"},
                     headers={**UA, "Authorization": f"Bearer {key}"})["result"]
        chunk_id = found["structuredContent"]["hits"][0]["chunk_id"]
        call(http, url, "get_doc", {"chunk_id": chunk_id}, headers=UA)
        call(http, url, "search_docs", {"query": "zzqqxx", "language": "go"}, headers=UA)
        modern_post(http, url, "tools/call", {"name": "search_docs", "arguments": {"query": "install"}})

    search, read, empty, modern = records()
    assert (search.tool, search.surface, search.profile) == ("search_docs", "http", "docs")
    assert search.corpus == "sample" and search.build_id
    assert search.version == (found["structuredContent"]["hits"][0]["version"] or "")  # the build's, as served
    assert search.query == "retry backoff"
    assert search.filters == {"limit": 3, "language": "python"}
    assert search.hits == 3 and [h[0] for h in search.top] == [h["chunk_id"] for h in found["structuredContent"]["hits"]]
    assert search.top_score == max(h[1] for h in search.top) and search.latency_ms > 0 and not search.is_error
    assert search.client == "agent-under-test/2.1"  # a handshake-era tools/call names no clientInfo
    assert search.key_name == "support-bot" and key not in str(vars(search))
    assert not search.is_eval

    assert (read.tool, read.target, read.query, read.hits, read.key_name) == ("get_doc", chunk_id, "", 1, "")
    assert empty.hits == 0 and empty.top == [] and empty.top_score is None
    assert modern.client == "pytest/1.0"  # 2026-07-28: the request's own _meta clientInfo


def test_a_failing_call_is_recorded_as_an_error(logging_on, docs_server):
    with httpx.Client(timeout=60) as http:
        result = call(http, f"{docs_server}/mcp/", "get_doc", {"chunk_id": "guides/nope.md#nothing"})["result"]
    assert result["isError"]
    (row,) = records()
    assert row.is_error and row.tool == "get_doc" and row.target == "guides/nope.md#nothing" and row.hits == 0


def test_no_text_keeps_everything_but_the_words(logging_on, docs_server):
    logging_on.DOCSMCP_QUERY_LOG = querylog.NO_TEXT
    with httpx.Client(timeout=60) as http:
        call(http, f"{docs_server}/mcp/", "search_docs", {"query": "my customer's card 4111", "language": "python"})
    (row,) = records()
    assert row.query == "" and row.filters == {"limit": 10, "language": "python"} and row.hits > 0 and row.top


def test_off_records_nothing(logging_on, docs_server):
    logging_on.DOCSMCP_QUERY_LOG = querylog.OFF
    with httpx.Client(timeout=60) as http:
        assert not call(http, f"{docs_server}/mcp/", "search_docs", {"query": "install"})["result"]["isError"]
    assert records() == [] and querylog.stats()["queued"] == 0


def test_rest_search_and_chunk_reads_are_recorded(logging_on, docs_server):
    _row, key = create_api_key("portal", ["read"])
    with httpx.Client(timeout=60, headers=UA) as http:
        response = http.post(f"{docs_server}/api/v1/corpora/sample/search", json={"query": "install",
                             "filters": {"language": "python"}}, headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200
        chunk_id = response.json()["hits"][0]["chunk_id"]
        assert http.get(f"{docs_server}/api/v1/corpora/sample/chunk", params={"chunk_id": chunk_id}).status_code == 200
        assert http.get(f"{docs_server}/api/v1/corpora/sample/search",
                        params={"query": "x", "filters": "[1]"}).status_code == 400
    search, read, bad = records()
    assert (search.surface, search.tool, search.query, search.filters) == ("rest", "search_docs", "install",
                                                                         {"language": "python"})
    assert search.key_name == "portal" and search.client == "agent-under-test/2.1" and search.hits > 0
    assert (read.tool, read.target, read.key_name) == ("get_doc", chunk_id, "")
    assert bad.is_error and bad.corpus == "sample"


def test_a_full_buffer_drops_and_counts_without_blocking_the_search(logging_on, docs_server, monkeypatch):
    import threading
    import time

    logging_on.DOCSMCP_QUERY_LOG_BUFFER = 2
    stuck = threading.Event()
    monkeypatch.setattr(querylog, "_write", lambda batch: stuck.wait(60))  # a database that does not answer
    dropped = querylog.stats()["dropped"]
    with httpx.Client(timeout=60) as http:
        url = f"{docs_server}/mcp/"
        assert not call(http, url, "search_docs", {"query": "taken by the writer"})["result"]["isError"]
        for _ in range(100):  # the writer takes that record, and hangs writing it
            if querylog.stats()["queued"] == 0:
                break
            time.sleep(0.05)
        for _ in range(5):
            assert not call(http, url, "search_docs", {"query": "install"})["result"]["isError"]
    assert querylog.stats()["queued"] == 2 and querylog.stats()["dropped"] == dropped + 3
    monkeypatch.undo()
    stuck.set()
    assert [r.query for r in records()] == ["install", "install"]


def test_retention_deletes_what_is_older_than_the_setting(logging_on, sample_corpus):
    now = datetime.now(UTC)
    QueryRecord.objects.bulk_create([QueryRecord(at=now - timedelta(days=days), corpus="sample", tool="search_docs",
                                                 query=f"{days} days") for days in (1, 89, 91, 400)])
    Feedback.objects.bulk_create([Feedback(at=now - timedelta(days=days), corpus="sample", verdict="missing")
                                  for days in (1, 120)])
    logging_on.DOCSMCP_QUERY_LOG_DAYS = 90
    call_command("prune_query_log")
    assert sorted(QueryRecord.objects.values_list("query", flat=True)) == ["1 days", "89 days"]
    assert Feedback.objects.count() == 1
    logging_on.DOCSMCP_QUERY_LOG_DAYS = 0  # keep forever
    assert querylog.prune() == {"records": 0, "feedback": 0}
    assert querylog.prune(days=2) == {"records": 1, "feedback": 0}
    call_command("prune_query_log", "--all")
    assert QueryRecord.objects.count() == Feedback.objects.count() == 0


# --- every profile's search and read tools ------------------------------------------------------------


def _tool(http, url: str, name: str, arguments: dict, **kwargs) -> dict:
    body = call(http, url, name, arguments, **kwargs)
    assert "result" in body, body
    return body["result"]


def test_documents_and_techdoc_searches_and_reads_are_recorded_per_corpus(logging_on, doc_corpora, live_url):
    with httpx.Client(timeout=60) as http:
        docs = f"{live_url}/mcp/documents/"
        assert not _tool(http, docs, "documents_search", {"query": "shared_buffers", "collections": ["pg", "ubuntu"],
                                                        "limit": 3})["isError"]
        assert not _tool(http, docs, "documents_get_document", {"collection": "pg", "document": "indexes.md"})["isError"]
        assert not _tool(http, docs, "documents_get_section", {"collection": "ubuntu", "document": "packages.md",
                                                             "section": "apt"})["isError"]
        assert not _tool(http, docs, "documents_list_collections", {})["isError"]  # not a search or a read
        techdoc = f"{live_url}/mcp/techdoc/"
        assert not _tool(http, techdoc, "search_documentation", {"query": "apt install", "doc_type": "ubuntu"})["isError"]
        assert not _tool(http, techdoc, "get_document", {"document_id": "ubuntu/packages.md"})["isError"]
    rows = records()
    assert [(r.profile, r.tool, r.corpus) for r in rows] == [
        ("documents", "documents_search", "postgresql"), ("documents", "documents_search", "ubuntu"),
        ("documents", "documents_get_document", "postgresql"), ("documents", "documents_get_section", "ubuntu"),
        ("techdoc", "search_documentation", "ubuntu"), ("techdoc", "get_document", "ubuntu")]
    search_pg, search_ubuntu, document, section, techdoc_search, techdoc_read = rows
    assert search_pg.query == search_ubuntu.query == "shared_buffers" and search_pg.at == search_ubuntu.at
    assert search_pg.filters == {"collections": ["pg", "ubuntu"], "limit": 3, "hybridSearch": True}
    assert search_pg.version == "16" or search_pg.version == ""
    assert (document.target, document.hits) == ("indexes.md", 1)
    assert section.target == "packages.md#apt"
    assert techdoc_search.query == "apt install" and techdoc_search.hits > 0
    assert techdoc_read.target == "ubuntu/packages.md"


def test_a_batch_records_each_query(logging_on, doc_corpora, live_url):
    with httpx.Client(timeout=60) as http:
        result = _tool(http, f"{live_url}/mcp/documents/", "documents_search_batch", {"queries": [
            {"query": "vacuum", "collections": ["postgresql"]}, {"query": "apt", "collections": ["postgresql"]}]})
    assert not result["isError"]
    assert [(r.tool, r.corpus, r.query) for r in records()] == [
        ("documents_search_batch", "postgresql", "vacuum"), ("documents_search_batch", "postgresql", "apt")]


def test_citeloom_searches_are_recorded(logging_on, index_root, live_url):
    from corpus.chunkstore import chunks_store, project_create

    corpus = project_create(project="citeloom/notes", embed_model="hash/feature-hash-v1", dimensions=64)
    items = [{"id": f"n-{i}", "text": text, "metadata": {"project": "citeloom/notes", "embed_model": "hash/feature-hash-v1",
              "source": {"path": "notes.pdf", "title": "Notes"}}} for i, text in enumerate(["ports and adapters",
                                                                                          "entities and use cases"])]
    from retrieval.embeddings import get_provider

    vectors = get_provider("hash", dimensions=64).embed([i["text"] for i in items])
    for item, vector in zip(items, vectors, strict=True):
        item["embedding"] = [float(v) for v in vector]
    chunks_store(corpus=corpus, items=items, embed_model="hash/feature-hash-v1", allow_model_migration=False)
    with httpx.Client(timeout=60) as http:
        found = _tool(http, f"{live_url}/mcp/citeloom/", "find_chunks", {"project": "citeloom/notes",
                                                                        "query": "adapters"})
        assert not found["isError"], found
        _tool(http, f"{live_url}/mcp/citeloom/", "list_projects", {})
    (row,) = records()
    assert (row.profile, row.tool, row.corpus, row.query) == ("citeloom", "find_chunks", corpus.name, "adapters")
    assert row.hits == 2 and {h[0] for h in row.top} == {"n-0", "n-1"}


# --- stdio and evals --------------------------------------------------------------------------------


@pytest.mark.slow
def test_stdio_calls_are_recorded_with_the_client_that_initialized(logging_on, sample_corpus, settings):
    import asyncio

    from mcp import Client

    from tests.mcp_endpoint.test_mcp_stdio import _server

    async def session():
        async with Client(_server(settings), mode="legacy") as client:
            await client.call_tool("search_docs", {"query": "retry backoff", "limit": 2})

    asyncio.run(session())  # the process writes what it holds before it exits
    (row,) = records()
    assert (row.surface, row.tool, row.query, row.hits, row.key_name) == ("stdio", "search_docs", "retry backoff", 2,
                                                                         "stdio (local operator)")
    assert row.client.startswith("mcp") and not row.is_eval


def test_eval_runs_are_marked_in_process_and_over_http(logging_on, docs_server, settings):
    from evals.targets import HttpTarget, InProcessTarget

    with InProcessTarget("sample") as target:
        target.call("search_docs", {"query": "install"})
    url = f"{docs_server}/mcp/"
    with HttpTarget(url, headers={querylog.EVAL_HEADER: querylog.eval_token()}) as target:
        target.call("search_docs", {"query": "signed eval"})
    with HttpTarget(url, headers={querylog.EVAL_HEADER: "1"}) as target:  # anonymous: not believed
        target.call("search_docs", {"query": "anonymous claim"})
    _row, key = create_api_key("ci", ["read", "build"])
    with HttpTarget(url, headers={querylog.EVAL_HEADER: "1", "Authorization": f"Bearer {key}"}) as target:
        target.call("search_docs", {"query": "build key"})
    assert [(r.surface, r.query, r.is_eval) for r in records()] == [
        ("eval", "install", True), ("http", "signed eval", True), ("http", "anonymous claim", False),
        ("http", "build key", True)]
    assert all(r.client == "docsmcp-evals/1.0" for r in records())


def test_an_http_eval_run_of_this_server_marks_its_calls(logging_on, docs_server, settings):
    from evals.execution import make_target
    from evals.models import EvalRun

    settings.MCP_SERVER_PORT = int(docs_server.rsplit(":", 1)[1])
    run = EvalRun(mode=EvalRun.MODE_HTTP, target_url=f"http://127.0.0.1:{settings.MCP_SERVER_PORT}/mcp/")
    with make_target(run) as target:
        target.call("search_docs", {"query": "install"})
    (row,) = records()
    assert row.is_eval and row.surface == "http"


# --- the feedback tools -----------------------------------------------------------------------------


def test_docs_feedback_is_stored_with_the_context_of_a_call(logging_on, docs_server):
    url = f"{docs_server}/mcp/"
    with httpx.Client(timeout=60) as http:
        listed = {t["name"]: t for t in rpc(http, url, "tools/list", {}).json()["result"]["tools"]}
        tool = listed["docs_feedback"]
        assert tool["annotations"]["readOnlyHint"] is False and tool["annotations"]["destructiveHint"] is False
        assert tool["inputSchema"]["properties"]["verdict"]["enum"] == ["helpful", "not_helpful", "wrong",
                                                                        "outdated", "missing"]
        assert "missing" in tool["description"] and "search_docs" in tool["description"]
        chunk_id = _tool(http, url, "search_docs", {"query": "install"})["structuredContent"]["hits"][0]["chunk_id"]
        reply = _tool(http, url, "docs_feedback", {"verdict": "outdated", "chunk_id": chunk_id, "query": "how to install",
                                                   "comment": "still says v2"}, headers=UA)  # anonymous
    assert not reply["isError"] and reply["content"][0]["text"].startswith("Feedback received (outdated on ")
    assert querylog.flush()
    (item,) = Feedback.objects.all()
    assert (item.verdict, item.chunk_id, item.filepath, item.query, item.comment) == (
        "outdated", chunk_id, chunk_id.partition("#")[0], "how to install", "still says v2")
    assert (item.corpus, item.surface, item.profile, item.tool, item.client, item.key_name) == (
        "sample", "http", "docs", "docs_feedback", "agent-under-test/2.1", "")
    assert item.build_id and item.at
    assert len(records()) == 1  # the search; feedback is not a search


@pytest.mark.parametrize("arguments, message", [
    ({"verdict": "meh"}, "Argument 'verdict' must be one of"),
    ({"verdict": "wrong", "comment": "x" * 2001}, "must be at most 2000 characters long; got 2001"),
    ({}, "verdict"),
])
def test_docs_feedback_refuses_bad_arguments_saying_what_to_change(logging_on, docs_server, arguments, message):
    with httpx.Client(timeout=60) as http:
        reply = call(http, f"{docs_server}/mcp/", "docs_feedback", arguments, version="2025-11-25")["result"]
        legacy = call(http, f"{docs_server}/mcp/", "docs_feedback", arguments, version="2025-06-18")
    assert reply["isError"] and message in reply["content"][0]["text"]
    assert legacy["error"]["code"] == -32602 and message in legacy["error"]["message"]
    assert querylog.flush() and Feedback.objects.count() == 0


def test_docs_feedback_has_its_own_rate_limit(logging_on, docs_server):
    logging_on.DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE = 2
    with httpx.Client(timeout=60) as http:
        replies = [_tool(http, f"{docs_server}/mcp/", "docs_feedback", {"verdict": "helpful"}) for _ in range(3)]
        search = _tool(http, f"{docs_server}/mcp/", "search_docs", {"query": "install"})
    assert [r["isError"] for r in replies] == [False, False, True]
    assert "Feedback rate limit exceeded: 2 reports per minute" in replies[2]["content"][0]["text"]
    assert not search["isError"]  # the request limit is another bucket
    assert querylog.flush() and Feedback.objects.count() == 2


def test_no_text_keeps_the_verdict_but_not_the_words(logging_on, docs_server):
    logging_on.DOCSMCP_QUERY_LOG = querylog.NO_TEXT
    with httpx.Client(timeout=60) as http:
        _tool(http, f"{docs_server}/mcp/", "docs_feedback", {"verdict": "missing", "query": "private question",
                                                             "comment": "my email is x@y.z"})
    assert querylog.flush()
    (item,) = Feedback.objects.all()
    assert (item.verdict, item.query, item.comment) == ("missing", "", "")


def test_feedback_with_the_log_off_says_nothing_was_stored(logging_on, docs_server):
    logging_on.DOCSMCP_QUERY_LOG = querylog.OFF
    with httpx.Client(timeout=60) as http:
        reply = _tool(http, f"{docs_server}/mcp/", "docs_feedback", {"verdict": "missing"})
    assert not reply["isError"] and "nothing was stored" in reply["content"][0]["text"]
    assert Feedback.objects.count() == 0


def test_documents_and_techdoc_feedback_name_their_corpus(logging_on, doc_corpora, live_url):
    with httpx.Client(timeout=60) as http:
        docs = f"{live_url}/mcp/documents/"
        ambiguous = _tool(http, docs, "documents_feedback", {"verdict": "missing"})
        by_alias = _tool(http, docs, "documents_feedback", {"verdict": "wrong", "collection": "pg"})
        by_page = _tool(http, docs, "documents_feedback", {"verdict": "helpful", "chunk_id": "packages.md#apt"})
        unknown = _tool(http, docs, "documents_feedback", {"verdict": "wrong", "collection": "nope"})
        techdoc = f"{live_url}/mcp/techdoc/"
        tech = _tool(http, techdoc, "submit_feedback", {"verdict": "outdated", "doc_type": "ubuntu"})
        tech_unknown = _tool(http, techdoc, "submit_feedback", {"verdict": "outdated", "doc_type": "nope"})
    assert ambiguous["isError"] and "pass collection (one of postgresql, sample, ubuntu)" in ambiguous["content"][0]["text"]
    assert not by_alias["isError"] and not by_page["isError"] and not tech["isError"]
    assert unknown["isError"] and 'Collection "nope" not found' in unknown["content"][0]["text"]
    assert tech_unknown["isError"] and tech_unknown["is_error"] is True and "Unknown doc_type 'nope'" in tech_unknown["error"]
    assert querylog.flush()
    assert sorted(Feedback.objects.values_list("tool", "corpus", "verdict")) == [
        ("documents_feedback", "postgresql", "wrong"), ("documents_feedback", "ubuntu", "helpful"),
        ("submit_feedback", "ubuntu", "outdated")]


# --- a database outage --------------------------------------------------------------------------------


@pytest.fixture
def server_logs_queries(monkeypatch):
    monkeypatch.setenv("DOCSMCP_TEST_QUERY_LOG", querylog.FULL)


@pytest.mark.slow
def test_calls_during_a_database_outage_answer_and_are_written_once_it_is_back(server_logs_queries,
                                                                             own_database_server):
    import time

    import psycopg

    from tests.corpus.test_degraded import _admin, tool

    base, name, key = own_database_server
    url = f"{base}/mcp/"

    def logged() -> list[tuple[str, str]]:
        with psycopg.connect(services.database_url(name), autocommit=True) as conn:
            return [tuple(row) for row in conn.execute(
                "SELECT query, target FROM corpus_queryrecord ORDER BY at, id").fetchall()]

    def wait_for(count: int) -> list[tuple[str, str]]:
        for _ in range(100):
            rows = logged()
            if len(rows) >= count:
                return rows
            time.sleep(0.2)
        return logged()

    with httpx.Client(timeout=60) as http:
        assert not tool(http, url, "search_docs", {"query": "before"}, key)["isError"]
        assert wait_for(1) == [("before", "")]

        _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        _admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        during = tool(http, url, "search_docs", {"query": "during the outage"}, key)
        assert not during["isError"] and during["structuredContent"]["hits"]
        chunk_id = during["structuredContent"]["hits"][0]["chunk_id"]
        assert not tool(http, url, "get_doc", {"chunk_id": chunk_id}, key)["isError"]
        reported = tool(http, url, "docs_feedback", {"verdict": "missing", "query": "during the outage"}, key)
        assert not reported["isError"] and reported["content"][0]["text"].startswith("Feedback received")
        time.sleep(2.5)  # the writer tried, failed, and kept its batch

        _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert wait_for(3) == [("before", ""), ("during the outage", ""), ("", chunk_id)]
    with psycopg.connect(services.database_url(name), autocommit=True) as conn:
        assert conn.execute("SELECT verdict, key_name FROM corpus_feedback").fetchall() == [("missing", "reader")]


def test_a_search_across_corpora_at_mcp_records_each_corpus_searched(logging_on, doc_corpora, live_url):
    logging_on.DOCSMCP_SEARCH_ROUTE_TOP = 0  # every corpus ranked, none routed away
    with httpx.Client(timeout=60) as http:
        merged = _tool(http, f"{live_url}/mcp/", "search_docs", {"query": "shared_buffers apt retries"})
        assert not merged["isError"]
        assert not _tool(http, f"{live_url}/mcp/", "search_docs", {"query": "apt", "corpus": "ubuntu"})["isError"]
    rows = records()
    assert sorted((r.tool, r.corpus) for r in rows[:3]) == [
        ("search_docs", "postgresql"), ("search_docs", "sample"), ("search_docs", "ubuntu")]
    shown = {hit["corpus"] for hit in merged["structuredContent"]["hits"]}
    assert all(r.hits > 0 for r in rows[:3] if r.corpus in shown)
    assert (rows[3].tool, rows[3].corpus, rows[3].query) == ("search_docs", "ubuntu", "apt")


def test_a_routed_search_across_corpora_records_only_the_corpus_it_searched(logging_on, doc_corpora, live_url):
    logging_on.DOCSMCP_SEARCH_ROUTE_TOP = 1
    with httpx.Client(timeout=60) as http:
        routed = _tool(http, f"{live_url}/mcp/", "search_docs", {"query": "shared_buffers"})
    assert not routed["isError"]
    shown = {hit["corpus"] for hit in routed["structuredContent"]["hits"]}
    assert shown == {"postgresql"}
    assert [(r.tool, r.corpus) for r in records()] == [("search_docs", "postgresql")]


def test_no_text_stores_a_read_target_only_when_it_names_a_chunk(logging_on, docs_server):
    """#47: free text sent as get_doc's chunk_id is not kept in no-text mode; a real chunk ID is."""
    logging_on.DOCSMCP_QUERY_LOG = querylog.NO_TEXT
    url = f"{docs_server}/mcp/"
    with httpx.Client(timeout=60) as http:
        chunk_id = _tool(http, url, "search_docs", {"query": "install"})["structuredContent"]["hits"][0]["chunk_id"]
        assert _tool(http, url, "get_doc", {"chunk_id": "my customer's card 4111.md#x"})["isError"]
        assert not _tool(http, url, "get_doc", {"chunk_id": chunk_id})["isError"]
        assert http.get(f"{docs_server}/api/v1/corpora/sample/chunk",
                        params={"chunk_id": "secret plan.md#x"}).status_code in (400, 404)
    _search, typed, read, rest = records()
    assert (typed.tool, typed.is_error, typed.target) == ("get_doc", True, "")
    assert (read.target, read.is_error) == (chunk_id, False)
    assert (rest.surface, rest.is_error, rest.target) == ("rest", True, "")
    assert "4111" not in str([vars(r) for r in records()]) and "secret plan" not in str([vars(r) for r in records()])


def test_full_mode_still_keeps_what_a_failed_read_asked_for(logging_on, docs_server):
    with httpx.Client(timeout=60) as http:
        assert _tool(http, f"{docs_server}/mcp/", "get_doc", {"chunk_id": "guides/nope.md#typed"})["isError"]
    (row,) = records()
    assert row.target == "guides/nope.md#typed"


def test_no_text_feedback_keeps_only_ids_that_resolve(logging_on, docs_server):
    logging_on.DOCSMCP_QUERY_LOG = querylog.NO_TEXT
    url = f"{docs_server}/mcp/"
    with httpx.Client(timeout=60) as http:
        chunk_id = _tool(http, url, "search_docs", {"query": "install"})["structuredContent"]["hits"][0]["chunk_id"]
        page = chunk_id.partition("#")[0]
        for sent in (chunk_id, f"{page}#my password is hunter2", "my private notes.md#x"):
            assert not _tool(http, url, "docs_feedback", {"verdict": "wrong", "chunk_id": sent})["isError"]
    assert querylog.flush()
    kept = [(f.chunk_id, f.filepath) for f in Feedback.objects.order_by("at", "pk")]
    assert kept == [(chunk_id, page), ("", page), ("", "")]


def test_a_search_record_keeps_the_coverage_verdict_the_agent_saw(logging_on, docs_server):
    with httpx.Client(timeout=60) as http:
        found = _tool(http, f"{docs_server}/mcp/", "search_docs", {"query": "install"})["structuredContent"]
    (row,) = records()
    assert (row.coverage, row.coverage_score) == (found["coverage"]["verdict"], found["coverage"]["score"])


def test_the_serving_calls_record_nothing_themselves(logging_on, sample_corpus):
    """The query log is the surface's step: a search or read through corpus.serving alone writes no record."""
    from corpus.serving import corpus_read, corpus_search
    from retrieval.search.engine import SearchRequest

    served = corpus_search("sample", SearchRequest(query="install"))
    corpus_read("sample", served.result.hits[0].chunk_id)
    assert records() == [] and querylog.stats()["queued"] == 0
    assert served.seen.corpus == "sample" and served.seen.coverage[0] == served.result.coverage.verdict
