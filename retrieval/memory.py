"""Keeping a process's memory what it uses: allocator settings, and freed heap given back.

Loading a build decodes whole columns through temporary buffers, many of them allocated by
LanceDB's worker threads. With the default settings a serving process at 124k chunks kept
100 MB of such freed memory on top of the 48 MB of vectors it had loaded.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

M_ARENA_MAX = -8  # mallopt parameter number, from glibc's malloc.h
ARENA_MAX = 2


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to tune
        return None


def tune_allocators() -> None:
    """Points Arrow at the system allocator and caps glibc's malloc arenas, unless the
    environment (ARROW_DEFAULT_MEMORY_POOL, MALLOC_ARENA_MAX) already chose.

    Arrow's default pool (mimalloc) keeps the segments it frees. glibc gives each thread that
    allocates its own arena, up to 8 per core, and malloc_trim could not hand back what the
    loading threads left scattered across them: the vectors step of a 124k-chunk build took
    +70 to +120 MB with the defaults and +47 MB (the vectors themselves) with two arenas.
    """
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        if "pyarrow" in sys.modules:
            sys.modules["pyarrow"].set_memory_pool(sys.modules["pyarrow"].system_memory_pool())
        else:  # Arrow reads it when it first makes its pool: pyarrow need not be imported yet
            os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    libc = _libc()
    if libc is not None and "MALLOC_ARENA_MAX" not in os.environ:
        with contextlib.suppress(AttributeError):
            libc.mallopt(M_ARENA_MAX, ARENA_MAX)


def release_unused_memory() -> None:
    """Returns freed heap pages to the OS after a bulk load (the catalog, the vectors, the
    model's session, whose graph optimisation folds the weights through temporaries)."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.malloc_trim(0)
