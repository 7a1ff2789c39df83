"""Parsed files as Arrow batches: the fresh rows of a build, converted as files arrive from the parse
workers so their Python objects can be dropped, and shaped into the tables' schemas when written."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from retrieval.errors import BuildCancelled
from retrieval.format.layout import BASE_CHUNK_SCHEMA, DOCUMENT_SCHEMA, TAXONOMY_PREFIX

from .pages import FileResult, file_text, served_text
from .progress import Cancelled, Progress
from .scan import CorpusScan
from .validate import process_files

BATCH_CHUNKS = 8192  # rows per Arrow batch: large enough for cheap writes, small next to the corpus
_FROM_CHUNK = [name for name in BASE_CHUNK_SCHEMA.names if name not in ("title", "total_chunks", "file_key")]
_DOCUMENT_ROWS = DOCUMENT_SCHEMA.remove(DOCUMENT_SCHEMA.get_field_index("content"))


@dataclass
class Batch:
    """Rows of freshly parsed files, minus what is only known later (taxonomy columns, vectors)."""

    chunks: pa.Table  # BASE_CHUNK_SCHEMA
    documents: pa.Table  # DOCUMENT_SCHEMA without `content`, which is read from the scan's bytes when written
    metadata: list[tuple[dict[str, str], int]]  # per file, in row order: taxonomy values, number of chunks
    embed_texts: list[str] | None  # None when the build has no embeddings
    vectors: np.ndarray | None = None
    generator: str = ""  # the pages are stored as their site generator shows them (retrieval/ingest/sitegen)


def parse_files(scan: CorpusScan, keys: dict[str, str], reused: dict[str, FileResult], embeds: bool, workers: int,
                progress: Progress, cancelled: Cancelled, *, strict: bool = True,
                ) -> tuple[list[FileResult], list[Batch], list[FileResult]]:
    """Every built file's result in path order (fresh ones without their chunks), the fresh rows as
    batches, and the files left out for their errors.

    A file with an error is left out of the build, its findings kept. Under `strict`, once a file has
    an error nothing more is converted: the build will not be written."""
    todo = [(relpath, key) for relpath, key in keys.items() if relpath not in reused]
    fresh = process_files(scan, todo, workers=workers)
    results: list[FileResult] = []
    left_out: list[FileResult] = []
    batches: list[Batch] = []
    pending: list[FileResult] = []
    pending_chunks = 0
    failed = False
    progress("chunk", 0, len(keys))
    for relpath in keys:
        result = reused.get(relpath) or next(fresh)
        if any(f.severity == "error" for f in result.findings) or relpath in scan.left_out:
            failed = strict
            left_out.append(_light(result))
            progress("chunk", len(results) + len(left_out), len(keys))
            continue
        if not result.reused and not failed:
            pending.append(result)
            pending_chunks += result.chunk_count
            if pending_chunks >= BATCH_CHUNKS:
                batches.append(_to_batch(pending, embeds, scan.generator))
                pending, pending_chunks = [], 0
        results.append(_light(result))
        progress("chunk", len(results) + len(left_out), len(keys))
        if cancelled():
            fresh.close()
            raise BuildCancelled("build was cancelled while chunking")
    if pending and not failed:
        batches.append(_to_batch(pending, embeds, scan.generator))
    return results, batches, left_out


def _light(result: FileResult) -> FileResult:
    """The result without its chunks and text, which now live in a batch."""
    if result.reused:
        return result
    return FileResult(result.relpath, result.key, result.title, "", result.config, outline=result.outline,
                      findings=result.findings, metadata=result.metadata, chunk_count=result.chunk_count)


def _to_batch(results: list[FileResult], embeds: bool, generator: str) -> Batch:
    columns: dict[str, list] = {name: [] for name in BASE_CHUNK_SCHEMA.names}
    texts: list[str] | None = [] if embeds else None
    for result in results:
        for chunk in result.chunks:
            for name in _FROM_CHUNK:
                columns[name].append(getattr(chunk, name))
            columns["title"].append(result.title)
            columns["total_chunks"].append(result.chunk_count)
            columns["file_key"].append(result.key)
            if texts is not None:
                texts.append(chunk.embed_text)
    documents = pa.Table.from_pylist([{**file_record(r), "size": len(r.content), "links": r.links} for r in results],
                                     schema=_DOCUMENT_ROWS)
    return Batch(pa.table(columns, schema=BASE_CHUNK_SCHEMA), documents,
                  [(r.metadata, r.chunk_count) for r in results], texts, generator=generator)


def file_record(result: FileResult) -> dict:
    """A file's row of the documents table, without its content and size."""
    return {
        "filepath": result.relpath, "title": result.title, "chunk_count": result.chunk_count,
        "outline": json.dumps([[e.level, e.text, e.line] for e in result.outline], ensure_ascii=False),
        "file_key": result.key,
        "findings": json.dumps([f.as_dict() for f in result.findings], ensure_ascii=False),
        "metadata": json.dumps(result.metadata, ensure_ascii=False, sort_keys=True),
    }


def documents_with_text(batch: Batch, files: dict[str, bytes],
                        included: Callable[[str], dict[str, bytes]] | None = None) -> pa.Table:
    """The batch's documents rows with their text; holding the text twice (bytes and str) until
    the write would cost as much memory as the corpus. `included`: `CorpusScan.included`."""
    texts = pa.array([served_text(files, p, batch.generator, included(p) if included else None)
                      if batch.generator or p.endswith(".mdx")
                      else file_text(files[p]) for p in batch.documents["filepath"].to_pylist()], pa.string())
    return batch.documents.add_column(DOCUMENT_SCHEMA.get_field_index("content"), DOCUMENT_SCHEMA.field("content"),
                                      texts)


def fresh_chunks(batch: Batch, schema: pa.Schema) -> pa.Table:
    """A batch's chunk rows in `schema`: taxonomy values spread over each file's rows, vectors added."""
    table = batch.chunks
    for column in schema.names[len(BASE_CHUNK_SCHEMA):]:
        if column == "vector":
            dims = schema.field("vector").type.list_size
            flat = pa.array(batch.vectors.astype(np.float32, copy=False).ravel(), pa.float32())
            table = table.append_column(schema.field("vector"), pa.FixedSizeListArray.from_arrays(flat, dims))
        else:
            key = column[len(TAXONOMY_PREFIX):]
            values = [value for metadata, count in batch.metadata for value in [metadata.get(key)] * count]
            table = table.append_column(schema.field(column), pa.array(values, pa.string()))
    return table


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Previous rows in the new schema: taxonomy keys the previous build lacked become nulls."""
    arrays = [table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)
