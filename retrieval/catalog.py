"""The light columns of every chunk, held in memory once per opened build.

Full-text legs ask LanceDB for row IDs and scores only: projecting `chunk_id` makes Lance read
the data file after the index lookup, which costs more than the lookup itself (2 ms vs 0.3 ms
on a small table). Row IDs are mapped to positions in this catalog, which carries everything a
hit needs except its content (fetched for the returned page only). At 124k chunks the catalog
is about 40 MB of Arrow buffers plus the chunk ID strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

CATALOG_COLUMNS = (
    "chunk_id", "filepath", "title", "heading", "heading_level", "breadcrumb",
    "chunk_index", "total_chunks", "start_line", "end_line",
)


@dataclass(frozen=True)
class Catalog:
    table: pa.Table  # CATALOG_COLUMNS + taxonomy columns, one row per chunk, ordered by row ID
    rowids: np.ndarray  # uint64, ascending; position i holds the chunk with row ID rowids[i]
    chunk_ids: list[str]
    _positions_by_id: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> Catalog:
        """`table` must carry `_rowid`; rows are sorted by it so lookups can bisect."""
        rowids = table["_rowid"].to_numpy()
        order = np.argsort(rowids, kind="stable")
        if not np.array_equal(order, np.arange(len(order))):
            table = table.take(pa.array(order))
            rowids = rowids[order]
        # One contiguous chunk per column: `take` over a many-chunk table costs ~50x more.
        table = table.drop_columns(["_rowid"]).combine_chunks()
        return cls(table, np.ascontiguousarray(rowids, dtype=np.uint64), table["chunk_id"].to_pylist())

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def positions(self, rowids: np.ndarray) -> np.ndarray:
        """Catalog positions of the given row IDs (which must come from the same build)."""
        rowids = np.asarray(rowids, dtype=np.uint64)
        return np.searchsorted(self.rowids, rowids).astype(np.int64)

    def position_of(self, chunk_id: str) -> int | None:
        if not self._positions_by_id and self.chunk_ids:
            self._positions_by_id.update((cid, i) for i, cid in enumerate(self.chunk_ids))
        return self._positions_by_id.get(chunk_id)

    def rows(self, positions: list[int] | np.ndarray) -> list[dict]:
        return self.table.take(pa.array(np.asarray(positions, dtype=np.int64))).to_pylist()

    def column(self, name: str, positions: list[int] | np.ndarray) -> list:
        return self.table[name].take(pa.array(np.asarray(positions, dtype=np.int64))).to_pylist()
