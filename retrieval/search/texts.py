"""Chunk text held in memory as zstd-compressed blocks of consecutive chunks.

Every page of hits needs its chunks' markdown. Read from LanceDB per page that cost 2.4 ms of a
10 ms search at 124.5k chunks; held as plain strings it would cost 93 MB. Compressed in blocks
of BLOCK_CHUNKS neighbouring chunks (one file's sections compress well together) it takes
28 MB, and one block decompresses in about 30 us. The blocks are written by the build
(retrieval/format/mapped.py) and mapped, or compressed when a build made before that is opened.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from retrieval.format.mapped import BLOCK_CHUNKS, CODEC, compress_blocks

__all__ = ["BLOCK_CHUNKS", "CompressedTexts", "compress_texts"]


@dataclass(frozen=True)
class CompressedTexts:
    blocks: pa.Array  # binary; block b holds chunks b*BLOCK_CHUNKS .. (b+1)*BLOCK_CHUNKS-1, UTF-8, concatenated
    offsets: np.ndarray  # int64 (chunks + 1,): byte offset of chunk i in the concatenation of all blocks
    # int64 (blocks + 1,): block b holds chunks starts[b] .. starts[b+1]-1 instead (a patched build's blocks)
    starts: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def get(self, positions: list[int]) -> list[str]:
        """The texts of the given positions, in that order."""
        decoded: dict[int, bytes] = {}
        out = []
        starts = self.starts
        numbers = (np.searchsorted(starts, positions, side="right") - 1).tolist() if starts is not None else None
        for n, position in enumerate(positions):
            if numbers is None:
                number = position // BLOCK_CHUNKS
                first, last = number * BLOCK_CHUNKS, min((number + 1) * BLOCK_CHUNKS, len(self))
            else:
                number = numbers[n]
                first, last = int(starts[number]), int(starts[number + 1])
            start = int(self.offsets[first])
            if number not in decoded:
                end = int(self.offsets[last])
                decoded[number] = CODEC.decompress(self.blocks[number].as_buffer(), decompressed_size=end - start, asbytes=True)
            block = decoded[number]
            out.append(block[int(self.offsets[position]) - start:int(self.offsets[position + 1]) - start].decode())
        return out


def compress_texts(columns: Iterable[pa.Array]) -> CompressedTexts:
    """Compresses string arrays that together hold every chunk's text in position order."""
    return CompressedTexts(*compress_blocks(columns))
