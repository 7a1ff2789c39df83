"""Push webhooks are idempotent and robust: a delivery or a commit seen before queues nothing, a
malformed payload is a 4xx that stores nothing, and an anonymous 404 names no corpus."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import pytest
from django.test import Client

from corpus.models import BuildRun, Corpus
from corpus.webhooks import hook_secret
from tests.api_helpers import assert_error
from tests.cli_helpers import build_cmd
from tests.git_helpers import sample_repo

# slow: every test builds a git-sourced corpus on the transactional database (45 s of the fast tier)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def repo(tmp_path):
    return sample_repo(tmp_path / "repo")


@pytest.fixture
def skyline(repo, index_root, tmp_path, settings):
    settings.DOCSMCP_GIT_CACHE_DIR = tmp_path / "git-cache"
    assert build_cmd("--corpus", "skyline", "--git", repo.url, "--ref", "main", "--subdir", "docs")[0] == 0
    return Corpus.objects.get(name="skyline")


def signed(corpus: Corpus, payload, delivery: str | None = None, header: str = "X-GitHub-Delivery") -> tuple:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    signature = hmac.new(hook_secret(corpus).encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature-256": f"sha256={signature}", "X-GitHub-Event": "push",
               header: delivery or str(uuid.uuid4())}
    return body, headers


def post(body: bytes, headers: dict, corpus: str = "skyline"):
    return Client().post(f"/api/v1/hooks/git/{corpus}", data=body, content_type="application/json", headers=headers)


def push(commit, ref="refs/heads/main") -> dict:
    return {"ref": ref, "after": commit, "repository": {"default_branch": "main"}}


def new_commit(repo, word: str) -> str:
    repo.write("guides/news.md", f"# News\n\n## Latest\n\n{word} is the newest feature.\n")
    return repo.commit(word)


def test_a_replayed_delivery_queues_nothing(skyline, repo):
    body, headers = signed(skyline, push(new_commit(repo, "Quasarflux")))
    first = post(body, headers)
    assert first.status_code == 202 and first.json()["queued"] == ["skyline"], first.content
    builds = BuildRun.objects.count()
    for _ in range(20):
        replay = post(body, headers)
        assert replay.status_code == 202
        assert replay.json()["duplicate"] is True and replay.json()["queued"] == []
    assert BuildRun.objects.count() == builds


@pytest.mark.parametrize("header", ["X-Gitea-Delivery", "Idempotency-Key", "X-Gitlab-Event-UUID"])
def test_gitea_and_gitlab_delivery_ids_are_remembered_too(skyline, repo, header):
    body, headers = signed(skyline, push(new_commit(repo, "Quasarflux")), header=header)
    assert post(body, headers).json()["queued"] == ["skyline"]
    builds = BuildRun.objects.count()
    assert post(body, headers).json()["duplicate"] is True
    assert BuildRun.objects.count() == builds


def test_a_captured_push_sent_again_under_new_delivery_ids_builds_nothing(skyline, repo):
    old = new_commit(repo, "Quasarflux")
    captured = push(old)
    assert post(*signed(skyline, captured)).json()["queued"] == ["skyline"]
    newer = new_commit(repo, "Nebulight")
    assert post(*signed(skyline, push(newer))).json()["queued"] == ["skyline"]
    builds = BuildRun.objects.count()
    for commit in (old, newer):  # an older built commit, and the one being served
        for _ in range(5):
            answer = post(*signed(skyline, push(commit)))
            assert answer.status_code == 202 and answer.json()["up_to_date"] == ["skyline"], answer.content
    assert BuildRun.objects.count() == builds
    skyline.refresh_from_db()
    assert skyline.latest_commit == newer and not skyline.is_stale  # the replayed old commit was not recorded


def test_a_push_while_a_build_is_queued_queues_no_second_one(skyline, repo):
    queued = BuildRun.objects.create(corpus=skyline, build_id="waiting", kind=BuildRun.KIND_INCREMENTAL)
    commit = new_commit(repo, "Quasarflux")
    for _ in range(3):
        answer = post(*signed(skyline, push(commit)))
        assert answer.json()["coalesced"] == ["skyline"] and answer.json()["queued"] == []
    assert list(skyline.builds.filter(status__in=BuildRun.IN_FLIGHT)) == [queued]


@pytest.mark.parametrize("after", ["\ud800", "ab\x00cd" * 2, "a" * 5000, {"x": 1}, 1234567, ["deadbeef"],
                                   "not-a-commit", "g" * 40, "deadbee\n"])
def test_an_after_that_is_not_a_commit_id_is_ignored_and_never_stored(skyline, repo, after):
    answer = post(*signed(skyline, push(after)))
    assert answer.status_code == 202, answer.content
    assert answer.json()["commit"] == ""
    skyline.refresh_from_db()
    assert skyline.latest_commit in ("", skyline.built_revision)


@pytest.mark.parametrize("body", [
    b'{"x": 1}', b"[1, 2]", b'"push"', b"null", b"not json", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000,
    b'{"ref": "refs/heads/main", "pad": "' + b"x" * (3 * 1024 * 1024) + b'"}',
    json.dumps({"ref": "\ud800"}).encode(), json.dumps({"ref": "refs/heads/\x00"}).encode(),
    json.dumps({"ref": "r" * 5000}).encode(), json.dumps({"ref": {"x": 1}}).encode(), json.dumps({"ref": ""}).encode(),
    json.dumps({"ref": "refs/heads/main", "repository": {"default_branch": "\ud800" * 3}}).encode(),
    json.dumps({"ref": "refs/heads/main", "repository": ["main"], "after": None}).encode(),
])
def test_no_signed_payload_gets_a_server_error(skyline, body):
    answer = post(*signed(skyline, body))
    assert answer.status_code < 500, answer.content
    if answer.status_code != 202:
        assert answer.status_code in (400, 413)
        assert_error(answer, answer.status_code)
    skyline.refresh_from_db()
    assert skyline.latest_commit in ("", skyline.built_revision)


def test_a_deleted_branch_queues_nothing(skyline, repo):
    builds = BuildRun.objects.count()
    answer = post(*signed(skyline, {**push("0" * 40), "deleted": True}))
    assert answer.status_code == 202 and answer.json()["queued"] == []
    assert BuildRun.objects.count() == builds


def test_a_delivery_refused_for_a_bad_signature_is_not_remembered(skyline, repo):
    body, headers = signed(skyline, push(new_commit(repo, "Quasarflux")))
    forged = {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}
    assert post(body, forged).status_code == 401
    assert post(body, headers).json()["queued"] == ["skyline"]


def test_an_unknown_corpus_is_404_not_found_naming_no_corpus(skyline):
    error = assert_error(post(b"{}", {}, corpus="nope"), 404, "corpus_not_found")
    assert error["message"] == "not found"
    error = assert_error(post(b"{}", {}, corpus="skyline@v9"), 404)
    assert error["message"] == "not found"


def test_with_auth_required_a_bad_signature_is_the_same_404(skyline, repo, settings):
    settings.MCP_AUTH_REQUIRED = True
    body, headers = signed(skyline, push(new_commit(repo, "Quasarflux")))
    for bad in ({}, {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}):
        error = assert_error(post(body, bad), 404, "corpus_not_found")
        assert error["message"] == "not found"
    assert post(body, headers).json()["queued"] == ["skyline"]
