"""The provider for full-text-only indexes: every text maps to an empty vector."""

from __future__ import annotations

import numpy as np

from .base import EmbeddingProvider


class NoEmbeddingProvider(EmbeddingProvider):
    """Lets FTS-only indexes go through the same build and search paths as vector ones."""

    name = "none"
    model = "none"
    dimensions = 0
    batch_size = 100_000

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 0), dtype=np.float32)
