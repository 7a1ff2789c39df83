"""Where a serving process is in its warming, and whether every worker of its server is warm.

A serving process warms what it serves before it takes requests, and warms a newly activated
build before the build replaces the old one, so neither a restart nor an activation makes the
first agent wait while an index loads. The warming itself is `corpus.serving.serve_warm`, run once
per serving process (gunicorn's post_worker_init hook, before the worker accepts connections): it
opens the active build of every corpus, loads it and the embedding model it needs, runs a search on
it, and then starts a watcher thread that looks up the active builds every POINTER_TTL seconds.
When one changed, `IndexCache` opens and warms the new build in the background and swaps it in only
once warm; until then requests finish on the previous build. This module reads and moves the state
/health/ reports (kept on corpus.serving.state.STATE, which forgets it with every other serving state),
and holds what the gunicorn master tells its workers.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from corpus.serving.state import LAZY, READY, STATE, WARMING  # noqa: F401 (the states, named here too)

logger = logging.getLogger("docsmcp.corpus")

# Set by the gunicorn master before it forks, so every worker inherits it (serve_with): a
# directory where each warm worker leaves a file named by its pid, and how many workers the server runs.
_server: dict = {"directory": None, "workers": None}


def serve_with(directory: str, workers: int) -> None:
    """The master's word to the workers it forks: where they say they are warm, and how many they are.
    Workers are forked from the master (preload_app), so module state reaches them as it is."""
    _server.update(directory=directory, workers=workers)


def server_directory() -> str | None:
    return _server["directory"]


def warm_state() -> dict:
    """This process's warming: `lazy` (it opens indexes on first use: runserver, commands, tests),
    `warming`, or `ready`; with the outcome per corpus.

    A worker of `manage.py serve` is `ready` only once every worker of its server is warm, so a
    load balancer (or a client polling /health/) does not send a burst of traffic to the first
    warm worker while the others still take the CPU to warm.
    """
    state = STATE.warming["state"]
    if state == READY and not _all_workers_warm():
        state = WARMING
    return {"state": state, "corpora": dict(STATE.warming["corpora"])}


def _all_workers_warm() -> bool:
    directory, workers = _server["directory"], _server["workers"]
    if not directory or not workers:
        return True
    try:
        pids = [int(name) for name in os.listdir(directory) if name.isdigit()]
    except OSError as exc:
        # Fail closed: a worker that cannot see its siblings does not know they are warm, and saying
        # ready would send a load balancer's burst to it while the others still warm.
        logger.warning("cannot read the warm workers' directory %s (%s): reporting warming", directory, exc)
        return False
    return sum(1 for pid in pids if _alive(pid)) >= int(workers)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def begin() -> None:
    STATE.warming["state"] = WARMING


def record(name: str, outcome: dict) -> None:
    """How warming corpus `name` went: {"state": "ok", "seconds": ...} or {"state": "error", "error": ...}."""
    STATE.warming["corpora"][name] = outcome


def ready() -> None:
    """This process is warm; it says so to its server's other workers."""
    STATE.warming["state"] = READY
    _announce_warm()


def _announce_warm() -> None:
    directory = _server["directory"]
    if directory:
        with contextlib.suppress(OSError):
            Path(directory, str(os.getpid())).touch()


def model_threads() -> int:
    """DOCSMCP_LOCAL_THREADS, or the cores divided among the server's workers (at least one)."""
    from django.conf import settings

    if settings.DOCSMCP_LOCAL_THREADS:
        return settings.DOCSMCP_LOCAL_THREADS
    workers = _server["workers"] or 1
    return max(1, (os.cpu_count() or 1) // workers)
