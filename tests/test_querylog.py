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
from corpus.models import Feedback, QueryRecord
from mcp_endpoint.apikeys import create_api_key
from tests import fixtures_mcp, profile_fixtures
from tests.fixtures_mcp import modern_post
from tests.profile_fixtures import call

docs_server = fixtures_mcp.docs_server  # bound here so the tests below can request them by name
built_corpora = profile_fixtures.built_corpora
doc_corpora = profile_fixtures.doc_corpora
live_url = profile_fixtures.live_url
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
    logging_on.DOCSMCP_QUERY_LOG_BUFFER = 2
    monkeypatch.setattr(querylog, "_ensure_writer", lambda: None)  # a writer that cannot keep up
    dropped = querylog.stats()["dropped"]
    with httpx.Client(timeout=60) as http:
        for _ in range(5):
            assert not call(http, f"{docs_server}/mcp/", "search_docs", {"query": "install"})["result"]["isError"]
    assert querylog.stats()["queued"] == 2 and querylog.stats()["dropped"] == dropped + 3
    monkeypatch.undo()
    assert len(records()) == 2


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
