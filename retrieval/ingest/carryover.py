"""A patched build's mapped files and lexicon, carried over from the previous build's rather than read
back from every row of the tables.

Rebuilding them from the tables costs in proportion to the corpus (at 722 pages, 1.5 s for the mapped
arrays and 1.1 s for the lexicon of a one-page change). A patch (retrieval/ingest/tables.py) deletes
the rows of the dropped files, which keeps every other row's ID (Lance marks deleted rows; a row ID is
its fragment and its offset there), and appends the added files' rows as new fragments, whose IDs
follow every kept one. So in row-ID order the patched build holds the previous build's rows minus the
dropped files', then the new fragments' rows: the arrays are the previous ones filtered, with the new
rows read from the new fragments alone and appended. The lexicon's counts add up file by file
(lexicon.py, `TermCounts`). What depends on the whole corpus is made again from the small inputs it
needs: the chunk-ID ranks, the catalog's dictionaries, the pages and their links (one row per page).

The result is the one a full read of the tables gives, array for array and byte for byte, but for
compressed texts, which are equal value for value: the previous blocks whose chunks all stay are kept
as they were rather than cut again where a full build cuts them (tests/retrieval/test_carryover.py).
Where it cannot be (a previous build without the mapped files this version writes, texts that cross
the compression threshold, row IDs not as the patch expects) `carry_over` says so and the build reads
the tables whole instead.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from retrieval import storage
from retrieval.format import mapped
from retrieval.format.layout import CHUNKS_TABLE, DOCUMENTS_TABLE, in_files, table_dataset, taxonomy_column
from retrieval.format.lexicon import (
    LEXICON_COLUMNS,
    READ_CHUNKS,
    lexicon_files,
    patch_lexicon,
    read_lexicon,
    term_counts,
)
from retrieval.format.linkgraph import PageLinks, resolve_links
from retrieval.format.mapped import (
    BLOCK_CHUNKS,
    CATALOG_COLUMNS,
    CODEC,
    MAPPED_DIR,
    PRIOR_COLUMNS,
    Held,
    Pages,
    compress_blocks,
    dictionary_encoded,
    has_mapped,
    open_mapped,
    pages_from_rows,
    quantize,
    write_mapped,
)
from retrieval.storage import Location

from .progress import Progress
from .tables import FILES_PER_QUERY

log = logging.getLogger("retrieval.ingest")

def carry_over(directory: Location, previous: Location, dropped: list[str], taxonomy: list[str], dims: int,
               fragments: set[int], progress: Progress) -> bool:
    """Writes the mapped files and lexicon of the patched build at `directory` from those of `previous`:
    the rows of the `dropped` files out, those of the fragments not in `fragments` (the previous chunks
    table's) in. False, having written nothing, when the previous build's files cannot be carried over."""
    if storage.is_remote(previous) or not has_mapped(previous):
        return False
    held = open_mapped(previous)
    lexicon = read_lexicon(storage.join(previous, MAPPED_DIR))
    if held is None or held.pages is None or lexicon is None or lexicon.chunks is None:
        return False
    progress("mapped", 0, 1)
    chunks, documents = table_dataset(directory, CHUNKS_TABLE), table_dataset(directory, DOCUMENTS_TABLE)
    columns = [*CATALOG_COLUMNS, *(c for c in PRIOR_COLUMNS if c in chunks.schema.names),
               *(taxonomy_column(key) for key in taxonomy)]
    if not set(columns) - {taxonomy_column(key) for key in taxonomy} <= set(held.catalog.column_names):
        return False
    new = _new_rows(chunks, fragments, columns, dims)
    kept = pc.invert(pc.is_in(_plain(held.catalog["filepath"]), value_set=pa.array(dropped, pa.string())))
    mask = kept.to_numpy(zero_copy_only=False)
    rowids = np.concatenate([held.rowids[mask], new["_rowid"].to_numpy().astype(np.uint64)])
    actual = np.sort(chunks.to_table(columns=[], with_row_id=True)["_rowid"].to_numpy().astype(np.uint64))
    if not np.array_equal(rowids, actual):
        log.info("patched rows are not the previous rows plus the new fragments; reading the tables whole")
        return False
    sizes = pc.sum(documents.to_table(columns=["size"])["size"]).as_py() or 0
    compressed = sizes > mapped.CONTENT_IN_MEMORY_CHARS
    if compressed != (held.text_offsets is not None):
        return False
    catalog = dictionary_encoded(pa.Table.from_arrays(
        [_column(held.catalog, name, kept, new) for name in columns], names=columns))
    if dims:
        flat = new["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False)
        codes, scales = quantize(np.asarray(flat, np.float32).reshape(-1, dims))
        codes, scales = np.concatenate([held.codes[mask], codes]), np.concatenate([held.scales[mask], scales])
    else:
        codes, scales = np.zeros((len(rowids), 0), np.int8), np.zeros(len(rowids), np.float32)
    content = new["content"].combine_chunks()
    starts = None
    if compressed:
        texts, offsets, starts = _patched_blocks(held, mask, content)
    else:
        texts, offsets = pa.concat_arrays([held.texts.filter(kept), content.cast(held.texts.type)]), None
    paths = catalog["filepath"].chunk(0).dictionary
    pages, links = _pages(held, _document_rows(documents), paths, dropped)
    write_mapped(directory, Held(catalog, rowids, None, codes, scales, texts, offsets, pages=pages, links=links,
                                 text_starts=starts))
    removed = term_counts(_batches(table_dataset(previous, CHUNKS_TABLE), dropped))
    added = term_counts(new.select(LEXICON_COLUMNS).to_batches(READ_CHUNKS))
    patched = patch_lexicon(lexicon, removed, added, documents.count_rows(), len(rowids))
    for name, data in lexicon_files(patched).items():
        storage.write_bytes(storage.join(directory, MAPPED_DIR, name), data)
    progress("mapped", 1, 1)
    return True


def _new_rows(chunks, previous_fragments: set[int], columns: list[str], dims: int) -> pa.Table:
    """The rows of the fragments the patch appended, in row-ID order, with what the arrays and the lexicon need."""
    wanted = list(dict.fromkeys([*columns, *LEXICON_COLUMNS, *(["vector"] if dims else [])]))
    parts = [fragment.to_table(columns=wanted, with_row_id=True) for fragment in chunks.get_fragments()
             if fragment.fragment_id not in previous_fragments]
    if not parts:
        schema = pa.schema([*(chunks.schema.field(c) for c in wanted), pa.field("_rowid", pa.uint64())])
        return schema.empty_table()
    table = pa.concat_tables(parts)
    return table.take(pc.sort_indices(table["_rowid"]))  # not numpy's argsort: pa.array(ndarray) imports numpy.ma


def _plain(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A mapped catalog column as plain values (the catalog stores strings as dictionaries)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _column(catalog: pa.Table, name: str, kept: pa.Array, new: pa.Table) -> pa.Array:
    """A catalog column: the previous build's kept values, then the new rows'. A taxonomy key the previous
    build lacked was added to its table as nulls, as it is here."""
    fresh = new[name].combine_chunks()
    if name in catalog.column_names:
        previous = _plain(catalog[name]).filter(kept)
    else:
        previous = pa.nulls(pc.sum(kept).as_py() or 0, fresh.type)
    return pa.concat_arrays([previous.cast(fresh.type), fresh])


def _patched_blocks(held: Held, mask: np.ndarray, content: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The compressed texts, their offsets and block starts: a previous block whose chunks all stay is kept
    as its bytes, one that lost some is compressed again from the rest, one that lost all is gone, and the
    new texts follow in blocks of BLOCK_CHUNKS. Recompressing every block after the first dropped chunk, as
    a full build would place them, cost 2 s at 124.5k chunks when the page changed came first."""
    count = len(mask)
    starts = held.text_starts if held.text_starts is not None else \
        np.append(np.arange(0, count, BLOCK_CHUNKS, dtype=np.int64), count)
    starts = np.asarray(starts, np.int64)
    kept = np.add.reduceat(mask.astype(np.int64), starts[:-1]) if count else np.zeros(0, np.int64)
    sizes = np.diff(starts)
    pieces: list[pa.Array] = []
    counts: list[np.ndarray] = []
    run = 0  # the first block of the run of whole blocks not yet taken
    for number in np.flatnonzero(kept != sizes).tolist():  # the blocks that lost a chunk
        if number > run:
            pieces.append(held.texts.slice(run, number - run))
            counts.append(sizes[run:number])
        run = number + 1
        if kept[number]:
            low, high = int(starts[number]), int(starts[number + 1])
            base = int(held.text_offsets[low])
            block = CODEC.decompress(held.texts[number].as_buffer(),
                                     decompressed_size=int(held.text_offsets[high]) - base, asbytes=True)
            texts = b"".join(block[int(held.text_offsets[p]) - base:int(held.text_offsets[p + 1]) - base]
                             for p in range(low, high) if mask[p])
            pieces.append(pa.array([CODEC.compress(texts, asbytes=True)], held.texts.type))
            counts.append(kept[number:number + 1])
    if run < len(sizes):
        pieces.append(held.texts.slice(run))
        counts.append(sizes[run:])
    blocks, offsets = compress_blocks([content])
    pieces.append(blocks.cast(held.texts.type))
    counts.append(np.diff(np.append(np.arange(0, len(content), BLOCK_CHUNKS, dtype=np.int64), len(content))))
    lengths = np.concatenate([np.diff(held.text_offsets)[mask], np.diff(offsets)])
    return (pa.concat_arrays(pieces), np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]),
            np.concatenate([[0], np.cumsum(np.concatenate(counts), dtype=np.int64)]))


