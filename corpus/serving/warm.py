"""Warming: a serving process loads every pinned corpus's active build before it takes requests, and then
watches for activations (where it is in that: corpus/warming.py, on STATE.warming)."""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import close_old_connections, connections

from retrieval.errors import RetrievalError
from retrieval.storage import load_engine

from .. import warming
from ..errors import CorpusError
from ..selectors import active_index_path, served_corpus_names
from .active import active_index, build_location, query_embedder, remember_default
from .state import POINTER_TTL, STATE

if TYPE_CHECKING:
    from retrieval.search.index import Index

logger = logging.getLogger("docsmcp.corpus")


def warm(index: Index) -> None:
    """Loads an opened build and the embedding model its queries need, through a real search."""
    from retrieval.search.warm import warm_index

    warm_index(index, query_embedder(index))


def _warm_in_background(index: Index) -> None:
    """`warm` on IndexCache's thread, which then ends: its database connection must not outlive it."""
    try:
        warm(index)
    finally:
        connections.close_all()


def _warm_model(name: str) -> None:
    """Loads the query embedding model of one corpus without loading its index (only its metadata.json is
    read), so a worker that pins no corpus does not make its first search load the model."""
    from retrieval.search.index import Index

    try:
        embedder = query_embedder(Index(build_location(active_index_path(name))))
        if embedder is not None:
            embedder.embed_query("warm up")
    except Exception as exc:  # the first search loads it instead, and reports what is wrong
        logger.warning("query model of corpus %s not loaded: %s", name, exc)


def pinned_corpora(names: Sequence[str]) -> list[str]:
    """The corpora a serving process loads at start and never evicts: DOCSMCP_PINNED_CORPORA (comma-separated
    names, or `*` for all); unset, every corpus while there are at most DOCSMCP_PIN_ALL_MAX of them (a small
    server starts as it always did, everything warm), else none (each opens on its first use)."""
    wanted = settings.DOCSMCP_PINNED_CORPORA.strip()
    if wanted == "*":
        return list(names)
    if wanted:
        chosen = {n.strip() for n in wanted.split(",") if n.strip()}
        return [n for n in names if n in chosen]
    return list(names) if len(names) <= settings.DOCSMCP_PIN_ALL_MAX else []


def serve_warm(notify: Callable[[], None] | None = None, watch: bool = True) -> dict:
    """Warms the active build of every pinned corpus (pinned_corpora); then (with `watch`) warms new
    activations of the corpora this process has loaded as they come. Other corpora open on first use
    and stay while they fit DOCSMCP_SERVING_MEMORY_MB (retrieval.search.index_cache.IndexCache).

    `notify` is called between corpora, so a supervisor that expects signs of life (gunicorn's
    worker timeout) does not kill a process warming a large corpus.
    """
    from retrieval.embeddings.local import set_intra_op_threads
    INDEXES = STATE.indexes
    warming.begin()
    started = time.perf_counter()
    set_intra_op_threads(warming.model_threads())
    try:
        names = served_corpus_names()
    except Exception as exc:  # no database at start: serve what requests bring, opened on first use
        logger.warning("warming skipped: the corpora cannot be listed (%s)", exc)
        names = []
    served, names = names, pinned_corpora(names)
    if served and not names:  # every corpus opens on first use: load what any first search would need now
        _warm_model(served[0])
        load_engine()
    budget = settings.DOCSMCP_SERVING_MEMORY_MB
    INDEXES.configure(budget_bytes=budget * 1024 * 1024 if budget else None, pinned=frozenset(names),
                      max_open=None if budget else INDEXES.max_open)
    remember_default()
    for name in names:
        began = time.perf_counter()
        try:
            warm(active_index(name))
            warming.record(name, {"state": "ok", "seconds": round(time.perf_counter() - began, 3)})
        except (RetrievalError, CorpusError) as exc:
            warming.record(name, {"state": "error", "error": str(exc)})
            logger.warning("corpus %s not warmed: %s", name, exc)
        except Exception as exc:  # never keep a worker from serving: its requests report what is wrong
            warming.record(name, {"state": "error", "error": str(exc)})
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
    warming.ready()
    logger.info("warmed %d corpora in %.2fs", len(names), time.perf_counter() - started)
    if watch:
        start_watcher()
    return warming.warm_state()


_watcher: list[threading.Thread] = []  # the process's activation watcher, once started (never restarted)


def start_watcher(interval: float = POINTER_TTL) -> None:
    """A daemon thread that notices activations without waiting for a request to ask."""
    if _watcher and _watcher[0].is_alive():
        return
    thread = threading.Thread(target=_watch, args=(interval,), name="docsmcp-activation-watcher", daemon=True)
    _watcher[:] = [thread]
    thread.start()


def _watch(interval: float) -> None:
    while True:
        time.sleep(interval)
        watch_once()


def watch_once() -> None:
    """One look at the active builds: what requests read since the last look is loaded again ahead of them
    (STATE.refresh), and a loaded corpus whose build changed starts warming the new one in the background
    (IndexCache); a corpus not loaded opens its new build on its first use, not here."""
    with STATE.watching():
        try:
            STATE.refresh()
            remember_default(build=False)  # kept current where no request asked for it
            for name in served_corpus_names():
                if STATE.indexes.loaded(name):
                    active_index(name)
        except Exception as exc:  # the database may be down: requests keep the last known builds
            logger.debug("activation watcher: %s", exc)
        finally:
            close_old_connections()
