"""The `.npy` files under a build's `mapped/`: written whole as bytes, read back as plain read-only arrays
over a mapping of the file, so every process on the host shares the page cache's one copy."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np


def npy_bytes(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, np.ascontiguousarray(array), allow_pickle=False)
    return out.getvalue()


def map_array(path: Path) -> np.ndarray:
    """A plain ndarray over the read-only mapping (which its `.base` keeps open): numpy's memmap
    subclass costs a Python-level `__getitem__` and `__array_finalize__` on every index, about 20
    of them per search."""
    return np.asarray(np.load(path, mmap_mode="r"))
