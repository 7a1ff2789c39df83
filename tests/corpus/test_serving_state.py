"""Serving state has one owner (corpus.serving.STATE): its caches make a warm call read no row, age by
its clock, and go with one `forget`; the active build carries the corpus's coverage thresholds."""

from __future__ import annotations

import json
import shutil

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpus import services
from corpus.errors import CorpusError
from corpus.execution import build_activate
from corpus.models import BuildRun, Corpus
from corpus.serving import POINTER_TTL, STATE, active_index, corpora_search, known_active_paths
from corpus.serving.warm import watch_once
from retrieval.search.engine import SearchRequest

HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"}


def _search(client, path: str, query: str = "refund a payment") -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": query}}}
    response = client.post(path, data=json.dumps(body), content_type="application/json", **HEADERS)
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_a_warm_search_at_a_corpus_url_makes_no_database_query(sample_corpus, client, settings, held_clock,
                                                               django_assert_num_queries):
    """/mcp/c/<corpus>/ checks its corpus like /mcp/ its default one: from the cache while it is fresh."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    assert _search(client, "/mcp/c/sample/")["isError"] is False
    with django_assert_num_queries(0):
        assert _search(client, "/mcp/c/sample/")["structuredContent"]["hits"]


def test_a_corpus_url_checks_its_corpus_again_once_the_cache_is_old(sample_corpus, client, settings, held_clock):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    assert _search(client, "/mcp/c/sample/")["isError"] is False
    Corpus.objects.filter(name="sample").update(name="renamed")
    assert _search(client, "/mcp/c/sample/")["isError"] is False  # within the TTL, as for any pointer
    held_clock[0] += POINTER_TTL
    response = client.post("/mcp/c/sample/", data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                           content_type="application/json", **HEADERS)
    assert response.status_code == 404 and "renamed" in response.content.decode()


def test_refreshing_the_pointers_reads_no_build_report(sample_corpus, client, settings, held_clock):
    """Serving re-reads each corpus row with its active build every POINTER_TTL; the build's per-page
    findings run to hundreds of kilobytes of JSON on a large corpus, and decoding them on every refresh
    cost more CPU than the searches in between."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    BuildRun.objects.filter(pk=sample_corpus.active_build_id).update(
        findings=[{"code": "strategy-default", "message": "x" * 1000}] * 200, timings={"parse": 1.0})
    held_clock[0] += POINTER_TTL
    with CaptureQueriesContext(connection) as queries:
        assert _search(client, "/mcp/")["structuredContent"]["hits"]
    build_reads = [q["sql"] for q in queries.captured_queries if "corpus_buildrun" in q["sql"]]
    assert build_reads, "the refresh reads the active build"
    assert not [sql for sql in build_reads if '"findings"' in sql or '"timings"' in sql]


@pytest.fixture
def second_build(sample_corpus, sample_build_dir, tmp_path) -> BuildRun:
    """A second complete build of the sample corpus, in a directory of its own, not yet active."""
    copy = tmp_path / "second-build"
    shutil.copytree(sample_build_dir, copy)
    old = sample_corpus.active_build
    return BuildRun.objects.create(corpus=sample_corpus, build_id="second", kind=BuildRun.KIND_FULL,
                                   status=BuildRun.COMPLETE, index_path=str(copy), embedding_provider="hash",
                                   embedding=old.embedding, stats=old.stats)


def test_another_workers_activation_is_served_once_the_pointer_is_a_ttl_old(second_build, held_clock):
    first = known_active_paths().get("sample") or str(active_index("sample").path)
    active_index("sample")
    Corpus.objects.filter(name="sample").update(active_build=second_build)  # as another process activates
    held_clock[0] += POINTER_TTL - 0.01
    assert known_active_paths()["sample"] == first and active_index("sample").path.name != "second-build"
    held_clock[0] += 0.01
    assert active_index("sample").path.name == "second-build"


