"""What a serving process holds of a build, written by the build as files that processes map.

A search needs every chunk's light columns (the catalog), its vector and its text in memory.
Read from the tables they are decoded into each process's private heap: three gunicorn
workers held three copies (at 124.5k chunks about 100 MB each). Written once by the build into
`mapped/` as an Arrow IPC file and NumPy arrays, they are mapped read-only (`pa.memory_map`,
`np.load(mmap_mode="r")`): the page cache holds each page once for every process on the host,
and opening a build reads nothing until a search touches it.

Both sides use this module: the build writes the files (`write_mapped`), and a serving process maps
them (`open_mapped`), or, for a build made before they existed or served straight from an object
store, reads the same arrays from the tables into memory (`read_held`).

Files, all of them under `mapped/`:
- `catalog.arrow`: CATALOG_COLUMNS, the prior and taxonomy columns the build has, one row per chunk
  in row-ID order, one record batch, strings other than the chunk ID dictionary-encoded;
- `rowids.npy` (uint64, ascending), `id_order.npy` (int64: each row's rank by chunk ID);
- `vectors.npy` (int8, rows x dimensions) and `scales.npy` (float32): see `quantize`;
- `texts.arrow`: the chunk texts, either one string per chunk (column `content`) or, above
  CONTENT_IN_MEMORY_CHARS, zstd blocks of BLOCK_CHUNKS chunks (column `blocks`) with
  `text_offsets.npy` (int64, chunks + 1: byte offset of each chunk in the blocks' concatenation)
  or, when the blocks are not all BLOCK_CHUNKS chunks long (a patched build keeps the previous
  blocks whose chunks all stay, retrieval/ingest/carryover.py), the blocks in `text_blocks.arrow`
  with `text_blocks.npy` (int64, blocks + 1: each block's first chunk, then the number of chunks).
  A reader made before them finds no `texts.arrow` and reads the tables instead of misreading them;
- `document_rowids.npy` (uint64, ascending) and `document_pages.npy` (int64): the documents table's
  row IDs and each one's page code (its file path's position among the catalog's distinct paths);
- `link_starts.npy`, `link_targets.npy` (int64): the links between pages, resolved
  (retrieval/format/linkgraph.py); absent when the tables store no links;
- `lexicon_terms.npy`, `lexicon_pages.npy`, `lexicon_chunks.npy`: how many pages and chunks hold each
  term (retrieval/format/lexicon.py),
  which list_corpora and the routing of a search across corpora read without opening the build.

A search's page-text and link priors need the last two. Made on a server's first search they cost
more than the rest of it (at 11.1k pages, 0.16 s of CPU: reading every page's links and resolving
them in Python), so the build makes them once; a build made before they existed has them made on
first use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from retrieval import storage
from retrieval.errors import IndexUnavailable
from retrieval.memory import release_unused_memory
from retrieval.storage import Location

from .layout import open_datasets, taxonomy_column
from .lexicon import CHUNKS_FILE, lexicon_files, lexicon_from_tables
from .linkgraph import PageLinks, resolve_links
from .npyfiles import map_array, npy_bytes

log = logging.getLogger("retrieval.ingest")

MAPPED_DIR = "mapped"
CATALOG_FILE = "catalog.arrow"
ROWIDS_FILE = "rowids.npy"
ID_ORDER_FILE = "id_order.npy"
VECTORS_FILE = "vectors.npy"
SCALES_FILE = "scales.npy"
TEXTS_FILE = "texts.arrow"
TEXT_OFFSETS_FILE = "text_offsets.npy"
TEXT_BLOCKS_FILE = "text_blocks.npy"
VARIABLE_TEXTS_FILE = "text_blocks.arrow"  # texts.arrow's blocks when TEXT_BLOCKS_FILE gives their starts
DOCUMENT_ROWIDS_FILE = "document_rowids.npy"
DOCUMENT_PAGES_FILE = "document_pages.npy"
LINK_STARTS_FILE = "link_starts.npy"
LINK_TARGETS_FILE = "link_targets.npy"

CATALOG_COLUMNS = (
    "chunk_id", "filepath", "title", "heading", "heading_level", "breadcrumb",
    "chunk_index", "total_chunks", "start_line", "end_line",
)
# Ranking priors (retrieval/search/priors.py); builds made before a prior existed lack its column.
PRIOR_COLUMNS = ("link_share",)

# Chunk text up to this many characters is held as plain strings (the Kubernetes and Python
# docs: 7-10 MB); larger corpora hold it compressed, 3.4x smaller at 124.5k chunks, at about
# 30 us per hit to decompress.
CONTENT_IN_MEMORY_CHARS = 64 * 1024 * 1024
BLOCK_CHUNKS = 16
CODEC = pa.Codec("zstd", compression_level=3)
LEVELS = 127.0
READ_CHUNKS = 8192


@dataclass(frozen=True)
class Held:
    """Everything a search holds of a build, by catalog position (row-ID order)."""

    catalog: pa.Table
    rowids: np.ndarray
    id_order: np.ndarray | None  # None: computed from the chunk IDs on first use
    codes: np.ndarray
    scales: np.ndarray
    texts: pa.Array  # strings, one per chunk; or compressed blocks when text_offsets is given
    text_offsets: np.ndarray | None
    mapped: bool = False
    pages: Pages | None = None  # None: made on first use (a build made before the files existed)
    links: PageLinks | None = None  # None: the tables store no links, or (without `pages`) as `pages`
    text_starts: np.ndarray | None = None  # each text block's first chunk, then the count; None: BLOCK_CHUNKS each


@dataclass(frozen=True)
class Pages:
    """The documents table's row IDs, ascending, and each one's page code (-1: a page without chunks)."""

    rowids: np.ndarray
    codes: np.ndarray


class _OutOfOrder(Exception):
    """A table scan returned chunks out of catalog (row ID) order."""


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and per-row scales with codes * scale ~= rows; zero rows get scale 0."""
    rows = np.asarray(rows, dtype=np.float32)
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows), np.float32)
    scales = (peak / LEVELS).astype(np.float32)
    safe = np.where(scales > 0, scales, 1.0)
    codes = np.clip(np.rint(rows / safe[:, None]), -LEVELS, LEVELS).astype(np.int8)
    return codes, scales


