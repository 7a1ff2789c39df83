"""Recording agents' calls and feedback off the request path: a bounded buffer and one writer thread.

The surface that answered a search or read call (the MCP tools through mcp_endpoint/recording.py, the
REST search endpoints) records it as a step of its own: `record(Call(...))` with the observations made
from what the serving calls returned (`ServedSearch.seen`, `CorporaSearch.seen`, `observation(...)`);
serving itself only reads. The call becomes one QueryRecord per corpus observed, appended to an
in-process buffer. A daemon thread, started on
first use, writes the buffer in batches (every FLUSH_SECONDS or BATCH_SIZE records) with
bulk_create. A request never waits on the database for this and never fails because of it:

- the buffer holds at most DOCSMCP_QUERY_LOG_BUFFER records; past that, new ones are dropped and
  counted (`stats()["dropped"]`), with a warning at most once a minute;
- while the database cannot be reached the writer keeps its batch and retries, so an outage shorter
  than what the buffer holds loses nothing.

DOCSMCP_QUERY_LOG: `full` stores everything; `no-text` stores no query text, no feedback comment or
query, and of what an agent named (a read's target, feedback's chunk ID and page) only what resolved to a
chunk or page of the build (filters, hit IDs and what a read opened are kept); `off` stores nothing. Records older than
DOCSMCP_QUERY_LOG_DAYS are deleted by the writer once an hour, by `manage.py prune_query_log`, and by
the Celery task `corpus.prune_query_log`.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger("docsmcp.querylog")

FULL, NO_TEXT, OFF = "full", "no-text", "off"
MODES = (FULL, NO_TEXT, OFF)
SEARCH, READ = "search", "read"
HTTP, STDIO, REST, EVAL = "http", "stdio", "rest", "eval"

FLUSH_SECONDS = 1.0
BATCH_SIZE = 500
TOP_HITS = 10  # hit IDs with scores kept per record
PRUNE_EVERY_SECONDS = 3600.0
PRUNE_CHUNK = 5000
WARN_EVERY_SECONDS = 60.0
MAX_QUERY_CHARS = 4000
# Sent by the eval runner. Honoured when its value is `eval_token()` (this server's own runs) or when
# the caller's key holds the `build` scope (who may start eval runs); anyone else is logged as usual.
EVAL_HEADER = "X-Docsmcp-Eval"
# Arguments that are not filters: free text, opaque tokens, vectors.
NOT_FILTERS = frozenset({"query", "queries", "cursor", "query_embedding", "chunk", "comment", "chunk_id",
                         "document_id", "document", "section", "verdict"})
MAX_FILTER_CHARS = 200
_LIMITS = {"corpus": 100, "version": 100, "build_id": 64, "profile": 40, "tool": 64, "surface": 10,
           "target": 1000, "client": 200, "key_name": 100, "chunk_id": 1000, "filepath": 1000,
           "query": MAX_QUERY_CHARS, "comment": 2000, "verdict": 20, "coverage": 12}


def mode() -> str:
    value = settings.DOCSMCP_QUERY_LOG
    return value if value in MODES else FULL


def retention_days() -> int:
    return settings.DOCSMCP_QUERY_LOG_DAYS


def eval_token() -> str:
    """What this server's eval runner sends in EVAL_HEADER: derived from the Django secret, so only a
    process holding it (a worker of this installation) can mark calls as an eval run's."""
    return hmac.new(settings.SECRET_KEY.encode(), b"docsmcp-eval-v1", hashlib.sha256).hexdigest()


# --- one call, as the surface that answered it records it ------------------------------------------


@dataclass
class Observation:
    """What one call found in one corpus (made by corpus.serving's results: `.seen`)."""

    corpus: str
    version: str
    build_id: str
    hits: list[list[Any]]
    total: int
    target: str | None
    query: str | None
    filters: dict[str, Any] | None
    coverage: tuple[str, float] | None = None  # a search's (verdict, score)


