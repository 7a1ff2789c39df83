"""The feedback tools' rate limit holds across worker processes: each worker counting on its own let a
caller through once per worker (57 of 80 reports accepted against 20 a minute)."""

from __future__ import annotations

import multiprocessing

import pytest
from django.db import connections
from django.test import RequestFactory

from mcp_endpoint.models import RateCount
from mcp_endpoint.profiles import Context, ToolError
from mcp_endpoint.profiles.feedback import _limited


def _reports(count: int, results) -> None:
    """One worker process: `count` feedback calls from one address; how many were let through."""
    request = RequestFactory().post("/mcp/", REMOTE_ADDR="127.0.0.1")
    context = Context(request=request, profile="docs")
    accepted = 0
    for _ in range(count):
        try:
            _limited(context)
            accepted += 1
        except ToolError:
            pass
    connections.close_all()
    results.put(accepted)


@pytest.mark.django_db(transaction=True)
def test_the_feedback_limit_is_shared_by_every_worker(settings):
    settings.DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE = 20
    settings.MCP_RATE_LIMIT_REDIS_URL = ""
    connections.close_all()  # each worker opens its own connection, as gunicorn's do
    fork = multiprocessing.get_context("fork")
    results = fork.Queue()
    workers = [fork.Process(target=_reports, args=(20, results)) for _ in range(4)]
    for worker in workers:
        worker.start()
    accepted = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    # 80 reports in one minute from one address, across four workers: 20 go through, as the limit says.
    # (A minute boundary crossed mid-test would allow up to 40; the counts then live in two windows.)
    windows = RateCount.objects.filter(identity="feedback:ip:127.0.0.1").count()
    assert sum(accepted) == 20 * max(windows, 1), (accepted, windows)
