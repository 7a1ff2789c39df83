"""Feature-hashing embeddings: deterministic, dependency-free and fast, so tests and small deployments
get vectors where shared words mean similar directions, without a model."""

from __future__ import annotations

import re
from functools import lru_cache
from hashlib import blake2b

import numpy as np

from retrieval.errors import EmbeddingError

from .base import EmbeddingProvider

_WORD = re.compile(r"\w+")
# Texts with no word characters still need a non-zero, unit-norm vector.
_EMPTY_TOKEN = "\x00empty"


@lru_cache(maxsize=262_144)
def _bucket(token: str, dimensions: int) -> tuple[int, float]:
    """blake2b rather than hash(): Python salts str hashes per process, which would change vectors between
    the build and the server."""
    value = int.from_bytes(blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return (value >> 1) % dimensions, (1.0 if value & 1 else -1.0)


class HashEmbeddingProvider(EmbeddingProvider):
    """Signed bag-of-words counts folded into `dimensions` buckets."""

    name = "hash"
    # The model name carries the scheme's version: changing tokenisation or hashing must change the spec.
    model = "feature-hash-v1"
    batch_size = 1024

    def __init__(self, *, dimensions: int = 256):
        if int(dimensions) < 1:
            raise EmbeddingError(f"hash embeddings need dimensions >= 1, got {dimensions}")
        self.dimensions = int(dimensions)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = _WORD.findall(text.lower()) or [_EMPTY_TOKEN]
            columns, signs = zip(*(_bucket(token, self.dimensions) for token in tokens), strict=True)
            out[row] = np.bincount(columns, weights=signs, minlength=self.dimensions)
        # A text whose signed counts cancel out exactly would be a zero row; fall back to the empty token
        # so every row can be normalised.
        for row in np.flatnonzero(~out.any(axis=1)):
            column, sign = _bucket(_EMPTY_TOKEN, self.dimensions)
            out[row, column] = sign
        return out
