"""One small thread pool per process for full-text legs, so a search runs its legs side by side.

A full-text query through Lance's dataset API is one synchronous call that releases the GIL
for its whole run: the legs of a search overlap on separate cores, and the request thread,
meanwhile, runs the vector leg. Measured on Kubernetes (3.6k chunks): the three lexical legs
took 3.4-3.9 ms per search through LanceDB's async API on its event loop thread, 2.6-2.7 ms
one after another through the dataset API, and 1.9-2.2 ms through this pool, with identical
row IDs (docs/BENCHMARKS.md).

A forked child makes a pool of its own: it inherits the executor object but not its threads.
(Lance itself must not be used before a fork; the server opens no index before it forks its
workers, tests/corpus/test_warming.py.)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# A search has at most three lexical legs; one more lets a second request's first leg start
# while the previous search finishes. More would only queue on two cores.
THREADS = 4

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_pid = 0


def submit(fn: Callable[..., T], *args: object) -> Future[T]:
    global _executor, _pid
    if _executor is None or _pid != os.getpid():
        with _lock:
            if _executor is None or _pid != os.getpid():
                _executor = ThreadPoolExecutor(THREADS, thread_name_prefix="retrieval-fts")
                _pid = os.getpid()
    return _executor.submit(fn, *args)