def dictionary_encoded(table: pa.Table) -> pa.Table:
    """String columns other than the chunk ID as dictionaries: a file's path, title and taxonomy
    values repeat on each of its chunks (at 124k chunks: 23 MB of strings become 5 MB)."""
    for i, name in enumerate(table.column_names):
        if name != "chunk_id" and pa.types.is_string(table.schema.field(i).type):
            table = table.set_column(i, name, table[name].dictionary_encode().combine_chunks())
    return table


def sorted_catalog(table: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """`table` (with `_rowid`) in row-ID order, one chunk per column, dictionary-encoded; and its row IDs."""
    rowids = table["_rowid"].to_numpy()
    order = np.argsort(rowids, kind="stable")
    if not np.array_equal(order, np.arange(len(order))):
        table = table.take(pa.array(order))
        rowids = rowids[order]
    # One contiguous chunk per column: `take` over a many-chunk table costs ~50x more.
    table = table.drop_columns(["_rowid"]).combine_chunks()
    return dictionary_encoded(table), np.ascontiguousarray(rowids, dtype=np.uint64)


def id_ranks(chunk_ids: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Each position's rank among the chunk IDs in sorted order."""
    order = pc.sort_indices(chunk_ids).to_numpy()
    ranks = np.empty(len(order), np.int64)
    ranks[order] = np.arange(len(order))
    return ranks


def compress_blocks(columns: Iterable[pa.Array]) -> tuple[pa.Array, np.ndarray]:
    """String arrays that together hold every chunk's text in position order, as zstd blocks of
    BLOCK_CHUNKS consecutive chunks (one file's sections compress well together) and byte offsets."""
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
    return pa.array(blocks, pa.large_binary()), np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])


def read_held(chunks, documents, columns: list[str], dims: int, content_in_memory_chars: int | None = None) -> Held:
    """Reads what a search holds from a build's tables (`chunks`, `documents`, Lance datasets), into memory.

    The catalog, then the vectors, then the chunk text, each load's temporary buffers given back
    before the next: decoding goes through 80-200 MB of Lance buffers, and taking the largest of
    them while the process is smallest kept a 124.5k-chunk process's peak at about 450 MB.
    `columns` are the taxonomy columns the build has.
    """
    present = set(chunks.schema.names)
    wanted = [*CATALOG_COLUMNS, *(c for c in PRIOR_COLUMNS if c in present), *columns]
    catalog, rowids = sorted_catalog(chunks.to_table(columns=wanted, with_row_id=True))
    release_unused_memory()
    codes, scales = _read_vectors(chunks, rowids, dims) if dims else (
        np.zeros((len(rowids), 0), np.int8), np.zeros(len(rowids), np.float32))
    release_unused_memory()
    limit = CONTENT_IN_MEMORY_CHARS if content_in_memory_chars is None else content_in_memory_chars
    texts, offsets = _read_texts(chunks, documents, rowids, limit)
    release_unused_memory()
    pages, links = page_tables(documents, one_chunk(catalog["filepath"]).dictionary)
    return Held(catalog, rowids, None, codes, scales, texts, offsets, pages=pages, links=links)


