"""REST API: triggering eval runs, reading their metrics and results, comparing two runs, suites."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from corpus.apikeys import create_api_key
from evals.models import EvalRun
from evals.services import suite_import
from tests.api_helpers import assert_error, call
from tests.evals.sample_cases import two_of_each_category


@pytest.fixture
def client(writer_client):
    """These tests write: every request carries an admin key (anonymous callers may only read)."""
    return writer_client

SAMPLE_SUITE = Path(__file__).resolve().parents[2] / "corpus" / "sample_docs_eval.json"


@pytest.fixture
def suite(sample_corpus, tmp_path):
    return suite_import(name="sample-suite", path=two_of_each_category(tmp_path), corpus=sample_corpus)


def trigger(client, body=None, key=None):
    body = body if body is not None else {"corpus": "sample", "suite": "sample-suite"}
    return call(client, "post", "/evals/runs", body, key=key)


def complete_run(client, django_capture_on_commit_callbacks, body=None) -> dict:
    with django_capture_on_commit_callbacks(execute=True):
        response = trigger(client, body)
    assert response.status_code == 202, response.content
    run = call(client, "get", f"/evals/runs/{response.json()['id']}").json()  # it ran when the request committed
    assert run["status"] == "complete", run["error"]
    return run


def test_trigger_returns_202_with_the_run_id_and_a_status_url(client, suite):
    response = trigger(client)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and body["mode"] == "in-process"
    assert (body["suite"], body["corpus"]) == ("sample-suite", "sample")
    assert body["url"] == f"/api/v1/evals/runs/{body['id']}" == response["Location"]
    assert body["results_url"] == f"/api/v1/evals/runs/{body['id']}/results"
    assert body["requested_by"] == "api:test-writer"
    assert body["progress"]["total"] == suite.cases.count()


def test_a_run_executes_inline_and_reports_metrics_and_results(client, suite, django_capture_on_commit_callbacks):
    status = run = complete_run(client, django_capture_on_commit_callbacks)
    assert status["progress"]["done"] == status["progress"]["total"] > 0 and status["progress"]["percent"] == 100
    assert status["metrics"]["overall"] and status["latency"]
    results = call(client, "get", f"/evals/runs/{run['id']}/results?limit=2").json()
    assert results["total"] == suite.cases.count() and results["limit"] == 2 and results["has_more"] is True
    assert len(results["items"]) == 2
    first = results["items"][0]
    assert {"case", "passed", "score", "rank", "top_hits", "search_ms"} <= set(first)


def test_list_runs_newest_first_with_filters(client, suite, django_capture_on_commit_callbacks):
    first = complete_run(client, django_capture_on_commit_callbacks)
    second = trigger(client).json()  # stays queued: its on-commit task is not executed
    listed = call(client, "get", "/evals/runs").json()
    assert [r["id"] for r in listed["items"]] == [second["id"], first["id"]]
    assert (listed["total"], listed["offset"], listed["has_more"]) == (2, 0, False)
    assert [r["id"] for r in call(client, "get", "/evals/runs?status=complete").json()["items"]] == [first["id"]]
    assert call(client, "get", "/evals/runs?corpus=sample&suite=sample-suite").json()["total"] == 2
    assert_error(call(client, "get", "/evals/runs?corpus=nope"), 404, "corpus_not_found")
    assert_error(call(client, "get", "/evals/runs?suite=nope"), 404, "suite_not_found")
    assert_error(call(client, "get", "/evals/runs?status=weird"), 422, "validation_error")


def test_compare_two_runs(client, suite, django_capture_on_commit_callbacks):
    a = complete_run(client, django_capture_on_commit_callbacks)
    b = complete_run(client, django_capture_on_commit_callbacks,
                     {"corpus": "sample", "suite": "sample-suite", "baseline": a["id"]})
    assert b["baseline"] == a["id"] and b["delta"]["baseline"] == a["id"]
    diff = call(client, "get", f"/evals/runs/{b['id']}/compare/{a['id']}").json()
    assert (diff["run"], diff["other"]) == (b["id"], a["id"])
    assert len(diff["cases"]) == suite.cases.count()
    assert diff["counts"]["same"] == suite.cases.count()  # same build, same cases
    assert "overall" in diff["metrics"]
    assert diff["embedding_note"] == "" and b["embedding_note"] == ""
    queued = trigger(client).json()
    assert_error(call(client, "get", f"/evals/runs/{queued['id']}/compare/{a['id']}"), 409, "run_state_conflict")


def test_a_comparison_across_builds_with_other_embeddings_carries_a_note(client, admin_client, suite,
                                                                         django_capture_on_commit_callbacks):
    from django.urls import reverse

    from corpus.models import BuildRun

    a = complete_run(client, django_capture_on_commit_callbacks)
    b = complete_run(client, django_capture_on_commit_callbacks,
                     {"corpus": "sample", "suite": "sample-suite", "baseline": a["id"]})
    measured = EvalRun.objects.get(pk=b["id"]).build
    assert measured.embedding  # the sample build has vectors
    fts_only = BuildRun.objects.create(corpus=measured.corpus, build_id="fts-only", status=BuildRun.COMPLETE)
    EvalRun.objects.filter(pk=a["id"]).update(build=fts_only)

    note = call(client, "get", f"/evals/runs/{b['id']}/compare/{a['id']}").json()["embedding_note"]
    assert "no embeddings (full-text only) vs " + measured.embedding["provider"] in note
    assert call(client, "get", f"/evals/runs/{b['id']}").json()["embedding_note"] == note
    page = admin_client.get(reverse("evals:compare", args=[b["id"], a["id"]])).content.decode()
    assert 'id="embedding-note"' in page and "different embeddings" in page
    page = admin_client.get(reverse("evals:run", args=[b["id"]])).content.decode()
    assert 'id="embedding-note"' in page


def test_suites_are_listed_with_their_case_counts(client, suite):
    body = call(client, "get", "/evals/suites").json()
    assert body["total"] == 1
    assert body["items"][0]["name"] == "sample-suite"
    assert body["items"][0]["corpus"] == "sample"
    assert body["items"][0]["case_count"] == suite.cases.count()


@pytest.mark.parametrize("body, status, code", [
    ({"corpus": "nope", "suite": "sample-suite"}, 404, "corpus_not_found"),
    ({"corpus": "sample", "suite": "nope"}, 404, "suite_not_found"),
    ({"corpus": "sample", "suite": "sample-suite", "baseline": 999999}, 404, "run_not_found"),
    ({"corpus": "sample", "suite": "sample-suite", "mode": "http"}, 400, "bad_request"),
    ({"corpus": "sample", "suite": "sample-suite", "mode": "ftp"}, 422, "validation_error"),
    ({"corpus": "sample", "suite": "sample-suite", "extra": 1}, 422, "validation_error"),
    ({"corpus": "sample"}, 422, "validation_error"),
])
def test_bad_triggers(client, suite, body, status, code):
    assert_error(trigger(client, body), status, code)
    assert not EvalRun.objects.exists()


def test_a_baseline_must_be_complete(client, suite):
    queued = trigger(client).json()
    body = {"corpus": "sample", "suite": "sample-suite", "baseline": queued["id"]}
    assert_error(trigger(client, body), 409, "run_state_conflict")


@pytest.mark.parametrize("path", ["/evals/runs/999999", "/evals/runs/999999/results",
                                  "/evals/runs/999999/compare/999998"])
def test_unknown_runs_are_404(client, db, path):
    assert_error(call(client, "get", path), 404, "run_not_found")


@pytest.fixture
def auth_required(settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""


@pytest.mark.parametrize("method, path, scope", [
    ("post", "/evals/runs", "build"),
    ("get", "/evals/runs", "read"),
    ("get", "/evals/runs/1", "read"),
    ("get", "/evals/runs/1/results", "read"),
    ("get", "/evals/runs/1/compare/2", "read"),
    ("get", "/evals/suites", "read"),
])
def test_scopes(suite, auth_required, method, path, scope):
    client = Client()  # no default key
    body = {"corpus": "sample", "suite": "sample-suite"} if method == "post" else None
    assert_error(call(client, method, path, body), 401, "unauthorized")
    _row, wrong = create_api_key("wrong", ["build" if scope == "read" else "read"])
    assert_error(call(client, method, path, body, key=wrong), 403, "forbidden")
    _row, right = create_api_key("right", [scope])
    assert call(client, method, path, body, key=right).status_code not in (401, 403)


def test_runs_record_who_requested_them(client, suite, auth_required):
    _row, key = create_api_key("ci-bot", ["build"])
    assert trigger(client, key=key).json()["requested_by"] == "api:ci-bot"


def test_a_key_limited_to_one_corpus_sees_only_that_corpus_suites_and_runs(
        client, suite, django_capture_on_commit_callbacks, tmp_path):
    from corpus.models import Corpus

    other = Corpus.objects.create(name="other", source_dir=str(tmp_path))
    suite_import(name="other-suite", path=SAMPLE_SUITE, corpus=other)
    suite_import(name="sample-suite", path=SAMPLE_SUITE, corpus=other)  # the same name, another corpus's suite
    run = complete_run(client, django_capture_on_commit_callbacks)
    _row, key = create_api_key("other-only", ["read", "build"], corpora=["other"])

    suites = call(client, "get", "/evals/suites", key=key).json()
    assert [(s["name"], s["corpus"]) for s in suites["items"]] == [("other-suite", "other"), ("sample-suite", "other")]
    assert call(client, "get", "/evals/runs", key=key).json()["total"] == 0
    assert_error(call(client, "get", f"/evals/runs/{run['id']}", key=key), 404, "run_not_found")
    hidden = trigger(client, {"corpus": "sample", "suite": "sample-suite"}, key=key)
    assert_error(hidden, 404, "corpus_not_found")
    assert_error(trigger(client, {"corpus": "other", "suite": "nope"}, key=key), 404, "suite_not_found")
    assert call(client, "get", "/evals/runs?suite=sample-suite", key=key).json()["total"] == 0
    assert [(s["name"], s["corpus"]) for s in call(client, "get", "/evals/suites").json()["items"]] == [
        ("other-suite", "other"), ("sample-suite", "other"), ("sample-suite", "sample")]


def test_a_key_limited_to_one_corpus_may_evaluate_over_http_only_that_corpus(client, suite, settings, tmp_path):
    from corpus.models import Corpus

    settings.MCP_SERVER_HOST, settings.MCP_SERVER_PORT = "127.0.0.1", 8001
    other = Corpus.objects.create(name="other", source_dir=str(tmp_path), aliases=["other-alias"])
    suite_import(name="other-suite", path=SAMPLE_SUITE, corpus=other)
    _row, key = create_api_key("other-only", ["read", "build"], corpora=["other"])
    body = {"corpus": "other", "suite": "other-suite", "mode": "http"}
    for url in ("http://127.0.0.1:8001/mcp/c/sample/", "http://127.0.0.1:8001/mcp/c/missing/",
                "http://127.0.0.1:8001/mcp/", "http://127.0.0.1:8001/mcp/docs/",
                "http://127.0.0.1:8001/mcp/documents/", "http://127.0.0.1:8001/mcp/c/other/../sample/"):
        refused = trigger(client, {**body, "url": url}, key=key)
        assert refused.status_code == 400, (url, refused.content)
        assert "limited to other corpora" in refused.json()["error"]["message"]
    for url in ("http://127.0.0.1:8001/mcp/c/other/", "http://127.0.0.1:8001/mcp/c/other-alias"):
        assert trigger(client, {**body, "url": url}, key=key).status_code == 202
    assert trigger(client, {**body, "url": "http://127.0.0.1:8001/mcp/c/sample/"}).status_code == 202  # no limit
    _row, sample_key = create_api_key("sample-only", ["read", "build"], corpora=["sample"])
    default = {"corpus": "sample", "suite": "sample-suite", "mode": "http", "url": "http://127.0.0.1:8001/mcp/"}
    assert trigger(client, default, key=sample_key).status_code == 202  # the default corpus is its own
    assert not EvalRun.objects.filter(target_url__contains="sample").exclude(requested_by="api:test-writer").exists()