@pytest.mark.django_db(transaction=True)  # the watcher's pass closes a connection in a test's transaction
def test_the_watcher_loads_what_requests_read_so_they_read_no_row_past_the_ttl(sample_corpus, client, settings,
                                                                              held_clock, django_assert_num_queries):
    """With the activation watcher running, requests never wait on the database for a lookup it refreshes;
    should it stall, the requests load their lookups themselves again."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    _search(client, "/mcp/")
    held_clock[0] += POINTER_TTL
    watch_once()
    held_clock[0] += POINTER_TTL * 1.5
    with django_assert_num_queries(0):
        assert _search(client, "/mcp/")["structuredContent"]["hits"]
    held_clock[0] += POINTER_TTL
    with CaptureQueriesContext(connection) as queries:
        assert _search(client, "/mcp/")["structuredContent"]["hits"]
    assert queries.captured_queries


@pytest.mark.django_db(transaction=True)  # the watcher's pass closes a connection in a test's transaction
def test_the_watcher_serves_another_workers_activation_before_any_request_asks(second_build, client, settings,
                                                                                held_clock, django_assert_num_queries):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    _search(client, "/mcp/")
    Corpus.objects.filter(name="sample").update(active_build=second_build)  # as another process activates
    held_clock[0] += POINTER_TTL
    watch_once()
    assert known_active_paths()["sample"] == second_build.index_path
    with django_assert_num_queries(0):
        assert _search(client, "/mcp/")["structuredContent"]["hits"]
    assert active_index("sample").path.name == "second-build"


def test_an_activation_in_this_process_forgets_every_cache_at_once(second_build, held_clock, client, settings):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    _search(client, "/mcp/")
    assert STATE.memos["docs-tools"] and known_active_paths()["sample"] != second_build.index_path
    build_activate(build=second_build)  # forgets: pointers, versions, counts, cards, tool lists
    assert not STATE.memos and active_index("sample").path.name == "second-build"


def test_forget_process_closes_the_opened_builds_and_resets_warming(sample_corpus, held_clock):
    active_index("sample")
    STATE.warming["state"] = "ready"
    assert STATE.indexes.loaded("sample")
    STATE.forget(process=True)
    assert not STATE.indexes.loaded("sample") and STATE.warming == {"state": "lazy", "corpora": {}}
    assert known_active_paths() == {}


# --- coverage thresholds per corpus ----------------------------------------------------------------------


def _verdict(client, corpus: Corpus, thresholds: dict | None) -> dict:
    corpus.settings = {**corpus.settings, **({"coverage": thresholds} if thresholds else {})}
    if thresholds is None:
        corpus.settings.pop("coverage", None)
    services.corpus_update(corpus=corpus, corpus_settings=corpus.settings)
    STATE.forget("sample")
    return _search(client, "/mcp/c/sample/", "how do I retry a failed request")["structuredContent"]["coverage"]


def test_a_corpus_own_coverage_thresholds_change_its_verdict(sample_corpus, client, settings, held_clock):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    default = _verdict(client, sample_corpus, None)
    assert 0.0 < default["score"] < 1.0
    strict = _verdict(client, sample_corpus, {"covered": 1.0, "partial": 1.0})
    lenient = _verdict(client, sample_corpus, {"covered": 0.0, "partial": 0.0})
    assert (strict["verdict"], strict["score"]) == ("not_covered", default["score"])
    assert (lenient["verdict"], lenient["score"]) == ("covered", default["score"])
    assert "do not appear to cover" in strict["notice"] and "notice" not in lenient
    midway = {"covered": 1.0, "partial": round(default["score"] - 0.01, 4)}
    assert _verdict(client, sample_corpus, midway)["verdict"] == "partial"


def test_a_search_across_corpora_judges_each_corpus_by_its_own_thresholds(sample_corpus, held_clock):
    request = SearchRequest(query="how do I retry a failed request")
    before = corpora_search(["sample"], request).coverage
    verdicts = []
    for thresholds in ({"covered": 1.0, "partial": 1.0}, {"covered": 0.0, "partial": 0.0}):
        services.corpus_update(corpus=sample_corpus, corpus_settings={**sample_corpus.settings, "coverage": thresholds})
        STATE.forget("sample")
        after = corpora_search(["sample"], request).coverage
        assert after.score == before.score
        verdicts.append(after.verdict)
    assert verdicts == ["not_covered", "covered"]


@pytest.mark.parametrize(("value", "message"), [
    ({"covered": 0.5}, "exactly the keys covered and partial"),
    ("high", "exactly the keys covered and partial"),
    ({"covered": 1.5, "partial": 0.3}, "settings.coverage.covered must be a number from 0 to 1"),
    ({"covered": 0.5, "partial": True}, "settings.coverage.partial must be a number from 0 to 1"),
    ({"covered": 0.3, "partial": 0.5}, "must not exceed settings.coverage.covered"),
])
def test_bad_coverage_settings_are_refused_saying_what_to_send(value, message, settings):
    with pytest.raises(CorpusError, match=message):
        services.check_corpus_settings({"coverage": value})
    services.check_corpus_settings({"coverage": {"covered": 0.6, "partial": 0.2}})  # a good one passes