@dataclass
class Call:
    """One recorded call: who asked what, and what the search or read found (its observations)."""

    surface: str
    tool: str
    kind: str = SEARCH
    client: str = ""
    key_name: str = ""
    is_eval: bool = False
    profile: str = ""
    corpus: str = ""  # the corpus named by the caller: the record's corpus when nothing was observed
    query: str = ""
    filters: dict[str, Any] = field(default_factory=dict)
    target: str = ""  # what the caller asked to read: stored only as an observation resolved it, in no-text mode
    is_error: bool = False
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.perf_counter)
    observations: list[Observation] = field(default_factory=list)
    latency_ms: float = 0.0
    text: bool = True  # DOCSMCP_QUERY_LOG was `full` when the call ended


def observation(index: Any, hits: Iterable[tuple[str, float | None]] = (), *, total: int | None = None,
                target: str | None = None, query: str | None = None, filters: dict[str, Any] | None = None,
                coverage: Any = None) -> Observation:
    """What a call found in one opened build (retrieval.search.index.Index): its corpus, version and build
    from the index's metadata. `hits`: (id, score) pairs, best first; `total`: how many hits there were
    (default: len(hits)); `coverage`: a search's verdict (retrieval.search.coverage.Coverage). A search of
    several corpora or queries makes one for each, and `query`/`filters` then say which this one was."""
    metadata = index.metadata
    return found(corpus=metadata.corpus, version=str(metadata.stats.get("version") or ""),
                 build_id=str(index.build_id), hits=hits, total=total, target=target, query=query,
                 filters=filters, coverage=coverage)


def found(*, corpus: str, version: str = "", build_id: str = "", hits: Iterable[tuple[str, float | None]] = (),
          total: int | None = None, target: str | None = None, query: str | None = None,
          filters: dict[str, Any] | None = None, coverage: Any = None) -> Observation:
    """`observation` for what is not an opened build (the CiteLoom chunk store)."""
    hits = hits if isinstance(hits, list) else list(hits)  # shaped into rows by the writer, off the request
    return Observation(corpus=corpus, version=version, build_id=build_id, hits=hits[:TOP_HITS],
                       total=len(hits) if total is None else int(total), target=target, query=query,
                       filters=filters, coverage=None if coverage is None else (coverage.verdict, coverage.score))


def record(call: Call) -> bool:
    """Queue one finished call (its latency counted from `call.started` to now); False when it was not
    queued (logging off, or the buffer full). Never raises: recording must never cost the call."""
    if mode() == OFF:
        return False
    try:
        call.latency_ms = (time.perf_counter() - call.started) * 1000.0
        call.text = mode() == FULL
        return _enqueue("call", call)
    except Exception:
        logger.exception("query log: a call could not be recorded")
        return False


