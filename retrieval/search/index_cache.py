"""The opened builds a process keeps, one per corpus, within a count or a memory budget.

When a corpus's active build changes, the caller asks for the new path and gets a freshly opened
index while requests still holding the old object finish on it (builds are immutable, so nothing
breaks).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from retrieval import storage
from retrieval.storage import Location

from .index import Index

log = logging.getLogger("retrieval.search")

# What an open, warm index holds per chunk beside its vectors (one byte per dimension, quantised):
# the catalog columns, the in-memory chunk texts, filter masks. Calibrated on the Kubernetes corpus
# (124.5k chunks, 384 dimensions: about 300 MB once warm).
CHUNK_OVERHEAD_BYTES = 2000
INDEX_BASE_BYTES = 256 * 1024


def estimated_bytes(index: Index) -> int:
    """The memory `index` holds once warm, estimated from its metadata (no table is read): what the
    cache's memory budget counts."""
    chunks = int(index.metadata.stats.get("total_chunks") or 0)
    dimensions = int((index.metadata.embedding or {}).get("dimensions") or 0)
    return INDEX_BASE_BYTES + chunks * (dimensions + CHUNK_OVERHEAD_BYTES)


class IndexCache:
    """Process-wide cache of opened indexes, one per slot (a corpus name; the build directory
    when none is given).

    It keeps the most recently used indexes: at most `max_open` of them and, with a memory budget
    (`budget_bytes`, set by a serving process from DOCSMCP_SERVING_MEMORY_MB), only as many as fit
    in it by `estimated_bytes`; the least recently used slot goes first. Pinned slots (corpora
    loaded at start) are never evicted, and neither is the index just opened, even when it alone
    is over the budget.

    Opening a corpus's new build drops its previous one from the cache, so that index's memory
    (about 300 MB at 124.5k chunks with vectors) goes as soon as the requests still holding it
    finish, instead of staying until `max_open` other builds push it out.

    With a `warmer` (set by a serving process), a slot whose corpus moved to a new build keeps
    answering from the old build while a background thread opens the new one and runs the warmer
    on it; the new build replaces the old only once warm, so no request waits for the switch.
    Without one (commands, tests, stdio) the new build is opened in the caller, as before.
    """

    def __init__(self, max_open: int | None = 8):
        self._lock = threading.Lock()
        self._open: dict[str, Index] = {}
        self._warming: dict[str, Location] = {}  # slot -> the build being warmed for it
        self._used: dict[str, float] = {}  # slot -> when it last answered (set without the lock)
        self._sizes: dict[str, int] = {}  # slot -> estimated_bytes of its index
        self.max_open = max_open
        self.budget_bytes: int | None = None
        self.pinned: frozenset[str] = frozenset()
        self.warmer: Callable[[Index], None] | None = None

    def configure(self, *, budget_bytes: int | None, pinned: frozenset[str] = frozenset(),
                  max_open: int | None = None) -> None:
        """A memory budget replaces the count limit (None: unbounded); `pinned` slots are never evicted."""
        with self._lock:
            self.budget_bytes, self.pinned, self.max_open = budget_bytes, frozenset(pinned), max_open
            self._evict(keep=None)

    def loaded(self, slot: str) -> bool:
        return slot in self._open

    def held_bytes(self) -> int:
        return sum(self._sizes.get(key, 0) for key in list(self._open))

    def get(self, path: Location, slot: str | None = None) -> Index:
        path = storage.as_location(path)
        key = slot if slot is not None else str(path)
        index = self._open.get(key)
        if index is not None and index.path == path:
            self._used[key] = time.monotonic()
            return index
        with self._lock:
            index = self._open.get(key)
            if index is not None and index.path == path:
                self._used[key] = time.monotonic()
                return index
            warmer = self.warmer
            if index is not None and warmer is not None and (storage.is_remote(index.path) or index.path.is_dir()):
                if self._warming.get(key) != path:
                    self._warming[key] = path
                    threading.Thread(target=self._warm_then_swap, args=(key, path, warmer),
                                     name=f"docsmcp-warm-{key}", daemon=True).start()
                return index  # the old build answers until the new one is warm
            index = Index(path)
            self._put(key, index)
        return index

    def put_warm(self, index: Index, slot: str | None = None) -> None:
        """Caches an index the caller has already warmed, replacing the slot's previous build."""
        with self._lock:
            self._put(slot if slot is not None else str(index.path), index)

    def _put(self, key: str, index: Index) -> None:
        self._open.pop(key, None)
        self._open[key] = index
        self._sizes[key] = estimated_bytes(index)
        self._used[key] = time.monotonic()
        self._evict(keep=key)

    def _evict(self, keep: str | None) -> None:
        """Drops least recently used slots while over the count or the budget (called with the lock held)."""
        while True:
            over = self.max_open is not None and len(self._open) > self.max_open
            over = over or self.budget_bytes is not None and self.held_bytes() > self.budget_bytes
            candidates = [k for k in self._open if k != keep and k not in self.pinned]
            if not over or not candidates:
                return
            victim = min(candidates, key=lambda k: self._used.get(k, 0.0))
            self._open.pop(victim, None)
            self._sizes.pop(victim, None)
            self._used.pop(victim, None)
            log.debug("index %s closed (least recently used; %d open, about %d MB held)", victim, len(self._open),
                     self.held_bytes() // (1024 * 1024))

    def _warm_then_swap(self, key: str, path: Location, warmer: Callable[[Index], None]) -> None:
        try:
            index = Index(path)
            warmer(index)
        except Exception:
            log.exception("warming build %s failed; the first request will open it", path)
            with self._lock:
                if self._warming.get(key) == path:
                    del self._warming[key]
                    self._open.pop(key, None)  # the next request opens the new build itself
            return
        with self._lock:
            if self._warming.get(key) == path:
                del self._warming[key]
                self._put(key, index)

    def clear(self) -> None:
        with self._lock:
            self._open.clear()
            self._warming.clear()
            self._sizes.clear()
            self._used.clear()


INDEXES = IndexCache()
