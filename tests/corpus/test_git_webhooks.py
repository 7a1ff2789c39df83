"""Push webhooks: signed by GitHub, GitLab or Gitea, they rebuild the versions that track the pushed ref."""

from __future__ import annotations

import hashlib
import hmac
import io
import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from corpus.models import BuildRun, Corpus
from corpus.services import build_request
from corpus.webhooks import build_followup, hook_secret
from tests.cli_helpers import build_cmd
from tests.corpus.test_celery_worker import _wait_for, celery_worker_process, web_side_uses_the_broker  # noqa: F401
from tests.git_helpers import sample_repo

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def repo(tmp_path):
    return sample_repo(tmp_path / "repo")


@pytest.fixture
def skyline(repo, index_root, tmp_path, settings):
    settings.DOCSMCP_GIT_CACHE_DIR = tmp_path / "git-cache"
    assert build_cmd("--corpus", "skyline", "--git", repo.url, "--ref", "main", "--subdir", "docs")[0] == 0
    return Corpus.objects.get(name="skyline")


def push_body(commit: str, ref: str = "refs/heads/main") -> bytes:
    return json.dumps({"ref": ref, "after": commit, "repository": {"default_branch": "main"}}).encode()


def github_headers(secret: str, body: bytes) -> dict:
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={signature}", "X-GitHub-Event": "push"}


def post(body: bytes, headers: dict, corpus: str = "skyline"):
    return Client().post(f"/api/v1/hooks/git/{corpus}", data=body, content_type="application/json", headers=headers)


def search(text: str, corpus: str = "skyline") -> list[dict]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": text}}}
    response = Client().post(f"/mcp/c/{corpus}/", data=json.dumps(body), content_type="application/json",
                             HTTP_ACCEPT="application/json, text/event-stream",
                             HTTP_MCP_PROTOCOL_VERSION="2025-11-25")
    return response.json()["result"]["structuredContent"]["hits"]


def new_page(repo, word: str) -> str:
    repo.write("guides/news.md", f"# News\n\n## Latest\n\n{word} is the newest feature.\n")
    return repo.commit(word)


def test_a_signed_github_push_rebuilds_and_the_new_text_is_served(skyline, repo):
    commit = new_page(repo, "Quasarflux")
    body = push_body(commit)
    response = post(body, github_headers(hook_secret(skyline), body))
    assert response.status_code == 202, response.content
    assert response.json()["queued"] == ["skyline"]
    hits = search("Quasarflux")
    assert hits and hits[0]["filepath"] == "guides/news.md" and hits[0]["revision"] == commit


def test_a_bad_signature_is_401_and_changes_nothing(skyline, repo):
    hook_secret(skyline)
    commit = new_page(repo, "Quasarflux")
    body = push_body(commit)
    builds = BuildRun.objects.count()
    for headers in ({}, github_headers("wrong-secret", body), {"X-Gitlab-Token": "wrong"},
                    {"X-Gitea-Signature": "00" * 32}):
        response = post(body, headers)
        assert response.status_code == 401, response.content
        assert response.json()["error"]["code"]
    assert BuildRun.objects.count() == builds
    skyline.refresh_from_db()
    assert skyline.latest_commit != commit


def test_a_corpus_without_a_secret_refuses_every_push(skyline, repo):
    body = push_body(new_page(repo, "Quasarflux"))
    assert post(body, github_headers("", body)).status_code == 401


def test_gitlab_token_and_gitea_signature_are_accepted(skyline, repo):
    secret = hook_secret(skyline)
    body = push_body(new_page(repo, "Quasarflux"))
    assert post(body, {"X-Gitlab-Token": secret, "X-Gitlab-Event": "Push Hook"}).status_code == 202
    body = push_body(new_page(repo, "Nebulaquill"))
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert post(body, {"X-Gitea-Signature": signature, "X-Gitea-Event": "push"}).status_code == 202
    assert search("Nebulaquill")[0]["filepath"] == "guides/news.md"


def test_rotating_the_secret_revokes_the_old_one(skyline, repo):
    old = hook_secret(skyline)
    out = io.StringIO()
    call_command("git_hook_secret", "--corpus", "skyline", "--rotate", stdout=out, stderr=io.StringIO())
    new = out.getvalue().strip()
    assert new != old and new == hook_secret(skyline)
    body = push_body(new_page(repo, "Quasarflux"))
    assert post(body, github_headers(old, body)).status_code == 401
    assert post(body, github_headers(new, body)).status_code == 202


