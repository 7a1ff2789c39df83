"""Queueing builds and eval runs: with the broker (and the result backend) down, a request answers 503
`task_queue_unavailable` and leaves nothing queued; with Redis up, the task lands on the queue."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import uuid
from pathlib import Path

import pytest
from django.test import Client

from corpus.models import BuildRun
from evals.models import EvalRun
from evals.services import suite_import
from tests import services
from tests.api_helpers import assert_error, call

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = services.REDIS_URL
SAMPLE_SUITE = Path(__file__).resolve().parents[2] / "corpus" / "sample_docs_eval.json"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _reset(app) -> None:
    import kombu.pools

    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None
    kombu.pools.reset()
    app._local.__dict__.pop("backend", None)


@pytest.fixture
def uses_broker():
    """Point this process's Celery at a broker and result backend, then restore: a function of the URL."""
    from common.celery import app

    keys = ("task_always_eager", "broker_url", "result_backend", "task_default_queue")
    saved = {key: app.conf[key] for key in keys}

    def point(url: str, queue: str = "celery") -> None:
        _reset(app)
        app.conf.update(task_always_eager=False, broker_url=url, result_backend=url, task_default_queue=queue)

    yield point
    _reset(app)
    app.conf.update(saved)


@pytest.fixture
def broker_down(uses_broker):
    """Redis as broker and result backend, on a loopback port nothing listens on (a real refused connection)."""
    uses_broker(f"redis://127.0.0.1:{_closed_port()}/0")


def queued_builds(corpus) -> list[BuildRun]:
    return list(corpus.builds.filter(status__in=BuildRun.IN_FLIGHT))


def test_a_build_request_with_the_broker_down_is_503_and_queues_nothing(writer_client, sample_corpus, index_root,
                                                                         broker_down):
    response = call(writer_client, "post", "/corpora/sample/builds", {"kind": "validate"})
    error = assert_error(response, 503, "task_queue_unavailable", "task queue is unreachable")
    assert "CELERY_BROKER_URL" in error["message"]
    assert queued_builds(sample_corpus) == []
    # The corpus is not blocked: the next request meets the same outage, not "a build is in progress".
    assert_error(call(writer_client, "post", "/corpora/sample/builds", {"kind": "validate"}), 503,
                 "task_queue_unavailable")


def test_an_eval_run_request_with_the_broker_down_is_503_and_queues_nothing(writer_client, sample_corpus,
                                                                            broker_down):
    suite_import(name="sample-suite", path=SAMPLE_SUITE, corpus=sample_corpus)
    response = call(writer_client, "post", "/evals/runs", {"corpus": "sample", "suite": "sample-suite"})
    assert_error(response, 503, "task_queue_unavailable", "task queue is unreachable")
    assert not EvalRun.objects.filter(status__in=(EvalRun.QUEUED, EvalRun.RUNNING)).exists()


def test_the_admin_build_action_with_the_broker_down_says_so_and_queues_nothing(admin_client, sample_corpus,
                                                                                index_root, broker_down):
    page = admin_client.post("/admin/corpus/corpus/", {"action": "build", "_selected_action": [sample_corpus.pk]},
                             follow=True)
    assert page.status_code == 200
    assert "task queue is unreachable" in page.content.decode()
    assert queued_builds(sample_corpus) == []


def test_a_webhook_with_the_broker_down_is_503_and_its_redelivery_is_accepted_later(skyline_repo, uses_broker):
    from corpus.webhooks import hook_secret

    corpus, commit = skyline_repo
    body = json.dumps({"ref": "refs/heads/main", "after": commit, "repository": {"default_branch": "main"}}).encode()
    signature = hmac.new(hook_secret(corpus).encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature-256": f"sha256={signature}", "X-GitHub-Event": "push",
               "X-GitHub-Delivery": str(uuid.uuid4())}
    uses_broker(f"redis://127.0.0.1:{_closed_port()}/0")
    response = Client().post("/api/v1/hooks/git/skyline", data=body, content_type="application/json", headers=headers)
    assert_error(response, 503, "task_queue_unavailable")
    assert queued_builds(corpus) == []
    # GitHub redelivers with the same delivery ID; once the broker is back, that delivery builds.
    _redis_or_skip()
    queue = f"docsmcp-test-{uuid.uuid4().hex[:8]}"
    uses_broker(REDIS_URL, queue)
    try:
        response = Client().post("/api/v1/hooks/git/skyline", data=body, content_type="application/json",
                                 headers=headers)
        assert response.status_code == 202, response.content
        assert response.json()["queued"] == ["skyline"]
        assert len(queued_builds(corpus)) == 1
    finally:
        _drop_queue(queue)


def test_with_redis_up_a_build_request_puts_its_task_on_the_queue(writer_client, sample_corpus, index_root,
                                                                   uses_broker):
    import redis

    _redis_or_skip()
    queue = f"docsmcp-test-{uuid.uuid4().hex[:8]}"
    uses_broker(REDIS_URL, queue)
    try:
        response = call(writer_client, "post", "/corpora/sample/builds", {"kind": "validate"})
        assert response.status_code == 202, response.content
        build = BuildRun.objects.get(build_id=response.json()["build_id"])
        assert build.status == BuildRun.QUEUED
        message = json.loads(redis.Redis.from_url(REDIS_URL).lindex(queue, 0))
        assert message["headers"]["task"] == "corpus.run_build"
        assert message["headers"]["ignore_result"] is True
    finally:
        _drop_queue(queue)


def _drop_queue(queue: str) -> None:
    services.delete_queue(queue)


def _redis_or_skip() -> None:
    reason = services.redis_unreachable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def skyline_repo(tmp_path, index_root, settings):
    """A corpus built from a local git repository, and a new commit pushed to it since."""
    from corpus.models import Corpus
    from tests.cli_helpers import build_cmd
    from tests.git_helpers import sample_repo

    settings.DOCSMCP_GIT_CACHE_DIR = tmp_path / "git-cache"
    repo = sample_repo(tmp_path / "repo")
    assert build_cmd("--corpus", "skyline", "--git", repo.url, "--ref", "main", "--subdir", "docs")[0] == 0
    repo.write("guides/news.md", "# News\n\n## Latest\n\nQuasarflux is the newest feature.\n")
    return Corpus.objects.get(name="skyline"), repo.commit("Quasarflux")
