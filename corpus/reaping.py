"""Reaping dead builds off the request path: a build whose worker stopped (its lease lapsed) or that no
worker picked up is marked failed by a periodic step, never by a GET.

Every Celery worker runs `start_reaper` when it is ready (corpus/tasks.py): a daemon thread that calls
`expire_builds` every DOCSMCP_BUILD_REAP_SECONDS. That covers the worker `manage.py serve` starts
beside the web server for the directory queue, and the workers of a Redis deployment; where Celery beat
runs, `corpus.reap_builds` is also on its schedule (CELERY_BEAT_SCHEDULE). Reaping is one idempotent
UPDATE, so several workers doing it cost nothing more. A new build request still reaps its corpus first,
so a dead worker never blocks a corpus past its lease.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.db import connections
from django.utils import timezone

from .models import BuildRun, Corpus

logger = logging.getLogger("docsmcp.build")
# A queued build no worker picked up within this long is marked failed.
STALE_AFTER = timedelta(minutes=15)

_reaper: list[tuple[threading.Thread, threading.Event]] = []  # this process's reaper and what stops it
_lock = threading.Lock()


def expire_builds(corpus: Corpus | None = None) -> int:
    """Mark failed the builds whose worker stopped (lease expired) or that never started; returns how many.

    Run by every Celery worker's reaper (below) and by a new build request for its corpus
    (corpus.services), so a dead worker blocks a corpus for one lease, not until someone notices; never by
    a read. It lives here, not in corpus.services, so that an idle Celery worker's reaper imports none of
    the build's modules (NumPy, Arrow, the parsers: about 20 MiB it would hold for good).
    """
    now = timezone.now()
    lease = timedelta(seconds=settings.DOCSMCP_BUILD_LEASE_SECONDS)
    builds = BuildRun.objects.filter(status__in=BuildRun.IN_FLIGHT)
    if corpus is not None:
        builds = builds.filter(corpus=corpus)
    orphaned = builds.filter(status=BuildRun.RUNNING, heartbeat_at__lt=now - lease).update(
        status=BuildRun.FAILED, finished_at=now,
        error=f"its worker stopped: no heartbeat for over {settings.DOCSMCP_BUILD_LEASE_SECONDS}s "
              "(killed, crashed or lost its database connection); the previous index keeps serving")
    unclaimed = builds.filter(status=BuildRun.QUEUED, created_at__lt=now - STALE_AFTER).update(
        status=BuildRun.FAILED, finished_at=now,
        error=f"no worker picked it up within {int(STALE_AFTER.total_seconds() // 60)} minutes; "
              "check that a Celery worker is running")
    return orphaned + unclaimed


def reap_once() -> int:
    """Marks failed the builds whose worker stopped or that never started; how many."""
    reaped = expire_builds()
    if reaped:
        logger.info("marked %d dead builds failed (worker stopped or never started)", reaped)
    return reaped


def start_reaper(interval: float | None = None) -> threading.Thread | None:
    """This process's reaper thread (started once); None when DOCSMCP_BUILD_REAP_SECONDS is 0."""
    every = settings.DOCSMCP_BUILD_REAP_SECONDS if interval is None else interval
    if every <= 0:
        return None
    with _lock:
        if _reaper and _reaper[0][0].is_alive():
            return _reaper[0][0]
        stop = threading.Event()
        thread = threading.Thread(target=_run, args=(every, stop), name="docsmcp-build-reaper", daemon=True)
        _reaper[:] = [(thread, stop)]
        thread.start()
        return thread


def stop_reaper(timeout: float = 10.0) -> None:
    """Stops this process's reaper (a worker shutting down, a test) and waits for its round to end."""
    with _lock:
        running = list(_reaper)
        _reaper.clear()
    for thread, stop in running:
        stop.set()
        thread.join(timeout)


def _run(every: float, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            reap_once()
        except Exception as exc:  # the database may be away: the next round tries again
            logger.warning("build reaper: %s", exc)
        finally:
            connections.close_all()  # this thread's connection: never held between rounds
        stop.wait(every)
