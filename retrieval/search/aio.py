"""One private event loop thread per process, for LanceDB's async API.

Why async at all: LanceDB's sync wrapper makes about six round trips to its own loop per query
(schema reads, projection checks). The index's loads and reads by row ID (chunk text, document
rows) go through `AsyncTable` on this one loop and pay one thread hop each. The full-text legs
do not: they query the Lance dataset directly on a thread pool (retrieval/search/pool.py).

The loop is restarted after a fork (gunicorn preloads, Celery prefork): a child inherits the
loop object but not its thread.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _LoopThread:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def _ensure(self) -> asyncio.AbstractEventLoop:
        if self._loop is not None and self._pid == os.getpid():
            return self._loop
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="retrieval-aio", daemon=True)
                thread.start()
                self._loop, self._pid = loop, os.getpid()
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs `coro` to completion and returns its result (re-raising its exception)."""
        return asyncio.run_coroutine_threadsafe(coro, self._ensure()).result()


LOOP = _LoopThread()
