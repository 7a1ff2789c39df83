"""Chunk vectors in memory as int8 codes with one float scale per row.

A serving process holds every chunk's vector so the vector leg can search exactly under any
filter. As float32 that is 190 MB at 124k chunks of 384 dimensions; as int8 it is 48 MB, and
NumKong's int8 dot-product kernels scan it faster than a float32 matrix-vector product, which
is memory-bound. Each row is scaled so its largest component maps to 127 (symmetric scalar
quantisation); the query is quantised the same way. On the 124k-chunk PowerShell corpus with
the local model, the top 10 by int8 score are the exact top 10 for every one of 300 queries
(recall@50 0.996), and scores differ from float32 cosines by at most 0.003.
"""

from __future__ import annotations

from dataclasses import dataclass

import numkong
import numpy as np

from retrieval.format.mapped import quantize

__all__ = ["Vectors", "quantize"]

@dataclass(frozen=True)
class Vectors:
    codes: np.ndarray  # int8 (rows, dims); row i belongs to catalog position i; may be a read-only map
    scales: np.ndarray  # float32 (rows,)

    @classmethod
    def empty(cls, rows: int, dims: int) -> Vectors:
        return cls(np.zeros((rows, dims), np.int8), np.zeros(rows, np.float32))

    def put(self, positions: np.ndarray, rows: np.ndarray) -> None:
        self.codes[positions], self.scales[positions] = quantize(rows)

    @property
    def dims(self) -> int:
        return self.codes.shape[1]

    def rows(self, positions: np.ndarray | list[int]) -> np.ndarray:
        """The float32 vectors of the given positions, decoded."""
        positions = np.asarray(positions, dtype=np.int64)
        return self.codes[positions].astype(np.float32) * self.scales[positions, None]

    def dots(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Dot products of `query` with every row (or the rows at the given positions), as float32.

        For unit vectors these are the cosines. Single-threaded like the rest of a search: a
        server runs one search per request thread.
        """
        codes, scales = (self.codes, self.scales) if rows is None else (self.codes[rows], self.scales[rows])
        if not len(codes):
            return np.empty(0, np.float32)
        query_codes, query_scale = quantize(np.asarray(query, dtype=np.float32).reshape(1, -1))
        raw = np.asarray(numkong.cdist(query_codes, codes, metric="dot", out_dtype="float32")).ravel()
        return raw * scales * query_scale[0]
