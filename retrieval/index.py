"""An opened build: its metadata and LanceDB tables, held once per process.

`IndexCache` keeps the index of each build directory open; when a corpus's active build
changes, the caller asks for the new path and gets a freshly opened index while requests
still holding the old object finish on it (builds are immutable, so nothing breaks).
"""

from __future__ import annotations

import threading
from pathlib import Path

import lancedb
import numpy as np

from .build import CHUNKS_TABLE, DOCUMENTS_TABLE, taxonomy_column
from .errors import IndexUnavailable
from .metadata import BuildMetadata, read_metadata


class Index:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.metadata: BuildMetadata = read_metadata(self.path)
        try:
            db = lancedb.connect(self.path / "lancedb")
            self.chunks = db.open_table(CHUNKS_TABLE)
            self.documents = db.open_table(DOCUMENTS_TABLE)
        except Exception as exc:
            raise IndexUnavailable(f"index at {self.path} cannot be opened: {exc}") from exc
        self._lock = threading.Lock()
        self._vectors: tuple[np.ndarray, list[str]] | None = None

    @property
    def build_id(self) -> str:
        return self.metadata.build_id

    @property
    def has_vectors(self) -> bool:
        return bool(self.metadata.embedding)

    @staticmethod
    def column(key: str) -> str:
        return taxonomy_column(key)

    def vectors(self) -> tuple[np.ndarray, list[str]]:
        """All chunk vectors (row-aligned with the returned chunk IDs), loaded on first use.

        Exact search over an in-memory matrix costs a few ms at 100k chunks and loses no recall
        under filters, which an ANN index with a post-filter would.
        """
        if self._vectors is None:
            with self._lock:
                if self._vectors is None:
                    table = self.chunks.search().select(["chunk_id", "vector"]).limit(None).to_arrow()
                    dims = int(self.metadata.embedding["dimensions"]) if self.metadata.embedding else 0
                    flat = table["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False)
                    matrix = np.ascontiguousarray(np.asarray(flat, dtype=np.float32).reshape(-1, dims))
                    self._vectors = (matrix, table["chunk_id"].to_pylist())
        return self._vectors


class IndexCache:
    """Process-wide cache of opened indexes keyed by build directory."""

    def __init__(self, max_open: int = 8):
        self._lock = threading.Lock()
        self._open: dict[Path, Index] = {}
        self.max_open = max_open

    def get(self, path: Path) -> Index:
        path = Path(path)
        index = self._open.get(path)
        if index is not None:
            return index
        with self._lock:
            index = self._open.get(path)
            if index is None:
                index = Index(path)
                if len(self._open) >= self.max_open:
                    self._open.pop(next(iter(self._open)))
                self._open[path] = index
        return index

    def clear(self) -> None:
        with self._lock:
            self._open.clear()


INDEXES = IndexCache()