def filters_of(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a tool call that narrow it (taxonomy filters, limits, collections), without
    free text, cursors or vectors."""
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        if key in NOT_FILTERS or value is None:
            continue
        if isinstance(value, str | int | float | bool):
            out[key] = value if not isinstance(value, str) else value[:MAX_FILTER_CHARS]
        elif isinstance(value, list | dict) and len(repr(value)) <= MAX_FILTER_CHARS:
            out[key] = value
    return out


def _clean(value: Any, name: str) -> Any:
    if isinstance(value, str):
        value = value.replace("\x00", "")
        limit = _LIMITS.get(name)
        return value[:limit] if limit else value
    return value


def _call_rows(scope: Call) -> list[dict[str, Any]]:
    """The QueryRecord rows of a closed call: one per corpus (and query) observed, else one."""
    base = {"at": scope.at, "profile": scope.profile, "tool": scope.tool, "surface": scope.surface,
            "latency_ms": round(scope.latency_ms, 3), "is_error": scope.is_error, "client": scope.client,
            "key_name": scope.key_name, "is_eval": scope.is_eval}
    # Nothing found (an error, an unknown ID): the record says what was asked; in no-text mode only what
    # resolved, so a read's target (free text an agent sent) is kept only as an observation named it.
    asked = scope.target if scope.text else ""
    observations = scope.observations or [Observation(corpus=scope.corpus, version="", build_id="", hits=[],
                                                      total=0, target=asked, query=None, filters=None)]
    rows = []
    for seen in observations:
        head, _, pinned = seen.corpus.partition("@")
        query = seen.query if seen.query is not None else scope.query
        top = [[str(i), None if s is None else round(float(s), 4)] for i, s in seen.hits]
        row = {**base, "corpus": head, "version": seen.version or pinned, "build_id": seen.build_id,
               "query": query if (scope.text and scope.kind == SEARCH) else "",
               "filters": seen.filters if seen.filters is not None else scope.filters,
               "target": (seen.target if seen.target is not None else asked) if scope.kind == READ else "",
               "hits": seen.total, "top": top,
               "top_score": max((s for _, s in top if s is not None), default=None),
               "coverage": seen.coverage[0] if seen.coverage else "",
               "coverage_score": seen.coverage[1] if seen.coverage else None}
        rows.append({k: _clean(v, k) for k, v in row.items()})
    return rows


def record_feedback(*, surface: str, corpus: str, verdict: str, version: str = "", build_id: str = "",
                    profile: str = "", tool: str = "", chunk_id: str = "", query: str = "", comment: str = "",
                    client: str = "", key_name: str = "", filepath: str | None = None) -> bool:
    """Queue one Feedback row; False when it was not queued (logging off, or the buffer full).
    `filepath` defaults to chunk_id's page; in no-text mode the caller passes only IDs that resolved."""
    if mode() == OFF:
        return False
    text = mode() == FULL
    head, _, pinned = corpus.partition("@")
    row = {"at": datetime.now(UTC), "corpus": head, "version": version or pinned, "build_id": build_id,
           "profile": profile, "tool": tool, "surface": surface, "verdict": verdict, "chunk_id": chunk_id,
           "filepath": chunk_id.partition("#")[0] if filepath is None else filepath, "query": query if text else "",
           "comment": comment if text else "", "client": client, "key_name": key_name}
    return _enqueue("feedback", {k: _clean(v, k) for k, v in row.items()})


# --- the buffer and its writer ----------------------------------------------------------------------

_buffer: deque[tuple[str, Any]] = deque()  # ("call", Call) or ("feedback", row)
_lock = threading.Lock()
_wake = threading.Event()
_flush_waiters: list[threading.Event] = []
_writer: tuple[int, threading.Thread] | None = None
_pending: list[tuple[str, Any]] = []  # the writer's batch, kept while the database is away
_counts = {"written": 0, "dropped": 0, "failed_batches": 0}
_last_warning = {"dropped": 0.0, "failed": 0.0}


def capacity() -> int:
    return max(1, settings.DOCSMCP_QUERY_LOG_BUFFER)


def _enqueue(kind: str, item: Any) -> bool:
    if len(_buffer) >= capacity():
        _counts["dropped"] += 1
        _warn("dropped", "query log: the buffer is full (%d calls); %d dropped so far", capacity(), _counts["dropped"])
        return False
    _buffer.append((kind, item))
    _ensure_writer()
    if len(_buffer) >= BATCH_SIZE:
        _wake.set()
    return True


def _warn(which: str, message: str, *args: Any) -> None:
    now = time.monotonic()
    if now - _last_warning[which] >= WARN_EVERY_SECONDS:
        _last_warning[which] = now
        logger.warning(message, *args)


def stats() -> dict[str, int]:
    """Records waiting, written, dropped (buffer full or unwritable), and batches that failed."""
    return {"queued": len(_buffer), **_counts}


def _ensure_writer() -> None:
    global _writer
    writer = _writer
    if writer is not None and writer[0] == os.getpid() and writer[1].is_alive():
        return
    with _lock:
        writer = _writer
        if writer is not None and writer[0] == os.getpid() and writer[1].is_alive():
            return
        thread = threading.Thread(target=_run, name="docsmcp-querylog", daemon=True)
        _writer = (os.getpid(), thread)
        thread.start()


def flush(timeout: float = 10.0) -> bool:
    """Write everything buffered now; True when it all reached the database within `timeout` seconds."""
    if not _buffer and not _pending:
        return True
    done = threading.Event()
    with _lock:
        _flush_waiters.append(done)
    _ensure_writer()
    _wake.set()
    return done.wait(timeout) and not _buffer and not _pending


def _run() -> None:
    last_prune = time.monotonic() - PRUNE_EVERY_SECONDS + 60.0  # first prune a minute after start
    while True:
        _wake.wait(FLUSH_SECONDS)
        _wake.clear()
        with _lock:
            waiters = list(_flush_waiters)
            _flush_waiters.clear()
        try:
            _drain()
            if time.monotonic() - last_prune >= PRUNE_EVERY_SECONDS:
                last_prune = time.monotonic()
                prune()
        except Exception:
            logger.exception("query log writer")
        finally:
            if waiters or not _buffer:
                _close_connection()
        for waiter in waiters:
            waiter.set()


def _drain() -> None:
    """Write the pending batch, then the buffer, batch by batch, until done or the database is away."""
    pending = _pending
    while True:
        while len(pending) < BATCH_SIZE and _buffer:
            try:
                pending.append(_buffer.popleft())
            except IndexError:
                break
        if not pending:
            return
        try:
            _write(pending)
        except (OperationalError, InterfaceError) as exc:  # the database is away: keep the batch, retry later
            _counts["failed_batches"] += 1
            _warn("failed", "query log: the database cannot be reached (%s); %d records wait to be written",
                  exc, len(pending) + len(_buffer))
            _close_connection()
            return
        except Exception:  # this batch cannot be written at all (bad data, not an outage): never retry it
            _counts["dropped"] += len(pending)
            logger.exception("query log: %d calls could not be written and were dropped", len(pending))
            _close_connection()
        else:
            _counts["written"] += len(pending)
        pending.clear()


def _write(batch: list[tuple[str, Any]]) -> None:
    from .models import Feedback, QueryRecord

    records = [QueryRecord(**row) for kind, item in batch if kind == "call" for row in _call_rows(item)]
    feedback = [Feedback(**item) for kind, item in batch if kind == "feedback"]
    if records:
        QueryRecord.objects.bulk_create(records, batch_size=BATCH_SIZE)
    if feedback:
        Feedback.objects.bulk_create(feedback, batch_size=BATCH_SIZE)


def _close_connection() -> None:
    """The writer's connection is closed after each burst of writes: it reconnects after an outage, and
    never holds a connection open between bursts."""
    with suppress(Exception):
        connection.close()


@atexit.register
def _flush_at_exit() -> None:
    """A process that ends (a stdio server whose client left) writes what it still holds."""
    if (_buffer or _pending) and _writer is not None and _writer[0] == os.getpid():
        flush(timeout=5.0)


# --- retention ----------------------------------------------------------------------------------------


def prune(days: int | None = None, *, everything: bool = False) -> dict[str, int]:
    """Delete query records and feedback older than `days` (default DOCSMCP_QUERY_LOG_DAYS; 0 keeps
    everything), or all of them, in chunks so a large backlog never holds one long lock. Returns
    what was deleted."""
    from .models import Feedback, QueryRecord

    days = retention_days() if days is None else days
    deleted = {"records": 0, "feedback": 0}
    if days <= 0 and not everything:
        return deleted
    cutoff = datetime.now(UTC) + timedelta(days=1) if everything else datetime.now(UTC) - timedelta(days=days)
    for label, model in (("records", QueryRecord), ("feedback", Feedback)):
        while True:
            ids = list(model.objects.filter(at__lt=cutoff).values_list("pk", flat=True)[:PRUNE_CHUNK])
            if not ids:
                break
            deleted[label] += model.objects.filter(pk__in=ids).delete()[0]
    return deleted
