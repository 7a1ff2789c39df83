"""Writing a build's tables: new ones from the fresh batches and the reused files' previous rows, or
a patched copy of the previous build's tables (hard links, stale rows deleted, fresh rows appended)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from retrieval import storage
from retrieval.errors import BuildCancelled
from retrieval.format.layout import (
    CHUNKS_TABLE,
    DOCUMENT_SCHEMA,
    DOCUMENTS_TABLE,
    chunk_schema,
    in_files,
    table_dataset,
    taxonomy_column,
)
from retrieval.format.metadata import TaxonomyField
from retrieval.storage import Location

from .batches import Batch, conform, documents_with_text, fresh_chunks
from .pages import FileResult
from .progress import Cancelled, Progress
from .reuse import PreviousBuild

FILES_PER_QUERY = 1000  # files named in one `filepath IN (...)` clause


def write_tables(partial: Location, previous: PreviousBuild | None, results: list[FileResult], batches: list[Batch],
                 files: dict[str, bytes], taxonomy: dict[str, TaxonomyField], dims: int, progress: Progress,
                 cancelled: Cancelled, included: Callable[[str], dict[str, bytes]] | None = None):
    """New tables from the fresh batches and, for reused files, the previous build's rows."""
    schema = chunk_schema(list(taxonomy), dims)
    reused = [r.relpath for r in results if r.reused]

    def chunk_rows() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from fresh_chunks(batch, schema).to_batches()
            batch.chunks = batch.vectors = None  # its documents are written next
        for start in range(0, len(reused), FILES_PER_QUERY):
            yield from conform(previous.chunk_rows(reused[start: start + FILES_PER_QUERY]), schema).to_batches()

    def document_rows() -> Iterator[pa.RecordBatch]:
        while batches:
            yield from documents_with_text(batches.pop(0), files, included).to_batches()
        for start in range(0, len(reused), FILES_PER_QUERY):
            yield from conform(previous.document_rows(reused[start: start + FILES_PER_QUERY]), DOCUMENT_SCHEMA).to_batches()

    # LanceDB pulls these readers from its own thread, so progress is reported around them, not inside.
    progress("write", 0, 2)
    db = storage.connect(storage.join(partial, "lancedb"))
    chunks = db.create_table(CHUNKS_TABLE, pa.RecordBatchReader.from_batches(schema, chunk_rows()))
    progress("write", 1, 2)
    if cancelled():
        raise BuildCancelled("build was cancelled while writing tables")
    documents = db.create_table(DOCUMENTS_TABLE, pa.RecordBatchReader.from_batches(DOCUMENT_SCHEMA, document_rows()))
    progress("write", 2, 2)
    return chunks, documents


def patch_tables(partial: Location, previous: PreviousBuild, stale: list[str], batches: list[Batch],
                 files: dict[str, bytes], taxonomy: dict[str, TaxonomyField], progress: Progress,
                 cancelled: Cancelled, included: Callable[[str], dict[str, bytes]] | None = None) -> Patched:
    """The previous tables, hard-linked (copied object by object by the server on an object store),
    minus the stale files' rows, plus the fresh ones.

    Through Lance's dataset API, not a LanceDB connection: importing LanceDB costs about 2 s (the models
    of its REST namespace client), several times a one-page patch."""
    copy_part(previous.directory, partial, "lancedb")
    chunks, documents = table_dataset(partial, CHUNKS_TABLE), table_dataset(partial, DOCUMENTS_TABLE)
    fragments = {fragment.fragment_id for fragment in chunks.get_fragments()}
    have = set(chunks.schema.names)
    missing = [pa.field(taxonomy_column(key), pa.string()) for key in taxonomy if taxonomy_column(key) not in have]
    if missing:
        chunks.add_columns(missing)
    for start in range(0, len(stale), FILES_PER_QUERY):
        where = in_files(stale[start: start + FILES_PER_QUERY])
        chunks.delete(where)
        documents.delete(where)
    progress("write", 0, len(batches))
    for n, batch in enumerate(batches, 1):
        if cancelled():
            raise BuildCancelled("build was cancelled while writing tables")
        if batch.chunks.num_rows:
            chunks.insert(fresh_chunks(batch, chunks.schema))
        documents.insert(documents_with_text(batch, files, included))
        progress("write", n, len(batches))
    batches.clear()
    return Patched(chunks, documents, fragments)


@dataclass
class Patched:
    """A patched build's tables (Lance datasets) and the fragments its chunks table had before the patch."""

    chunks: object
    documents: object
    fragments: set[int]


def copy_part(previous: Location, partial: Location, part: str) -> Location:
    """The previous build's folder `part` (its tables, its mapped files) under `partial`: hard links on a
    local disk, a server-side copy object by object on an object store."""
    target = storage.join(partial, part)
    if storage.is_remote(target) or storage.is_remote(previous):
        storage.copy_tree(storage.join(previous, part), target)
    else:
        _link_tree(previous / part, target)
    return target


def _link_tree(source: Path, target: Path) -> None:
    """A copy whose files are hard links (Lance adds files and never rewrites one), or plain copies
    where the filesystem cannot link them (another device, no hard links)."""
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link)
