"""What a serving process does before it accepts its first connection (gunicorn's post_worker_init
in docsmcp_site/gunicorn_conf.py): import everything a request reaches, then warm the corpora.

Django imports the URL configuration, and with it the REST API's schemas and every tool profile
(the transport's registry), on the first request: a second or more, paid by whichever agent came
first, on top of opening the indexes (corpus/serving.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.urls import get_resolver

from corpus.serving import serve_warm

logger = logging.getLogger("docsmcp.mcp")


def import_views() -> None:
    """Imports every view module, the REST API and each tool profile (the transport's registry,
    mcp_endpoint/profiles/registry.py, imports them all); opens nothing."""
    get_resolver().url_patterns  # noqa: B018


def preload_model() -> bool:
    """In gunicorn's master, before the fork: loads the local embedding model when an active build
    needs it, so every worker shares its pages instead of holding its own copy (docs/BENCHMARKS.md).

    Only when each model run uses one thread (DOCSMCP_LOCAL_THREADS, or the cores divided among
    the workers): onnxruntime then runs on the calling thread and has no thread pool for a fork to
    lose. With more threads the workers load it after the fork, as before. Closes the database
    connection it used, which the workers must not inherit.
    """
    from django.db import DatabaseError, connections

    from corpus.selectors import active_builds_embed_with
    from corpus.warming import model_threads
    from retrieval.embeddings import local

    threads = model_threads()
    try:
        wanted = threads == 1 and active_builds_embed_with(local.LocalEmbeddingProvider.name)
    except DatabaseError as exc:  # the workers load the model themselves, as without a preload
        logger.warning("query model not preloaded before the workers fork: database unavailable (%s)", exc)
        wanted = False
    finally:
        connections.close_all()
    if not wanted:
        return False
    local.set_intra_op_threads(threads)
    try:
        local.runtime()
    except Exception as exc:  # a broken model is reported by the workers' searches, as without a preload
        logger.warning("query model not preloaded before the workers fork: %s: %s", type(exc).__name__, exc)
        return False
    return True


# What Lance says at every fork of a process that imported it; preload_index_libraries makes sure that
# forking is safe for what the master holds (nothing opened, no runtime started).
_FORK_WARNINGS = (("lance is not fork-safe", UserWarning),)


def preload_index_libraries() -> None:
    """In gunicorn's master, before the fork: imports Lance and Arrow, which every worker imports to
    warm its corpora, so the workers share their modules and their libraries' relocated pages (about
    30 MiB a worker, docs/BENCHMARKS.md) instead of each making its own. Not LanceDB: a worker reads
    every table through Lance's datasets and never imports it (retrieval/search/index.py).

    Importing opens no dataset and starts no runtime and no thread: Lance's runtime starts on first use,
    in each worker after the fork.
    """
    import warnings

    for message, category in _FORK_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
    from retrieval.storage import load_engine

    load_engine()


def freeze_for_fork() -> None:
    """The master's last step before it forks: every object it made is moved out of the collector's
    reach, so a worker's collections never write to these objects' pages, which then stay shared with
    the master and the other workers instead of being copied into each worker (docs/BENCHMARKS.md)."""
    import gc

    gc.collect()
    gc.freeze()


def serve_ready(notify: Callable[[], None] | None = None) -> dict:
    import_views()  # a no-op after the master's preload
    if notify is not None:
        notify()
    return serve_warm(notify=notify)
