"""The one interface every embedding backend speaks, and the spec an index remembers about it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from retrieval.errors import EmbeddingError

Progress = Callable[[int], None]


@dataclass(frozen=True)
class EmbeddingSpec:
    """Identifies a vector space: vectors from two different specs must never be compared."""

    provider: str
    model: str
    dimensions: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> EmbeddingSpec:
        """Reads the {"provider","model","dimensions"} object stored in an index's metadata.json."""
        try:
            return cls(
                provider=str(data["provider"]), model=str(data["model"]), dimensions=int(data["dimensions"])
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embedding spec {data!r} needs provider, model and integer dimensions"
            ) from exc

    def describe(self) -> str:
        """Human wording used in mismatch messages, e.g. 'local/all-MiniLM-L6-v2 (384 dims)'."""
        return f"{self.provider}/{self.model} ({self.dimensions} dims)"


QUERY_CACHE_SIZE = 2048  # query vectors kept per provider: 3 MB at 384 dimensions


class _QueryCache:
    """A thread-safe LRU of query text -> vector."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vector = self._items.get(text)
            if vector is not None:
                self._items.move_to_end(text)
            return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        with self._lock:
            self._items[text] = vector
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class EmbeddingProvider:
    """Base class. Subclasses supply embed_batch(); batching, ordering, progress and normalisation live here
    so every backend returns the same shape of answer."""

    name: str = ""
    model: str = ""
    dimensions: int = 0
    batch_size: int = 64

    @property
    def spec(self) -> EmbeddingSpec:
        return EmbeddingSpec(provider=self.name, model=self.model, dimensions=self.dimensions)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embeds one batch (at most batch_size texts) and returns an (n, dimensions) array, any norm."""
        raise NotImplementedError("subclasses of EmbeddingProvider must provide embed_batch()")

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Returns float32 (n, dimensions) with L2-normalised rows, in the order of `texts`.

        progress(n_done_so_far) is called after each batch so long builds can report."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        batches = self.make_batches(texts)
        out: np.ndarray | None = None
        done = 0
        for indices, vectors in self.run_batches(texts, batches):
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(indices) or vectors.shape[1] != self.dimensions:
                raise EmbeddingError(
                    f"{self.name} embedding provider returned shape {vectors.shape} for {len(indices)} texts; "
                    f"expected ({len(indices)}, {self.dimensions})"
                )
            if out is None:
                out = np.empty((len(texts), self.dimensions), dtype=np.float32)
            out[indices] = vectors
            done += len(indices)
            if progress is not None:
                progress(done)
        assert out is not None
        return normalise_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        """One query as a (dimensions,) vector, from a bounded per-provider cache when it was asked before.

        Agents repeat queries (retries, paging, several agents on one topic), and with the local
        model an embedding costs about as much CPU as the rest of the search: a repeat costs nothing.
        """
        cache = self.__dict__.get("_query_cache")
        if cache is None:
            cache = self.__dict__.setdefault("_query_cache", _QueryCache(QUERY_CACHE_SIZE))
        vector = cache.get(text)
        if vector is None:
            vector = self.embed([text])[0]
            vector.flags.writeable = False
            cache.put(text, vector)
        return vector

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries in one call, so a batch search pays for one round trip, not one per query."""
        return self.embed(texts)

    def make_batches(self, texts: list[str]) -> list[list[int]]:
        """Indices of the texts each batch sends; a backend that benefits from grouping similar lengths
        overrides it."""
        return [list(range(i, min(i + self.batch_size, len(texts)))) for i in range(0, len(texts), self.batch_size)]

    def run_batches(
        self, texts: list[str], batches: list[list[int]]
    ) -> Iterator[tuple[list[int], np.ndarray]]:
        """Yields (indices, vectors) per batch in any order; a backend with network latency overrides it to
        run batches concurrently."""
        for indices in batches:
            yield indices, self.embed_batch([texts[i] for i in indices])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}/{self.model} ({self.dimensions} dims)>"


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalises rows in place so a dot product is a cosine; all-zero rows stay zero instead of NaN."""
    if vectors.shape[1] == 0:
        return vectors
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    return vectors
