"""The one owner of a serving process's state: every cache the request path reads, and its `forget`.

Each cache of serving lives on `STATE` (a `ServingState`), none in module globals: the active-build pointers,
the version lists, the corpus count, the cards of list_corpora, the documents of each build, the routing
profiles, the names checked per URL, the opened indexes (retrieval.search.index_cache.INDEXES), the memos of the
floors above (the MCP tool lists) and the warming state /health/ reports. `forget(name)` is what an
activation calls; `forget(process=True)` puts the process back as it started (tests, a reload). A cache
added anywhere else would serve stale builds under multi-worker activation races; add it here.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import DatabaseError

# Seconds a worker trusts a cached active-build pointer (and the other lookups cached with it): a push
# webhook's build is served within this of its activation, for one small query per corpus and worker each
# period. While the database cannot be reached the last known pointer is kept, however old, so searches
# keep answering.
POINTER_TTL = 0.5
CORPORA_SEARCH_THREADS = 4
LAZY, WARMING, READY = "lazy", "warming", "ready"

T = TypeVar("T")


class ServingState:
    """Every cache of a serving process, with one lock and one generation.

    A lookup that raced an activation (its load started before `forget`) is not cached: `forget` bumps the
    generation and `remember` keeps a value only when the generation it started under is still current.
    An entry's age counts from when its load began (`began()`), so it is never trusted longer than the
    TTL after the database was asked; tests hold `clock` still to make a warm call's cache hits certain
    however long the call takes.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.clock: Callable[[], float] = time.monotonic  # a test may hold it still
        self.ttl = POINTER_TTL
        self._reset()

    def _reset(self) -> None:
        self.generation = 0
        # (table, key) -> how to load the entry again: what the watcher refreshes ahead of the requests
        self.reloaders: dict[tuple[str, Any], Callable[[], Any]] = {}
        self.read: set[tuple[str, Any]] = set()  # entries a request read since the watcher's last pass
        self.watched_at: float | None = None  # when the watcher last refreshed what requests read
        # (table, key) -> (when, value): the active pointers ("pointer"), version lists ("versions"), the
        # corpus count ("count") and names ("names"), the names a URL may serve ("served"), the default corpus
        # ("pointer", None)
        self.entries: dict[tuple[str, Any], tuple[float, Any]] = {}
        self.documents: dict[str, list[Any]] = {}  # build path -> its documents (a build never changes)
        self.summaries: dict[str, Any] = {}  # build path -> what list_corpora ranks it by
        self.routes: dict[tuple[str, str, str], Any] = {}  # (corpus, build, description) -> routing profile
        self.cards: tuple[Any, list[Any]] | None = None  # (catalog signature, every served corpus's card)
        self.memos: dict[str, dict[Any, Any]] = {}  # caches of the floors above, by owner (the tool lists)
        self.warming: dict[str, Any] = {"state": LAZY, "corpora": {}}
        self.last_stale_warning = 0.0
        self._executor: tuple[int, ThreadPoolExecutor] | None = None
        self._build_cache: Any = None
        self._cursor_secret: bytes | None = None

    # --- entries with a time to live ----------------------------------------------------------------

    def fresh(self, table: str, key: Any) -> tuple[bool, Any]:
        """(whether the entry is younger than the TTL, its value or None).

        While the process's activation watcher keeps refreshing what requests read (`refresh`, every TTL), a
        request trusts such an entry for twice the TTL: the watcher has loaded it again by then, so the
        request never waits on the database for it (a refresh cost a request 7 ms, on one call in 14).
        Should the watcher stall, the entry ages past twice the TTL and the request loads it itself."""
        cached = self.entries.get((table, key))
        if cached is None:
            return False, None
        now = self.clock()
        limit = self.ttl
        if (table, key) in self.reloaders and not getattr(_watching, "active", False):
            self.read.add((table, key))
            if self.watched_at is not None and now - self.watched_at < 2 * self.ttl:
                limit = 2 * self.ttl
        return now - cached[0] < limit, cached[1]

    def known(self, table: str, key: Any) -> bool:
        return (table, key) in self.entries

    def began(self) -> tuple[int, float]:
        """(generation, now) before a load: what `remember` needs to keep its value, or not."""
        return self.generation, self.clock()

    def remember(self, table: str, key: Any, value: T, began: tuple[int, float],
                 reload: Callable[[], Any] | None = None) -> T:
        """Caches `value`, unless `forget` ran since `began`; `reload` loads it again for `refresh`."""
        generation, at = began
        with self.lock:
            if generation == self.generation:
                self.entries[(table, key)] = (at, value)
                if reload is not None:
                    self.reloaders[(table, key)] = reload
        return value

    def refresh(self) -> int:
        """Loads again every entry a request read since the last refresh (the activation watcher calls
        this every TTL), so requests find them fresh. An entry whose load fails is left as it was on a
        database error (the requests keep serving it) and dropped otherwise (the next request loads it
        and reports what is wrong). Returns how many were loaded."""
        with self.lock:
            read = list(self.read)  # one step: requests add to the set while this runs, without the lock
            self.read.clear()
            wanted = [(k, self.reloaders[k]) for k in read if k in self.reloaders and k in self.entries]
        for key, reload in wanted:
            began = self.began()
            try:
                value = reload()
            except DatabaseError:
                continue
            except Exception:
                with self.lock:
                    self.entries.pop(key, None)
                continue
            self.remember(*key, value, began, reload)
        self.watched_at = self.clock()
        return len(wanted)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """The activation watcher's pass: what it reads is not a request's read, so `refresh` does not
        keep loading what only the watcher looks at."""
        _watching.active = True
        try:
            yield
        finally:
            _watching.active = False

    def remember_if_old(self, table: str, key: Any, value: Any) -> None:
        """Caches `value` unless a fresh entry is there already (pointers read in bulk with a search)."""
        with self.lock:
            fresh, _ = self.fresh(table, key)
            if not fresh:
                self.entries[(table, key)] = (self.clock(), value)

    def pointers(self) -> dict[str, str]:
        """The active index path this process last saw per corpus (what it serves while the database is down)."""
        return {key: value for (table, key), (_, value) in list(self.entries.items())
                if table == "pointer" and key is not None}

    def memo(self, owner: str, key: Any, make: Callable[[], T], limit: int = 64) -> T:
        """`make()`, kept under `owner` while the process lives or until `forget`."""
        table = self.memos.setdefault(owner, {})
        if key in table:
            return table[key]
        value = make()
        with self.lock:
            if len(table) > limit:
                table.clear()
            table[key] = value
        return value

    # --- forgetting -------------------------------------------------------------------------------------

    def forget(self, name: str | None = None, *, process: bool = False) -> None:
        """Drop what may name an old build: of corpus `name` (every version of it) and every lookup across
        corpora, or of every corpus. An activation calls this so the process that made it serves the new
        build at once (others see it within the TTL). `process=True` also closes the opened indexes and
        resets warming and the derived keys, as in a process that just started."""
        with self.lock:
            self.generation += 1
            head = name.partition("@")[0] if name else None
            for table, key in list(self.entries):
                if name is None or table != "pointer" or key is None or key.partition("@")[0] == head:
                    self.entries.pop((table, key), None)
                    self.reloaders.pop((table, key), None)
            self.cards = None
            self.memos.clear()
            if process:
                executor = self._executor
                generation = self.generation
                self._reset()
                self.generation = generation
                if executor is not None and executor[0] == os.getpid():
                    executor[1].shutdown(wait=False)
        if process:
            indexes = self.indexes
            indexes.warmer = None
            indexes.configure(budget_bytes=None, pinned=frozenset(), max_open=8)
            indexes.clear()

    @property
    def indexes(self) -> Any:
        """The opened builds (retrieval.search.index_cache.INDEXES), one per corpus, least recently used closed."""
        from retrieval.search.index_cache import INDEXES

        return INDEXES

    # --- per-process objects --------------------------------------------------------------------------

    def ranking_pool(self) -> ThreadPoolExecutor:
        """The threads that rank corpora side by side; made once per process (a forked worker makes its
        own), since starting threads for every search cost more than a small corpus's ranking."""
        executor = self._executor
        if executor is None or executor[0] != os.getpid():
            with self.lock:
                executor = self._executor
                if executor is None or executor[0] != os.getpid():
                    executor = (os.getpid(), ThreadPoolExecutor(CORPORA_SEARCH_THREADS,
                                                                thread_name_prefix="docsmcp-corpora"))
                    self._executor = executor
        return executor[1]

    def build_cache(self) -> Any:
        """This host's local copies of object-store builds (retrieval/storage/cache.py)."""
        if self._build_cache is None:
            from django.conf import settings

            from retrieval.storage.cache import BuildCache

            self._build_cache = BuildCache(settings.DOCSMCP_INDEX_CACHE_DIR)
        return self._build_cache

    def cursor_secret(self) -> bytes:
        """Key for cursor HMACs, derived from the Django secret so it is shared by every worker."""
        if self._cursor_secret is None:
            from django.conf import settings

            self._cursor_secret = hmac.new(settings.SECRET_KEY.encode(), b"docsmcp-cursor-v1",
                                           hashlib.sha256).digest()
        return self._cursor_secret


_watching = threading.local()  # `active` while the watcher's pass runs on this thread

STATE = ServingState()