def _pages(held: Held, rows: pa.Table, paths: pa.Array, dropped: list[str]) -> tuple[Pages, PageLinks | None]:
    """The pages and their links (`pages_from_rows`). When the build holds the same pages as the previous
    one, only the links of the pages changed are resolved: every other page's resolve as they did, page
    numbers aside. Resolving every page's links cost 0.25 s at 11,100 pages."""
    old_paths = held.catalog["filepath"].chunk(0).dictionary if held.catalog.num_rows else None
    if held.links is None or "links" not in rows.column_names or old_paths is None or len(old_paths) != len(paths):
        return pages_from_rows(rows, paths)
    new_of_old = pc.index_in(old_paths, value_set=paths)
    if new_of_old.null_count:  # a page added or removed may change how any page's links resolve
        return pages_from_rows(rows, paths)
    pages, _ = pages_from_rows(rows.drop_columns(["links"]), paths)
    changed = pc.is_in(rows["filepath"], value_set=pa.array(dropped, pa.string()))
    mine = rows.filter(changed)
    written: list[list[str] | None] = [None] * len(paths)
    codes = pc.index_in(mine["filepath"], value_set=paths).fill_null(-1).to_numpy(zero_copy_only=False)
    for code, targets in zip(codes.tolist(), mine["links"].to_pylist(), strict=True):
        if code >= 0:
            written[code] = targets
    fresh = resolve_links(paths.to_pylist(), written)
    new_of_old = new_of_old.to_numpy(zero_copy_only=False).astype(np.int64)
    old_of_new = np.empty_like(new_of_old)
    old_of_new[new_of_old] = np.arange(len(new_of_old))
    is_changed = pc.is_in(paths, value_set=pa.array(dropped, pa.string())).to_numpy(zero_copy_only=False)
    old_starts = np.asarray(held.links.starts, np.int64)
    counts = np.where(is_changed, np.diff(fresh.starts), np.diff(old_starts)[old_of_new])
    starts = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    # each page's targets gathered from the previous links (renumbered) or the fresh ones, after them
    source = np.concatenate([new_of_old[np.asarray(held.links.targets, np.int64)], fresh.targets])
    first = np.where(is_changed, len(held.links.targets) + fresh.starts[:-1], old_starts[old_of_new])
    gather = np.repeat(first - starts[:-1], counts) + np.arange(int(starts[-1]), dtype=np.int64)
    return pages, PageLinks(starts, source[gather])


def _document_rows(documents) -> pa.Table:
    columns = ["filepath", *(["links"] if "links" in documents.schema.names else [])]
    return documents.to_table(columns=columns, with_row_id=True)


def _batches(chunks, files: list[str]):
    """The rows of `files` in a previous build's chunks table, as record batches of LEXICON_COLUMNS."""
    for start in range(0, len(files), FILES_PER_QUERY):
        yield from chunks.to_batches(columns=LEXICON_COLUMNS, filter=in_files(files[start:start + FILES_PER_QUERY]),
                                     batch_size=READ_CHUNKS)
