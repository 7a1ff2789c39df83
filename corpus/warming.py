"""A serving process warms what it serves before it takes requests, and warms a newly activated
build before the build replaces the old one, so neither a restart nor an activation makes the
first agent wait while an index loads.

`serve_warm` runs once per serving process (gunicorn's post_worker_init hook, before the worker
accepts connections): it opens the active build of every corpus, loads it and the embedding model
it needs, runs a search on it, and then starts a watcher thread that looks up the active builds
every POINTER_TTL seconds. When one changed, `IndexCache` opens and warms the new build in the
background and swaps it in only once warm; until then requests finish on the previous build.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.db import close_old_connections, connections

from retrieval.embeddings.local import set_intra_op_threads
from retrieval.errors import RetrievalError

from .errors import CorpusError
from .models import Corpus
from .selectors import POINTER_TTL, active_index, query_embedder

logger = logging.getLogger("docsmcp.corpus")

LAZY, WARMING, READY = "lazy", "warming", "ready"
_state = {"state": LAZY, "corpora": {}}
_watcher: threading.Thread | None = None


def warm(index) -> None:
    """Loads an opened build and the embedding model its queries need, through a real search."""
    from retrieval.search.warm import warm_index

    warm_index(index, query_embedder(index))


# Set by the gunicorn master for its workers: a directory where each warm worker leaves a file
# named by its pid, and how many workers the server runs.
SERVE_DIR_ENV, SERVE_WORKERS_ENV = "DOCSMCP_SERVE_STATE_DIR", "DOCSMCP_SERVE_WORKERS"


def _warm_in_background(index) -> None:
    """`warm` on IndexCache's thread, which then ends: its database connection must not outlive it."""
    try:
        warm(index)
    finally:
        connections.close_all()


def warm_state() -> dict:
    """This process's warming: `lazy` (it opens indexes on first use: runserver, commands, tests),
    `warming`, or `ready`; with the outcome per corpus.

    A worker of `manage.py serve` is `ready` only once every worker of its server is warm, so a
    load balancer (or a client polling /health/) does not send a burst of traffic to the first
    warm worker while the others still take the CPU to warm.
    """
    state = _state["state"]
    if state == READY and not _all_workers_warm():
        state = WARMING
    return {"state": state, "corpora": dict(_state["corpora"])}


def _all_workers_warm() -> bool:
    directory, workers = os.environ.get(SERVE_DIR_ENV), os.environ.get(SERVE_WORKERS_ENV)
    if not directory or not workers:
        return True
    try:
        pids = [int(name) for name in os.listdir(directory) if name.isdigit()]
    except OSError:
        return True
    return sum(1 for pid in pids if _alive(pid)) >= int(workers)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _announce_warm() -> None:
    directory = os.environ.get(SERVE_DIR_ENV)
    if directory:
        with contextlib.suppress(OSError):
            Path(directory, str(os.getpid())).touch()


def _served_names() -> list[str]:
    return list(Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, active_build__isnull=False)
                .order_by("name").values_list("name", flat=True))


def serve_warm(notify: Callable[[], None] | None = None, watch: bool = True) -> dict:
    """Warms the active build of every corpus; then (with `watch`) warms new activations as they come.

    `notify` is called between corpora, so a supervisor that expects signs of life (gunicorn's
    worker timeout) does not kill a process warming a large corpus.
    """
    from retrieval.search.index import INDEXES

    _state["state"] = WARMING
    started = time.perf_counter()
    set_intra_op_threads(_model_threads())
    try:
        names = _served_names()
    except Exception as exc:  # no database at start: serve what requests bring, opened on first use
        logger.warning("warming skipped: the corpora cannot be listed (%s)", exc)
        names = []
    for name in names:
        began = time.perf_counter()
        try:
            warm(active_index(name))
            _state["corpora"][name] = {"state": "ok", "seconds": round(time.perf_counter() - began, 3)}
        except (RetrievalError, CorpusError) as exc:
            _state["corpora"][name] = {"state": "error", "error": str(exc)}
            logger.warning("corpus %s not warmed: %s", name, exc)
        except Exception as exc:  # never keep a worker from serving: its requests report what is wrong
            _state["corpora"][name] = {"state": "error", "error": str(exc)}
            logger.exception("corpus %s not warmed", name)
        if notify is not None:
            notify()
    close_old_connections()
    # What is loaded now lives as long as the process: frozen, the collector's full passes skip it.
    # Unfrozen, one pass over a warm worker's 140k objects took 50-100 ms every few hundred
    # requests, stalling whichever searches were running (docs/BENCHMARKS.md).
    gc.collect()
    gc.freeze()
    INDEXES.warmer = _warm_in_background
    _state["state"] = READY
    _announce_warm()
    logger.info("warmed %d corpora in %.2fs", len(names), time.perf_counter() - started)
    if watch:
        start_watcher()
    return warm_state()


def _model_threads() -> int:
    """DOCSMCP_LOCAL_THREADS, or the cores divided among the server's workers (at least one)."""
    from django.conf import settings

    if settings.DOCSMCP_LOCAL_THREADS:
        return settings.DOCSMCP_LOCAL_THREADS
    workers = int(os.environ.get(SERVE_WORKERS_ENV) or 1)
    return max(1, (os.cpu_count() or 1) // workers)


def start_watcher(interval: float = POINTER_TTL) -> None:
    """A daemon thread that notices activations without waiting for a request to ask."""
    global _watcher
    if _watcher is not None and _watcher.is_alive():
        return
    _watcher = threading.Thread(target=_watch, args=(interval,), name="docsmcp-activation-watcher", daemon=True)
    _watcher.start()


def _watch(interval: float) -> None:
    while True:
        time.sleep(interval)
        try:
            for name in _served_names():
                active_index(name)  # a changed build starts warming in the background (IndexCache)
        except Exception as exc:  # the database may be down: requests keep the last known builds
            logger.debug("activation watcher: %s", exc)
        finally:
            close_old_connections()
