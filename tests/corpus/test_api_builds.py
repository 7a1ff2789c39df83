"""REST API: triggering builds, polling their progress and findings, cancelling, rolling back."""

from __future__ import annotations

import pytest
from django.test import Client

from corpus.models import BuildRun
from tests.api_helpers import assert_error, call


@pytest.fixture
def client(writer_client):
    """These tests write: every request carries an admin key (anonymous callers may only read)."""
    return writer_client


def trigger(client, body=None, corpus="sample"):
    return call(client, "post", f"/corpora/{corpus}/builds", body if body is not None else {})


def second_complete_build(corpus) -> BuildRun:
    """Another complete build of the sample corpus over the same index, to roll between."""
    active = corpus.active_build
    return BuildRun.objects.create(corpus=corpus, build_id="second", kind=BuildRun.KIND_FULL, status=BuildRun.COMPLETE,
                                   index_path=active.index_path, embedding_provider="hash",
                                   embedding=active.embedding, stats=active.stats)


def test_trigger_returns_202_with_the_build_id_and_a_status_url(client, sample_corpus, index_root):
    response = trigger(client, {"kind": "validate"})
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["build_id"] and body["kind"] == "validate" and body["status"] == "queued"
    assert body["url"] == f"/api/v1/corpora/sample/builds/{body['build_id']}"
    assert response["Location"] == body["url"]
    assert body["requested_by"] == "api:test-writer"
    assert body["embedding_provider"] == "hash"  # from the corpus's settings
    assert body["progress"] == {"stage": "", "done": 0, "total": 0, "percent": 0}


def test_trigger_defaults_to_an_incremental_build(client, sample_corpus, index_root):
    assert trigger(client).json()["kind"] == "incremental"


