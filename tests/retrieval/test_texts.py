"""Compressed chunk text: every text comes back exactly, across block boundaries and in any order."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from retrieval.format.mapped import CODEC
from retrieval.search.texts import BLOCK_CHUNKS, CompressedTexts, compress_texts


def test_texts_come_back_exactly_in_the_order_asked():
    texts = [f"## Section {i}\n\nbody {'é' * (i % 7)} `code_{i}`" for i in range(3 * BLOCK_CHUNKS + 5)]
    texts[4] = ""
    # Batches whose sizes do not line up with the blocks, as a table scan delivers them.
    stored = compress_texts([pa.array(texts[:7]), pa.array(texts[7:40]), pa.array(texts[40:])])
    assert len(stored) == len(texts) and len(stored.blocks) == 4
    order = [len(texts) - 1, 0, BLOCK_CHUNKS, BLOCK_CHUNKS - 1, 4, 17, 17]
    assert stored.get(order) == [texts[i] for i in order]
    assert stored.get(list(range(len(texts)))) == texts


def test_repetitive_text_takes_less_memory_than_plain():
    texts = [f"## Parameters\n\n-Name <String> Specifies the name of item {i}. " * 10 for i in range(200)]
    stored = compress_texts([pa.array(texts)])
    assert sum(len(block.as_py()) for block in stored.blocks) * 3 < sum(len(t) for t in texts)


def test_no_texts():
    stored = compress_texts([])
    assert len(stored) == 0 and stored.get([]) == []


def test_blocks_of_varying_length_are_found_by_their_starts():
    """A patched build's blocks (retrieval/ingest/carryover.py) hold any number of chunks."""
    texts = [f"chunk {i} " + "x" * i for i in range(11)]
    starts = np.array([0, 1, 5, 6, 11], np.int64)
    blocks = [CODEC.compress("".join(texts[a:b]).encode(), asbytes=True) for a, b in zip(starts[:-1], starts[1:], strict=True)]
    offsets = np.concatenate([[0], np.cumsum([len(t.encode()) for t in texts])])
    stored = CompressedTexts(pa.array(blocks, pa.large_binary()), offsets, starts)
    order = [10, 0, 5, 4, 1, 6, 6]
    assert stored.get(order) == [texts[i] for i in order]
    assert stored.get(list(range(len(texts)))) == texts
