"""A persistent cache of embeddings keyed by (spec, text), so a rebuild embeds only the chunks that changed.

Storage is a directory of immutable .npz shards, one per put, each written to a temporary name and renamed
into place. Readers never see a half-written shard, a process that dies mid-write loses only that put, and
any number of processes can read and write at once. Shards are merged once there are many of them.
On an object store (`s3://...`) a shard is one PUT, which is atomic just the same.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Sequence
from fnmatch import fnmatch

import numpy as np

from retrieval import storage
from retrieval.embeddings.base import EmbeddingProvider, EmbeddingSpec
from retrieval.errors import EmbeddingError, EmbeddingMismatch
from retrieval.storage import Location

SHARD_GLOB = "shard-*.npz"
# Merge shards past this count so a cache filled by many incremental builds still loads in a few reads.
COMPACT_AT = 32
# Texts embedded per put: a build that dies part-way keeps what it already paid for.
EMBED_GROUP = 2048
# Temporary files older than this belong to writers that died; younger ones may still be in progress.
STALE_TEMP_SECONDS = 3600


def cache_key(text: str, spec: EmbeddingSpec) -> str:
    """Hex sha256 over the spec and the text: the same text under another model is another entry."""
    digest = hashlib.sha256()
    digest.update(f"{spec.provider}\x00{spec.model}\x00{spec.dimensions}\x00".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _spec_dirname(spec: EmbeddingSpec) -> str:
    """One subdirectory per spec, so loading a cache never reads vectors of another model."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{spec.provider}-{spec.model}-{spec.dimensions}")
    return f"{readable}-{cache_key('', spec)[:8]}"


class EmbeddingCache:
    """Holds the loaded shards in memory; state (what is loaded, from which files) is what earns a class."""

    def __init__(self, directory: Location, spec: EmbeddingSpec):
        self.spec = spec
        self.directory = storage.join(storage.as_location(directory), _spec_dirname(spec))
        self.remote = storage.is_remote(self.directory)
        self._vectors: dict[str, np.ndarray] = {}
        self._seen: set[str] = set()  # shards read into _vectors
        self._damaged: set[str] = set()  # shards that could not be read; never merged away
        self._lock = threading.RLock()

    def key(self, text: str) -> str:
        return cache_key(text, self.spec)

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `keys`; absent keys are simply left out."""
        with self._lock:
            self._refresh()
            return {key: self._vectors[key] for key in keys if key in self._vectors}

    def put_many(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        keys = list(keys)
        # A copy: the cache must not change if the caller later writes into its array.
        vectors = np.array(vectors, dtype=np.float32)
        vectors.setflags(write=False)
        if vectors.shape != (len(keys), self.spec.dimensions):
            raise EmbeddingError(
                f"cannot cache {vectors.shape} vectors for {len(keys)} keys under {self.spec.describe()}"
            )
        if not keys:
            return
        with self._lock:
            name = self._write_shard(keys, vectors)
            self._seen.add(name)
            self._vectors.update(zip(keys, vectors, strict=True))
            self._maybe_compact()

    def __len__(self) -> int:
        with self._lock:
            self._refresh()
            return len(self._vectors)

    def _shard_names(self) -> set[str]:
        if self.remote:
            return {name for name in storage.list_children(self.directory) if fnmatch(name, SHARD_GLOB)}
        if not self.directory.is_dir():
            return set()
        return {path.name for path in self.directory.glob(SHARD_GLOB)}

    def _refresh(self) -> None:
        """Loads shards written since the last look, including by other processes."""
        for _ in range(3):
            vanished = False
            for name in sorted(self._shard_names() - self._seen - self._damaged):
                try:
                    keys, vectors = self._read_shard(storage.join(self.directory, name))
                except FileNotFoundError:
                    # Merged away by another process after we listed it; its merge result is a newer shard.
                    vanished = True
                    continue
                except (OSError, ValueError, KeyError, zipfile.BadZipFile):
                    # A cache may skip a damaged shard: it only costs re-embedding those texts.
                    self._damaged.add(name)
                    continue
                self._seen.add(name)
                if vectors.shape == (len(keys), self.spec.dimensions):
                    self._vectors.update(zip(keys, vectors, strict=True))
            if not vanished:
                return

    @staticmethod
    def _read_shard(path: Location) -> tuple[list[str], np.ndarray]:
        with np.load(io.BytesIO(storage.read_bytes(path)), allow_pickle=False) as shard:
            keys = [key.decode("utf-8") for key in shard["keys"].tolist()]
            vectors = np.asarray(shard["vectors"], dtype=np.float32)
        # Callers get views into this array; a caller writing into one must not change the cache.
        vectors.setflags(write=False)
        return keys, vectors

    def _write_shard(self, keys: list[str], vectors: np.ndarray) -> str:
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        if self.remote:
            buffer = io.BytesIO()
            np.savez(buffer, keys=np.array([key.encode("utf-8") for key in keys]), vectors=vectors)
            storage.write_bytes(storage.join(self.directory, name), buffer.getvalue())
            return name
        self.directory.mkdir(parents=True, exist_ok=True)
        temp = self.directory / f".tmp-{uuid.uuid4().hex}.npz"
        try:
            with temp.open("wb") as handle:
                np.savez(handle, keys=np.array([key.encode("utf-8") for key in keys]), vectors=vectors)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.directory / name)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return name

    def _maybe_compact(self) -> None:
        """Writes everything loaded into one shard before deleting the shards it came from, so a crash at
        any point leaves every vector in at least one shard."""
        self._refresh()
        merged = sorted(self._shard_names() & self._seen)
        if len(merged) <= COMPACT_AT:
            return
        keys = list(self._vectors)
        name = self._write_shard(keys, np.stack([self._vectors[key] for key in keys]))
        self._seen.add(name)
        for old in merged:
            storage.delete_file(storage.join(self.directory, old))
        if self.remote:
            return
        cutoff = time.time() - STALE_TEMP_SECONDS
        for temp in self.directory.glob(".tmp-*"):
            try:
                if temp.stat().st_mtime < cutoff:
                    temp.unlink()
            except FileNotFoundError:
                pass


def embed_with_cache(
    provider: EmbeddingProvider,
    texts: Sequence[str],
    cache: EmbeddingCache,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for `texts` in order, embedding only texts the cache lacks (each distinct text once).

    Returns (vectors, number of texts actually embedded). progress(n) counts cached texts as done up front."""
    texts = list(texts)
    if provider.dimensions == 0:
        return provider.embed(texts), 0
    if provider.spec != cache.spec:
        raise EmbeddingMismatch(
            f"embedding cache holds {cache.spec.describe()} vectors; the provider is {provider.spec.describe()}"
        )
    keys = [cache.key(text) for text in texts]
    out = np.empty((len(texts), provider.dimensions), dtype=np.float32)
    found = cache.get_many(keys)
    positions: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        if key in found:
            out[index] = found[key]
        else:
            positions.setdefault(key, []).append(index)

    done = len(texts) - sum(len(indices) for indices in positions.values())
    if progress is not None and done:
        progress(done)
    missing = list(positions)
    for start in range(0, len(missing), EMBED_GROUP):
        group = missing[start : start + EMBED_GROUP]
        base = done

        def report(n: int, base: int = base) -> None:
            if progress is not None:
                progress(base + n)

        vectors = provider.embed([texts[positions[key][0]] for key in group], progress=report)
        cache.put_many(group, vectors)
        for key, vector in zip(group, vectors, strict=True):
            out[positions[key]] = vector
        done += len(group)
    if progress is not None and missing and done != len(texts):
        progress(len(texts))
    return out, len(missing)