def test_a_validate_build_runs_to_complete_and_reports_progress(client, sample_corpus, index_root,
                                                                 django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        build_id = trigger(client, {"kind": "validate"}).json()["build_id"]
    status = call(client, "get", f"/corpora/sample/builds/{build_id}").json()
    assert status["status"] == "complete"
    assert status["progress"]["stage"] == "validate"
    assert status["progress"]["done"] == status["progress"]["total"] > 0
    assert status["progress"]["percent"] == 100
    assert status["stats"]["total_files"] > 0
    assert status["is_active"] is False  # validate never activates
    assert status["findings"] == [] and status["findings_truncated"] is False


def test_an_incremental_build_becomes_the_active_build(client, sample_corpus, index_root,
                                                        django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        build_id = trigger(client, {"kind": "incremental", "embedding_provider": "hash"}).json()["build_id"]
    status = call(client, "get", f"/corpora/sample/builds/{build_id}").json()
    assert (status["status"], status["is_active"]) == ("complete", True), status["error"]
    assert status["embedding"]["provider"] == "hash"
    assert call(client, "get", "/corpora/sample").json()["active_build"]["build_id"] == build_id


def test_a_failed_validation_reports_findings_with_file_and_line(client, sample_corpus, index_root,
                                                                 django_capture_on_commit_callbacks,
                                                                 copy_sample_docs):
    broken = copy_sample_docs / "guides" / "broken.md"
    broken.write_bytes(b"# Broken\n\nCaf\xe9 is not UTF-8.\n")
    call(client, "patch", "/corpora/sample", {"source_dir": str(copy_sample_docs)})
    with django_capture_on_commit_callbacks(execute=True):
        build_id = trigger(client, {"kind": "validate"}).json()["build_id"]
    status = call(client, "get", f"/corpora/sample/builds/{build_id}").json()
    assert status["status"] == "failed"
    assert status["error_count"] >= 1
    error = status["findings"][0]
    assert (error["severity"], error["code"], error["file"], error["line"]) == ("error", "encoding", "guides/broken.md", 3)
    assert error["suggestion"]
    findings = call(client, "get", f"/corpora/sample/builds/{build_id}/findings?severity=error&limit=1").json()
    assert findings["total"] == status["error_count"]
    assert findings["items"][0] == error
    assert findings["limit"] == 1


def test_findings_name_the_file_never_where_a_link_points(client, sample_corpus, index_root,
                                                         django_capture_on_commit_callbacks, copy_sample_docs):
    (copy_sample_docs / "guides" / "passwords.md").symlink_to("/etc/passwd")
    call(client, "patch", "/corpora/sample", {"source_dir": str(copy_sample_docs)})
    with django_capture_on_commit_callbacks(execute=True):
        build_id = trigger(client, {"kind": "validate"}).json()["build_id"]
    assert "/etc/passwd" in str(BuildRun.objects.get(build_id=build_id).findings)  # the operator's record keeps it
    anonymous = Client()
    for path in (f"/corpora/sample/builds/{build_id}", f"/corpora/sample/builds/{build_id}/findings"):
        response = call(anonymous, "get", path)
        assert response.status_code == 200 and b"/etc/passwd" not in response.content, response.content
    escape = next(f for f in call(anonymous, "get", f"/corpora/sample/builds/{build_id}").json()["findings"]
                  if f["code"] == "path-escape")
    assert (escape["file"], escape["message"]) == ("guides/passwords.md", "symlink points outside the corpus root")


def test_status_of_a_build_in_progress_shows_stage_done_total_and_percent(client, sample_corpus):
    BuildRun.objects.create(corpus=sample_corpus, build_id="busy", status=BuildRun.RUNNING, stage="embed",
                            progress_done=30, progress_total=120)
    progress = call(client, "get", "/corpora/sample/builds/busy").json()["progress"]
    assert progress == {"stage": "embed", "done": 30, "total": 120, "percent": 25}


def test_findings_are_paginated_errors_first(client, sample_corpus):
    findings = [{"severity": "warning", "code": "w", "file": f"w{i}.md", "line": i, "message": "m",
                 "suggestion": ""} for i in range(60)]
    findings.append({"severity": "error", "code": "e", "file": "e.md", "line": 1, "message": "bad",
                     "suggestion": "fix"})
    BuildRun.objects.create(corpus=sample_corpus, build_id="noisy", status=BuildRun.FAILED, findings=findings)
    status = call(client, "get", "/corpora/sample/builds/noisy").json()
    assert (status["error_count"], status["warning_count"]) == (1, 60)
    assert len(status["findings"]) == 50 and status["findings_truncated"] is True
    assert status["findings"][0]["severity"] == "error"
    page = call(client, "get", "/corpora/sample/builds/noisy/findings?severity=warning&limit=25&offset=50").json()
    assert (page["total"], len(page["items"]), page["has_more"]) == (60, 10, False)
    assert page["items"][0]["file"] == "w50.md"
    assert_error(call(client, "get", "/corpora/sample/builds/noisy/findings?severity=fatal"), 422)


def test_list_builds_newest_first_filtered_by_status(client, sample_corpus):
    BuildRun.objects.create(corpus=sample_corpus, build_id="f1", status=BuildRun.FAILED)
    BuildRun.objects.create(corpus=sample_corpus, build_id="f2", status=BuildRun.FAILED)
    page = call(client, "get", "/corpora/sample/builds").json()
    assert [b["build_id"] for b in page["items"]] == ["f2", "f1", sample_corpus.active_build.build_id]
    failed = call(client, "get", "/corpora/sample/builds?status=failed&limit=1").json()
    assert ([b["build_id"] for b in failed["items"]], failed["total"], failed["has_more"]) == (["f2"], 2, True)
    complete = call(client, "get", "/corpora/sample/builds?status=complete").json()["items"]
    assert [(b["build_id"], b["is_active"]) for b in complete] == [(sample_corpus.active_build.build_id, True)]
    assert_error(call(client, "get", "/corpora/sample/builds?status=done"), 422, "validation_error", "status")
    assert_error(call(client, "get", "/corpora/sample/builds?limit=500"), 422, "validation_error", "limit")


def test_a_second_trigger_while_one_is_in_flight_is_409(client, sample_corpus, index_root):
    first = trigger(client, {"kind": "full"}).json()["build_id"]
    error = assert_error(trigger(client, {"kind": "full"}), 409, "build_in_progress")
    assert first in error["message"]


def test_trigger_for_an_unknown_corpus_is_404(client, sample_corpus):
    assert_error(trigger(client, {"kind": "full"}, corpus="ghost"), 404, "corpus_not_found", "available: sample")


@pytest.mark.parametrize("body, field", [
    ({"kind": "quick"}, "kind"),
    ({"kind": 1}, "kind"),
    ({"embedding_provider": "magic"}, "embedding_provider"),
    ({"kind": "full", "priority": "high"}, "priority"),
])
def test_trigger_refuses_bad_input_with_422(client, sample_corpus, body, field):
    error = assert_error(trigger(client, body), 422, "validation_error", field)
    assert field in error["message"]
    assert not BuildRun.objects.filter(status__in=BuildRun.IN_FLIGHT).exists()


def test_trigger_for_a_chunks_corpus_says_it_has_nothing_to_build(client, db):
    call(client, "post", "/corpora", {"name": "notes", "kind": "chunks"})
    assert_error(trigger(client, {}, corpus="notes"), 400, "bad_request", "store_chunks")


def test_cancel_a_queued_build_is_200_and_cancelled(client, sample_corpus, index_root):
    build_id = trigger(client, {"kind": "full"}).json()["build_id"]
    response = call(client, "post", f"/corpora/sample/builds/{build_id}/cancel")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert trigger(client, {"kind": "full"}).status_code == 202  # the corpus is free again


def test_cancel_a_running_build_is_202_and_requests_the_stop(client, sample_corpus):
    BuildRun.objects.create(corpus=sample_corpus, build_id="busy", status=BuildRun.RUNNING)
    response = call(client, "post", "/corpora/sample/builds/busy/cancel")
    assert response.status_code == 202
    assert (response.json()["status"], response.json()["cancel_requested"]) == ("running", True)


def test_cancel_a_finished_build_is_409(client, sample_corpus):
    build_id = sample_corpus.active_build.build_id
    assert_error(call(client, "post", f"/corpora/sample/builds/{build_id}/cancel"), 409, "build_state_conflict",
                 "only queued or running")


def test_activate_rolls_back_and_forward(client, sample_corpus):
    original = sample_corpus.active_build.build_id
    second_complete_build(sample_corpus)
    response = call(client, "post", "/corpora/sample/builds/second/activate")
    assert response.status_code == 200, response.content
    assert response.json()["is_active"] is True
    assert call(client, "get", "/corpora/sample").json()["active_build"]["build_id"] == "second"
    assert call(client, "post", f"/corpora/sample/builds/{original}/activate").json()["is_active"] is True
    assert call(client, "get", "/corpora/sample/builds/second").json()["is_active"] is False


def test_activate_a_build_that_did_not_complete_is_409(client, sample_corpus):
    BuildRun.objects.create(corpus=sample_corpus, build_id="broken", status=BuildRun.FAILED)
    assert_error(call(client, "post", "/corpora/sample/builds/broken/activate"), 409, "build_state_conflict",
                 "only complete builds")


def test_a_build_of_another_corpus_or_an_unknown_id_is_404(client, sample_corpus, tmp_path):
    call(client, "post", "/corpora", {"name": "other", "source_dir": str(tmp_path)})
    build_id = sample_corpus.active_build.build_id
    for method, suffix in (("get", ""), ("get", "/findings"), ("post", "/activate"), ("post", "/cancel")):
        assert_error(call(client, method, f"/corpora/other/builds/{build_id}{suffix}"), 404, "build_not_found")
        assert_error(call(client, method, f"/corpora/sample/builds/nope{suffix}"), 404, "build_not_found")
