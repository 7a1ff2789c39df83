"""Chunk text held in memory as zstd-compressed blocks of consecutive chunks.

Every page of hits needs its chunks' markdown. Read from LanceDB per page that cost 2.4 ms of a
10 ms search at 124.5k chunks; held as plain strings it would cost 93 MB. Compressed in blocks
of BLOCK_CHUNKS neighbouring chunks (one file's sections compress well together) it takes
28 MB, and one block decompresses in about 30 us.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

BLOCK_CHUNKS = 16
CODEC = pa.Codec("zstd", compression_level=3)


@dataclass(frozen=True)
class CompressedTexts:
    blocks: list[bytes]  # block b holds chunks b*BLOCK_CHUNKS .. (b+1)*BLOCK_CHUNKS-1, UTF-8, concatenated
    offsets: np.ndarray  # int64 (chunks + 1,): byte offset of chunk i in the concatenation of all blocks

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def get(self, positions: list[int]) -> list[str]:
        """The texts of the given positions, in that order."""
        decoded: dict[int, bytes] = {}
        out = []
        for position in positions:
            number = position // BLOCK_CHUNKS
            start = int(self.offsets[number * BLOCK_CHUNKS])
            if number not in decoded:
                end = int(self.offsets[min((number + 1) * BLOCK_CHUNKS, len(self))])
                decoded[number] = CODEC.decompress(self.blocks[number], decompressed_size=end - start, asbytes=True)
            block = decoded[number]
            out.append(block[int(self.offsets[position]) - start:int(self.offsets[position + 1]) - start].decode())
        return out


def compress_texts(columns: Iterable[pa.Array]) -> CompressedTexts:
    """Compresses string arrays that together hold every chunk's text in position order."""
    blocks: list[bytes] = []
    lengths: list[int] = []
    pending: list[bytes] = []
    for column in columns:
        for text in column.to_pylist():
            data = (text or "").encode()
            pending.append(data)
            lengths.append(len(data))
            if len(pending) == BLOCK_CHUNKS:
                blocks.append(CODEC.compress(b"".join(pending), asbytes=True))
                pending = []
    if pending:
        blocks.append(CODEC.compress(b"".join(pending), asbytes=True))
    return CompressedTexts(blocks, np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]))