@pytest.mark.django_db
def test_git_hook_secret_refuses_a_corpus_without_a_git_source(tmp_path):
    from django.core.management.base import CommandError

    Corpus.objects.create(name="plain", source_dir=str(tmp_path))
    with pytest.raises(CommandError, match="'plain' is not built from a git repository") as refused:
        call_command("git_hook_secret", "--corpus", "plain", stdout=io.StringIO(), stderr=io.StringIO())
    assert "--git URL" in str(refused.value)
    assert Corpus.objects.get(name="plain").hook_salt == ""


def test_a_push_to_another_branch_builds_nothing(skyline, repo):
    body = push_body("f" * 40, ref="refs/heads/feature")
    response = post(body, github_headers(hook_secret(skyline), body))
    assert response.status_code == 202 and response.json()["not_tracking"] == ["skyline"]
    assert response.json()["queued"] == []


def test_pushes_while_a_build_is_queued_join_it(skyline, repo, settings):
    secret = hook_secret(skyline)
    queued = build_request(corpus=skyline, requested_by="test")  # reserved, not yet picked up
    for word in ("Quasarflux", "Nebulaquill", "Orbitwhisk"):
        body = push_body(new_page(repo, word))
        response = post(body, github_headers(secret, body))
        assert response.json()["coalesced"] == ["skyline"]
    assert skyline.builds.filter(status__in=BuildRun.IN_FLIGHT).count() == 1
    from corpus.execution import build_execute

    done = build_execute(build=queued)  # fetches when it starts: the newest push
    skyline.refresh_from_db()
    assert done.stats["revision"] == skyline.latest_commit
    assert build_followup(done) is None
    assert search("Orbitwhisk")[0]["filepath"] == "guides/news.md"


def test_a_push_during_a_running_build_gets_exactly_one_follow_up(skyline, repo):
    secret = hook_secret(skyline)
    running = build_request(corpus=skyline, requested_by="test")
    started = timezone.now()
    BuildRun.objects.filter(pk=running.pk).update(status=BuildRun.RUNNING, started_at=started, heartbeat_at=started)
    for word in ("Quasarflux", "Nebulaquill"):
        body = push_body(new_page(repo, word))
        assert post(body, github_headers(secret, body)).json()["coalesced"] == ["skyline"]
    # the running build finishes having built the commit it fetched before the pushes
    BuildRun.objects.filter(pk=running.pk).update(status=BuildRun.COMPLETE, stats={"revision": "0" * 40})
    followup = build_followup(running)
    assert followup is not None
    assert build_followup(running) is None  # a second look queues nothing more
    skyline.refresh_from_db()
    assert skyline.active_build.stats["revision"] == skyline.latest_commit
    assert search("Nebulaquill")[0]["filepath"] == "guides/news.md"


@pytest.mark.worker
def test_a_push_rebuilds_on_a_real_worker(web_side_uses_the_broker, repo, settings, tmp_path):  # noqa: F811
    assert build_cmd("--corpus", "skyline-w", "--git", repo.url, "--ref", "main", "--subdir", "docs")[0] == 0
    corpus = Corpus.objects.get(name="skyline-w")
    first = corpus.active_build_id
    commit = new_page(repo, "Quasarflux")
    body = push_body(commit)
    response = post(body, github_headers(hook_secret(corpus), body), corpus="skyline-w")
    assert response.status_code == 202 and response.json()["queued"] == ["skyline-w"], response.content
    build = corpus.builds.order_by("-created_at").first()
    done = _wait_for(build)
    assert done.status == BuildRun.COMPLETE, done.error
    assert done.pk != first and done.stats["revision"] == commit


def test_the_admin_shows_built_and_latest_commit_and_marks_a_stale_version(skyline, repo, admin_client):
    built = skyline.built_revision
    page = admin_client.get("/admin/corpus/corpus/").content.decode()
    assert built[:12] in page and "up to date" in page and "STALE" not in page
    secret = hook_secret(skyline)
    body = push_body("f" * 40, ref="refs/heads/main")
    BuildRun.objects.create(corpus=skyline, build_id="in-flight", status=BuildRun.RUNNING)  # the push only records
    assert post(body, github_headers(secret, body)).json()["coalesced"] == ["skyline"]
    page = admin_client.get("/admin/corpus/corpus/").content.decode()
    assert "STALE" in page and "latest ffffffffffff" in page and built[:12] in page