def page_tables(documents, paths: pa.Array) -> tuple[Pages, PageLinks | None]:
    """The documents table's pages by page code, and the links between them (None when the table stores
    none). `paths` are the catalog's distinct file paths: a page's code is its position there."""
    columns = ["filepath", *(["links"] if "links" in documents.schema.names else [])]
    return pages_from_rows(documents.to_table(columns=columns, with_row_id=True), paths)


def pages_from_rows(found: pa.Table, paths: pa.Array) -> tuple[Pages, PageLinks | None]:
    """`page_tables` from the documents table's rows as read (`_rowid`, `filepath`, and `links` when stored)."""
    found = found.take(pc.sort_indices(found["_rowid"]))
    codes = pc.index_in(found["filepath"], value_set=paths).fill_null(-1).to_numpy(zero_copy_only=False)
    pages = Pages(np.ascontiguousarray(found["_rowid"].to_numpy(), dtype=np.uint64), codes.astype(np.int64))
    if "links" not in found.column_names:
        return pages, None
    written: list[list[str] | None] = [None] * len(paths)
    for code, targets in zip(pages.codes.tolist(), found["links"].to_pylist(), strict=True):
        if code >= 0:
            written[code] = targets
    return pages, resolve_links(paths.to_pylist(), written)


def _read_vectors(chunks, rowids: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Streams the float32 vector column into preallocated int8 codes in catalog order, so the
    column is never held whole."""
    codes, scales = np.zeros((len(rowids), dims), np.int8), np.zeros(len(rowids), np.float32)
    for batch in chunks.to_batches(columns=["vector"], with_row_id=True):
        rows = np.searchsorted(rowids, batch.column("_rowid").to_numpy().astype(np.uint64))
        flat = batch.column("vector").flatten().to_numpy(zero_copy_only=False)
        codes[rows], scales[rows] = quantize(np.asarray(flat, dtype=np.float32).reshape(-1, dims))
    return codes, scales


def _read_texts(chunks, documents, rowids: np.ndarray, limit: int) -> tuple[pa.Array, np.ndarray | None]:
    """Every chunk's text by catalog position: plain strings when the corpus is small, compressed
    blocks above `limit` characters.

    Read by a table scan, which at 124.5k chunks leaves 25 MB less behind than reading by row
    ID; the scan is in catalog order unless the table's fragments were reordered (compaction),
    and then the text is read by row ID instead.
    """
    sizes = documents.to_table(columns=["size"])["size"]
    compressed = (pc.sum(sizes).as_py() or 0) > limit
    try:
        return _held_texts(_scanned_texts(chunks, rowids), compressed)
    except _OutOfOrder:
        return _held_texts(_taken_texts(chunks, rowids), compressed)


def _held_texts(columns: Iterator[pa.Array], compressed: bool) -> tuple[pa.Array, np.ndarray | None]:
    if compressed:
        return compress_blocks(columns)
    pieces = list(columns)
    return (pa.concat_arrays(pieces) if pieces else pa.array([], pa.string())), None


def _scanned_texts(chunks, rowids: np.ndarray) -> Iterator[pa.Array]:
    expected = 0
    for batch in chunks.to_batches(columns=["content"], with_row_id=True):
        found = batch.column("_rowid").to_numpy().astype(np.uint64)
        if not np.array_equal(found, rowids[expected:expected + len(found)]):
            raise _OutOfOrder
        expected += len(found)
        yield batch.column("content")
    if expected != len(rowids):
        raise _OutOfOrder


def _taken_texts(chunks, rowids: np.ndarray) -> Iterator[pa.Array]:
    """Chunk text in catalog order, READ_CHUNKS rows at a time, so the column is never held whole."""
    for start in range(0, len(rowids), READ_CHUNKS):
        wanted = rowids[start:start + READ_CHUNKS].tolist()
        found = chunks._take_rows(wanted, columns=["content", "_rowid"])  # Lance's take by row ID
        if found.num_rows != len(wanted):
            raise IndexUnavailable(f"{len(wanted) - found.num_rows} chunks have no text row")
        order = np.argsort(found["_rowid"].to_numpy())  # catalog positions ascend with row IDs
        yield found["content"].combine_chunks().take(pa.array(order))


def write_mapped(directory: Location, held: Held) -> None:
    """Writes `held` as the files under `directory`/mapped/ (a local path or an object-store URI)."""
    target = storage.join(directory, MAPPED_DIR)
    if not storage.is_remote(target):
        target.mkdir(parents=True, exist_ok=True)
    _write(target, CATALOG_FILE, _arrow_file(held.catalog))
    _write(target, ROWIDS_FILE, npy_bytes(held.rowids))
    _write(target, ID_ORDER_FILE, npy_bytes(held.id_order if held.id_order is not None
                                         else id_ranks(held.catalog["chunk_id"])))
    _write(target, VECTORS_FILE, npy_bytes(held.codes))
    _write(target, SCALES_FILE, npy_bytes(held.scales))
    name = "content" if held.text_offsets is None else "blocks"
    variable = held.text_offsets is not None and held.text_starts is not None
    _write(target, VARIABLE_TEXTS_FILE if variable else TEXTS_FILE, _arrow_file(pa.table({name: held.texts})))
    if held.text_offsets is not None:
        _write(target, TEXT_OFFSETS_FILE, npy_bytes(held.text_offsets))
        if held.text_starts is not None:
            _write(target, TEXT_BLOCKS_FILE, npy_bytes(held.text_starts))
    if held.pages is not None:
        _write(target, DOCUMENT_ROWIDS_FILE, npy_bytes(held.pages.rowids))
        _write(target, DOCUMENT_PAGES_FILE, npy_bytes(held.pages.codes))
    if held.links is not None:
        _write(target, LINK_STARTS_FILE, npy_bytes(held.links.starts))
        _write(target, LINK_TARGETS_FILE, npy_bytes(held.links.targets))


def write_mapped_from_tables(directory: Location, taxonomy: list[str], dims: int,
                             progress: Callable[[str, int, int], None]) -> None:
    """The build's last stage: the mapped files, read back from the finished tables, whose row IDs
    (after a patch or a copy too) are the ones a server will see."""
    progress("mapped", 0, 1)
    chunks, documents = open_datasets(directory)
    write_mapped(directory, read_held(chunks, documents, [taxonomy_column(key) for key in taxonomy], dims))
    for name, data in lexicon_files(lexicon_from_tables(chunks, documents)).items():
        _write(storage.join(directory, MAPPED_DIR), name, data)
    progress("mapped", 1, 1)


def _write(directory: Location, name: str, data: bytes) -> None:
    if storage.is_remote(directory):
        storage.write_bytes(storage.join(directory, name), data)
    else:
        (directory / name).write_bytes(data)


def _arrow_file(table: pa.Table) -> bytes:
    """One uncompressed record batch, so every column maps as one contiguous array."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks(), max_chunksize=max(table.num_rows, 1))
    return sink.getvalue().to_pybytes()


def has_mapped(directory: Location) -> bool:
    """Whether the build wrote every mapped file this version writes (builds made before some existed did
    not: a build that reuses their tables writes its own)."""
    return all(storage.exists(storage.join(directory, MAPPED_DIR, name))
               for name in (DOCUMENT_PAGES_FILE, CHUNKS_FILE)) and _texts_file(directory) is not None


def _texts_file(directory: Location) -> str | None:
    """The name of the build's mapped texts file, None without one."""
    for name in (TEXTS_FILE, VARIABLE_TEXTS_FILE):
        if storage.exists(storage.join(directory, MAPPED_DIR, name)):
            return name
    return None


def open_mapped(directory: Location) -> Held | None:
    """The build's mapped files, mapped read-only; None when it has none (made before they existed,
    or not on a local disk: a host maps the local copy of an object-store build)."""
    if storage.is_remote(directory):
        return None
    folder = directory / MAPPED_DIR
    name = _texts_file(directory)
    if name is None:
        return None
    catalog = _mapped_table(folder / CATALOG_FILE)
    texts = _mapped_table(folder / name)
    offsets, starts = folder / TEXT_OFFSETS_FILE, folder / TEXT_BLOCKS_FILE
    pages = links = None
    if (folder / DOCUMENT_PAGES_FILE).is_file():
        pages = Pages(map_array(folder / DOCUMENT_ROWIDS_FILE), map_array(folder / DOCUMENT_PAGES_FILE))
    if (folder / LINK_TARGETS_FILE).is_file():
        links = PageLinks(map_array(folder / LINK_STARTS_FILE), map_array(folder / LINK_TARGETS_FILE))
    return Held(
        catalog=catalog,
        rowids=map_array(folder / ROWIDS_FILE),
        id_order=map_array(folder / ID_ORDER_FILE),
        codes=map_array(folder / VECTORS_FILE),
        scales=map_array(folder / SCALES_FILE),
        texts=one_chunk(texts.column(0)),
        text_offsets=map_array(offsets) if "blocks" in texts.column_names else None,
        mapped=True,
        pages=pages,
        links=links,
        text_starts=map_array(starts) if name == VARIABLE_TEXTS_FILE else None,
    )


def _mapped_table(path) -> pa.Table:
    """The table's buffers point into the mapping, which lives as long as they do."""
    with pa.memory_map(str(path), "r") as source:
        table = pa.ipc.open_file(source).read_all()
    if any(column.num_chunks != 1 for column in table.columns):  # an empty table has no batch
        table = table.combine_chunks()
    return table


def one_chunk(column: pa.ChunkedArray) -> pa.Array:
    """The column as one array, without a copy when it is one already (`combine_chunks` copies even then)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
