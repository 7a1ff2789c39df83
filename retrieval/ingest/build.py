"""Build one index directory from a corpus: validate, chunk, embed, write LanceDB tables.

A build writes into `<out_dir>.partial` and renames it to `out_dir` only when every table,
index and metadata.json is in place, so a reader never sees a half-written build, and a
failed or interrupted build leaves nothing that looks complete. On an object store (no
rename) the build is written in place and metadata.json, written last, marks it complete;
contents.json, written just before it, lists every file with its size for the hosts that
copy the build to a local cache. Nothing is embedded or
written before the whole corpus has validated, so a corpus with errors costs no API calls.

Memory: parsed files are turned into Arrow batches as they arrive from the worker processes
and their Python objects dropped; the tables are written from those batches, each released
once written.

Incremental (a previous build made with the same schema and embedding model): a file whose
`file_key` (content + governing manifests) is unchanged is not parsed again. When few files
changed, the build *patches* a copy of the previous tables: the copy hard-links the previous
build's Lance files (Lance never rewrites a file, it adds new ones), deletes the rows of
changed and removed files, appends the new rows and indexes them as a new index segment.
Otherwise the tables are rewritten, reused files' rows copied from the previous build.
Changed chunks are embedded through the embedding cache either way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from retrieval import storage
from retrieval.corpus_summary import summarize
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.embeddings.cache import EmbeddingCache, embed_with_cache
from retrieval.errors import BuildCancelled, ValidationFailed
from retrieval.storage import Location
from retrieval.storage.contents import write_contents

from .layout import CHUNKS_TABLE, DOCUMENTS_TABLE, TAXONOMY_PREFIX, open_tables, sql_string, taxonomy_column
from .manifest import MANIFEST_NAME, AutoInclude
from .metadata import BuildMetadata, TaxonomyField, read_metadata, write_metadata
from .sources import (
    DEFAULT_MAX_FILE_BYTES,
    CorpusScan,
    FileResult,
    Finding,
    OutlineEntry,
    file_text,
    process_files,
    scan_corpus,
)

log = logging.getLogger("retrieval.ingest")

FILES_JSON = "files.json"  # per-file records of a build, beside metadata.json
BATCH_CHUNKS = 8192  # rows per Arrow batch: large enough for cheap writes, small next to the corpus
PATCH_MAX_TOUCHED = 0.2  # above this fraction of files added, changed or removed, rewriting beats patching
FILES_PER_QUERY = 1000  # files named in one `filepath IN (...)` clause
MAX_INDEX_SEGMENTS = 8  # index segments a patched table may grow before they are merged into one
Progress = Callable[[str, int, int], None]


@dataclass
class BuildRequest:
    source_dir: Path
    out_dir: Location  # a local path or an object-store URI (retrieval/storage)
    build_id: str
    corpus: str
    provider: EmbeddingProvider | None = None
    description: str = ""
    previous_dir: Location | None = None  # last complete build, for incremental reuse
    full: bool = False  # ignore the previous build and the embedding cache
    cache_dir: Location | None = None
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    scan: CorpusScan | None = None  # the tree already read (a git commit); else source_dir is scanned
    revision: str = ""  # the git commit built; "" for a directory, whose revision is its content hash
    version: str = ""  # the version label the build serves ("" when the corpus has one version)
    # paths the source says changed since the previous build's commit (a git diff); None: unknown
    changed: frozenset[str] | None = None
    max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES  # a larger source file is skipped with a finding


@dataclass
class BuildResult:
    path: Location
    metadata: BuildMetadata
    findings: list[Finding]
    stats: dict
    timings: dict


@dataclass
class _Batch:
    """Rows of freshly parsed files, minus what is only known later (taxonomy columns, vectors)."""

    chunks: pa.Table  # BASE_CHUNK_SCHEMA
    documents: pa.Table  # DOCUMENT_SCHEMA without `content`, which is read from the scan's bytes when written
    metadata: list[tuple[dict[str, str], int]]  # per file, in row order: taxonomy values, number of chunks
    embed_texts: list[str] | None  # None when the build has no embeddings
    vectors: np.ndarray | None = None


def _noop(stage: str, done: int, total: int) -> None:
    return None


def build_index(request: BuildRequest, progress: Progress | None = None,
                cancelled: Callable[[], bool] | None = None) -> BuildResult:
    progress = progress or _noop
    cancelled = cancelled or (lambda: False)
    timings: dict[str, float] = {}
    started = time.perf_counter()

    def mark(stage: str) -> None:
        if cancelled():
            raise BuildCancelled(f"build {request.build_id} was cancelled during {stage}")
        timings[stage] = round(time.perf_counter() - started - sum(timings.values()), 3)

    storage.require_bucket(request.out_dir)
    scan = request.scan or scan_corpus(request.source_dir, max_file_bytes=request.max_file_bytes)
    provider = request.provider
    dims = provider.dimensions if provider else 0
    spec = provider.spec.to_dict() if provider and dims else None
    previous = None if request.full else _open_previous(request.previous_dir, spec, dims)
    keys = _file_keys(scan, previous, request.changed)
    reused = previous.reusable(keys) if previous else {}
    stale = previous.stale(keys) if previous else []  # files whose previous rows must go
    touched = len(set(keys) - set(reused) | set(stale))
    patch = previous is not None and touched <= PATCH_MAX_TOUCHED * max(len(keys), 1)
    results, batches = _parse(scan, keys, reused, dims > 0, request.workers, progress, cancelled)
    findings = list(scan.findings) + [f for r in results for f in r.findings]
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ValidationFailed(f"validation found {len(errors)} error(s); fix them before building", findings)
    mark("scan_and_chunk")

    embedded = _embed(request, provider, batches, progress, cancelled)
    mark("embed")

    taxonomy = _taxonomy(scan, results)
    partial = _staging(request.out_dir)
    try:
        unchanged = patch and touched == 0 and set(taxonomy) <= set(previous.metadata.taxonomy)
        if unchanged:  # the previous tables as they are: hard links, no table opened
            _copy_tables(previous.directory, partial)
        elif patch:
            chunks, documents = _patch_tables(partial, previous, stale, batches, scan.files, taxonomy, progress,
                                              cancelled)
        else:
            chunks, documents = _write_tables(partial, previous, results, batches, scan.files, taxonomy, dims,
                                              progress, cancelled)
        mark("write")
        if not unchanged:
            _create_indexes(chunks, documents, taxonomy, progress, cancelled)
        mark("index")
        _write_file_records(partial, results, dims)
        stats = {
            "total_chunks": previous.metadata.stats["total_chunks"] if unchanged else chunks.count_rows(),
            "total_files": len(results),
            "indexed_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source_commit": request.revision or None,
            "revision": request.revision or content_revision(keys),
            "version": request.version,
            "reused_files": len(reused),
            "chunked_files": len(results) - len(reused),
            "embedded_chunks": embedded,
            "warnings": sum(1 for f in findings if f.severity == "warning"),
            "patched": patch,
        }
        root = scan.root_manifest
        metadata = BuildMetadata(
            build_id=request.build_id,
            corpus=request.corpus,
            corpus_description=request.description or (root.description if root else "") or request.corpus,
            instructions=root.instructions if root else "",
            taxonomy=taxonomy,
            auto_include=_auto_include(root.auto_include if root else [], taxonomy),
            stats=stats,
            embedding=spec,
            files={r.relpath: r.title for r in results},
            extra={"summary": summarize({r.relpath: r.title for r in results})},
        )
        write_contents(partial)
        if cancelled():
            raise BuildCancelled(f"build {request.build_id} was cancelled before activation")
        write_metadata(partial, metadata)
        if partial != request.out_dir:
            shutil.rmtree(request.out_dir, ignore_errors=True)
            os.replace(partial, request.out_dir)
    except BaseException:
        storage.delete_tree(partial)
        raise
    timings["total"] = round(time.perf_counter() - started, 3)
    return BuildResult(request.out_dir, metadata, findings, stats, timings)


def content_revision(keys: dict[str, str]) -> str:
    """A directory source's revision: one hash of every file's path and key, so the same tree
    always gives the same revision and any change to a file or manifest gives another."""
    digest = hashlib.sha256()
    for relpath in sorted(keys):
        digest.update(f"{relpath}\0{keys[relpath]}\n".encode())
    return digest.hexdigest()[:16]


def _staging(out_dir: Location) -> Location:
    """Where the build is written: `<out_dir>.partial`, renamed when complete, on a local disk; on
    an object store, which cannot rename, `out_dir` itself, complete once metadata.json (written
    last) is there."""
    if storage.is_remote(out_dir):
        storage.delete_tree(out_dir)
        return out_dir
    partial = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    return partial


def _file_keys(scan: CorpusScan, previous: _PreviousBuild | None, changed: frozenset[str] | None) -> dict[str, str]:
    """Each file's key. With a diff from the previous build's commit, a file the diff does not name
    keeps its recorded key unhashed; a changed manifest governs files the diff does not name, so
    then, as without a diff, every file's content decides."""
    if previous is None or changed is None or any(posixpath.basename(p) == MANIFEST_NAME for p in changed):
        return {relpath: scan.file_key(relpath) for relpath in sorted(scan.files)}
    recorded = previous.files
    return {relpath: recorded[relpath]["file_key"] if relpath in recorded and relpath not in changed
            else scan.file_key(relpath) for relpath in sorted(scan.files)}


def _parse(scan: CorpusScan, keys: dict[str, str], reused: dict[str, FileResult], embeds: bool, workers: int,
           progress: Progress, cancelled: Callable[[], bool]) -> tuple[list[FileResult], list[_Batch]]:
    """Every file's result in path order (fresh ones without their chunks), and the fresh rows as batches.

    Once a file has an error nothing more is converted: the build will not be written."""
    todo = [(relpath, key) for relpath, key in keys.items() if relpath not in reused]
    fresh = process_files(scan, todo, workers=workers)
    results: list[FileResult] = []
    batches: list[_Batch] = []
    pending: list[FileResult] = []
    pending_chunks = 0
    failed = False
    progress("chunk", 0, len(keys))
    for relpath in keys:
        result = reused.get(relpath) or next(fresh)
        failed = failed or any(f.severity == "error" for f in result.findings)
        if not result.reused and not failed:
            pending.append(result)
            pending_chunks += result.chunk_count
            if pending_chunks >= BATCH_CHUNKS:
                batches.append(_batch(pending, embeds))
                pending, pending_chunks = [], 0
        results.append(_light(result))
        progress("chunk", len(results), len(keys))
        if cancelled():
            fresh.close()
            raise BuildCancelled("build was cancelled while chunking")
    if pending and not failed:
        batches.append(_batch(pending, embeds))
    return results, batches


def _light(result: FileResult) -> FileResult:
    """The result without its chunks and text, which now live in a batch."""
    if result.reused:
        return result
    return FileResult(result.relpath, result.key, result.title, "", result.config, outline=result.outline,
                      findings=result.findings, metadata=result.metadata, chunk_count=result.chunk_count)


def _batch(results: list[FileResult], embeds: bool) -> _Batch:
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
    documents = pa.Table.from_pylist([{**_file_record(r), "size": len(r.content), "links": r.links} for r in results],
                                     schema=_DOCUMENT_ROWS)
    return _Batch(pa.table(columns, schema=BASE_CHUNK_SCHEMA), documents,
                  [(r.metadata, r.chunk_count) for r in results], texts)


def _file_record(result: FileResult) -> dict:
    """A file's row of the documents table, without its content and size."""
    return {
        "filepath": result.relpath, "title": result.title, "chunk_count": result.chunk_count,
        "outline": json.dumps([[e.level, e.text, e.line] for e in result.outline], ensure_ascii=False),
        "file_key": result.key,
        "findings": json.dumps([f.as_dict() for f in result.findings], ensure_ascii=False),
        "metadata": json.dumps(result.metadata, ensure_ascii=False, sort_keys=True),
    }


def _schema_fingerprint(dims: int) -> str:
    return hashlib.sha256(f"{_chunk_schema([], dims)}\n{DOCUMENT_SCHEMA}".encode()).hexdigest()[:16]


def _write_file_records(directory: Location, results: list[FileResult], dims: int) -> None:
    """files.json: what the next build compares against, readable without opening the tables."""
    payload = {"schema": _schema_fingerprint(dims), "files": [_file_record(r) for r in results]}
    storage.write_bytes(storage.join(directory, FILES_JSON), json.dumps(payload, ensure_ascii=False).encode())


def _taxonomy(scan: CorpusScan, results: list[FileResult]) -> dict[str, TaxonomyField]:
    config = scan.taxonomy_config()
    values: dict[str, set[str]] = {}
    for result in results:
        if result.chunk_count:
            for key, value in result.metadata.items():
                values.setdefault(key, set()).add(value)
    return {key: TaxonomyField(config[key].description if key in config else None, tuple(sorted(found)),
                               config[key].vector_collapse if key in config else False)
            for key, found in sorted(values.items())}


def _auto_include(rules: list[AutoInclude], taxonomy: dict[str, TaxonomyField]) -> list[AutoInclude]:
    """Rules whose keys the corpus does not have would never fire; drop them here, not at query time."""
    return [r for r in rules if r.when in taxonomy and r.unless in taxonomy and set(r.include) <= set(taxonomy)]


def _embed(request: BuildRequest, provider: EmbeddingProvider | None, batches: list[_Batch],
           progress: Progress, cancelled: Callable[[], bool]) -> int:
    """Fills each batch's vectors; returns how many texts were actually embedded (not cached).

    Cancellation is checked after every provider batch: embedding is the longest stage."""
    if provider is None or not provider.dimensions:
        return 0
    total = sum(len(b.embed_texts) for b in batches)
    cache = EmbeddingCache(request.cache_dir, provider.spec) if request.cache_dir is not None else None
    done = embedded = 0
    progress("embed", 0, total)
    for batch in batches:
        def report(n: int, base: int = done) -> None:
            if cancelled():
                raise BuildCancelled("build was cancelled while embedding")
            progress("embed", base + n, total)

        report(0)
        if cache is not None and not request.full:
            batch.vectors, count = embed_with_cache(provider, batch.embed_texts, cache, progress=report)
        else:
            batch.vectors, count = provider.embed(batch.embed_texts, progress=report), len(batch.embed_texts)
            if cache is not None:
                cache.put_many([cache.key(t) for t in batch.embed_texts], batch.vectors)
        done += len(batch.embed_texts)
        embedded += count
        batch.embed_texts = None
    progress("embed", total, total)
    return embedded


BASE_CHUNK_SCHEMA = pa.schema([
    pa.field("chunk_id", pa.string()), pa.field("filepath", pa.string()), pa.field("title", pa.string()),
    pa.field("heading", pa.string()), pa.field("heading_level", pa.int32()),
    pa.field("breadcrumb", pa.string()), pa.field("content", pa.string()), pa.field("ident", pa.string()),
    pa.field("chunk_index", pa.int32()), pa.field("total_chunks", pa.int32()),
    pa.field("start_line", pa.int32()), pa.field("end_line", pa.int32()), pa.field("file_key", pa.string()),
    pa.field("link_share", pa.float32()),
    pa.field("keywords", pa.string()),  # the page's front matter keywords (retrieval/ingest/keywords.py)
])
_FROM_CHUNK = [name for name in BASE_CHUNK_SCHEMA.names if name not in ("title", "total_chunks", "file_key")]
DOCUMENT_SCHEMA = pa.schema([
    pa.field("filepath", pa.string()), pa.field("title", pa.string()), pa.field("content", pa.string()),
    pa.field("size", pa.int64()), pa.field("chunk_count", pa.int32()), pa.field("outline", pa.string()),
    pa.field("file_key", pa.string()), pa.field("findings", pa.string()), pa.field("metadata", pa.string()),
    pa.field("links", pa.list_(pa.string())),  # where the page links to, a ranking prior (retrieval/ingest/links.py)
])
_DOCUMENT_ROWS = DOCUMENT_SCHEMA.remove(DOCUMENT_SCHEMA.get_field_index("content"))


def _documents(batch: _Batch, files: dict[str, bytes]) -> pa.Table:
    """The batch's documents rows with their text; holding the text twice (bytes and str) until
    the write would cost as much memory as the corpus."""
    texts = pa.array([file_text(files[p]) for p in batch.documents["filepath"].to_pylist()], pa.string())
    return batch.documents.add_column(DOCUMENT_SCHEMA.get_field_index("content"), DOCUMENT_SCHEMA.field("content"),
                                      texts)


def _chunk_schema(keys: list[str], dimensions: int) -> pa.Schema:
    fields = [*BASE_CHUNK_SCHEMA, *(pa.field(taxonomy_column(key), pa.string()) for key in keys)]
    if dimensions:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dimensions)))
    return pa.schema(fields)


def _fresh_chunks(batch: _Batch, schema: pa.Schema) -> pa.Table:
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


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Previous rows in the new schema: taxonomy keys the previous build lacked become nulls."""
    arrays = [table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _write_tables(partial: Location, previous: _PreviousBuild | None, results: list[FileResult], batches: list[_Batch],
                  files: dict[str, bytes], taxonomy: dict[str, TaxonomyField], dims: int, progress: Progress,
                  cancelled: Callable[[], bool]):
    """New tables from the fresh batches and, for reused files, the previous build's rows."""
    schema = _chunk_schema(list(taxonomy), dims)
    reused = [r.relpath for r in results if r.reused]

    def chunk_rows() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from _fresh_chunks(batch, schema).to_batches()
            batch.chunks = batch.vectors = None  # its documents are written next
        for start in range(0, len(reused), FILES_PER_QUERY):
            yield from _conform(previous.chunk_rows(reused[start: start + FILES_PER_QUERY]), schema).to_batches()

    def document_rows() -> Iterator[pa.RecordBatch]:
        while batches:
            yield from _documents(batches.pop(0), files).to_batches()
        for start in range(0, len(reused), FILES_PER_QUERY):
            yield from _conform(previous.document_rows(reused[start: start + FILES_PER_QUERY]), DOCUMENT_SCHEMA).to_batches()

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


def _patch_tables(partial: Location, previous: _PreviousBuild, stale: list[str], batches: list[_Batch],
                  files: dict[str, bytes], taxonomy: dict[str, TaxonomyField], progress: Progress,
                  cancelled: Callable[[], bool]):
    """The previous tables, hard-linked (copied object by object by the server on an object store),
    minus the stale files' rows, plus the fresh ones."""
    db = storage.connect(_copy_tables(previous.directory, partial))
    chunks, documents = db.open_table(CHUNKS_TABLE), db.open_table(DOCUMENTS_TABLE)
    have = set(chunks.schema.names)
    missing = [pa.field(taxonomy_column(key), pa.string()) for key in taxonomy if taxonomy_column(key) not in have]
    if missing:
        chunks.add_columns(missing)
    for start in range(0, len(stale), FILES_PER_QUERY):
        where = _in_files(stale[start: start + FILES_PER_QUERY])
        chunks.delete(where)
        documents.delete(where)
    progress("write", 0, len(batches))
    for n, batch in enumerate(batches, 1):
        if cancelled():
            raise BuildCancelled("build was cancelled while writing tables")
        if batch.chunks.num_rows:
            chunks.add(_fresh_chunks(batch, chunks.schema))
        documents.add(_documents(batch, files))
        progress("write", n, len(batches))
    batches.clear()
    return chunks, documents


def _copy_tables(previous: Location, partial: Location) -> Location:
    """The previous build's tables under `partial`: hard links on a local disk, a server-side copy
    object by object on an object store."""
    target = storage.join(partial, "lancedb")
    if storage.is_remote(target) or storage.is_remote(previous):
        storage.copy_tree(storage.join(previous, "lancedb"), target)
    else:
        _link_tree(previous / "lancedb", target)
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


def _in_files(relpaths: list[str]) -> str:

    return f"filepath IN ({', '.join(sql_string(p) for p in relpaths)})"


def _create_indexes(chunks, documents, taxonomy: dict[str, TaxonomyField], progress: Progress,
                    cancelled: Callable[[], bool]) -> None:
    """Creates the indexes a table lacks, and indexes the rows a patched table gained."""
    from lancedb.index import FTS, Bitmap, BTree

    wanted = [
        (chunks, "heading", FTS(with_position=False)),
        (chunks, "title", FTS(with_position=False)),
        (chunks, "keywords", FTS(with_position=False)),
        (chunks, "content", FTS(with_position=True)),
        (chunks, "ident", FTS(base_tokenizer="whitespace", stem=False, remove_stop_words=False,
                              max_token_length=80, with_position=False)),
        (documents, "content", FTS(with_position=False)),  # whole pages, a ranking prior (search/priors.py)
        (chunks, "chunk_id", BTree()),
        (chunks, "filepath", BTree()),
        (documents, "filepath", BTree()),
        *((chunks, taxonomy_column(key), Bitmap()) for key in taxonomy),
    ]
    rows = {id(chunks): chunks.count_rows(), id(documents): documents.count_rows()}
    indexed = {id(t): {c for i in t.list_indices() for c in i.columns} for t in (chunks, documents)}
    steps = [(t, column, config) for t, column, config in wanted
             if column not in indexed[id(t)] and (rows[id(t)] or not isinstance(config, FTS | Bitmap))]
    patched = [t for t in (chunks, documents) if indexed[id(t)] and _index_state(t)[0]]
    total = len(steps) + len(patched)
    progress("index", 0, total)
    for n, (table, column, config) in enumerate(steps, 1):
        if cancelled():
            raise BuildCancelled("build was cancelled while creating indexes")
        table.create_index(column, config=config)
        progress("index", n, total)
    for n, table in enumerate(patched, len(steps) + 1):
        _index_appended_rows(table)
        progress("index", n, total)


def _index_state(table) -> tuple[int, int]:
    """(unindexed rows, index segments) of a table's indexes; appends affect all of them alike."""
    stats = table.index_stats("filepath_idx")
    return (stats.num_unindexed_rows, stats.num_indices) if stats else (0, 0)


def _index_appended_rows(table) -> None:
    """Indexes appended rows as a new segment of each index, merging the segments once there are many.

    Left unindexed, even a few rows cost every full-text query a flat scan (at 124k rows, 9 such
    rows added 3 ms and 1.3k rows 90 ms); a new segment costs 0.1 s to write and about 0.5 ms a
    query, while merging into the main segment rewrites it (1.5 s at 124k rows). LanceDB's own
    `optimize()` always merges, hence the Lance dataset API.
    """
    segments = _index_state(table)[1]
    table.to_lance().optimize.optimize_indices(num_indices_to_merge=0 if segments < MAX_INDEX_SEGMENTS else segments)
    table.checkout_latest()


class _PreviousBuild:
    """The last complete build: per-file records for reuse (no content), and its tables for rows.

    The records come from the build's files.json when it has one, so a build that finds nothing
    changed never opens a table; the tables open on first use.
    """

    def __init__(self, directory: Location):
        self.directory = directory
        self.metadata = read_metadata(directory)
        self._tables: tuple | None = None
        self.schema: str | None = None
        try:
            records = json.loads(storage.read_bytes(storage.join(directory, FILES_JSON)))
            self.schema, rows = records["schema"], records["files"]
        except (OSError, ValueError, KeyError):  # a build older than files.json
            columns = ["filepath", "file_key", "title", "outline", "findings", "metadata", "chunk_count"]
            rows = self.documents.search().select(columns).limit(None).to_arrow().to_pylist()
        self.files = {row["filepath"]: row for row in rows}

    @property
    def chunks(self):
        return self._opened()[0]

    @property
    def documents(self):
        return self._opened()[1]

    def _opened(self) -> tuple:
        if self._tables is None:
            self._tables = open_tables(self.directory)
        return self._tables

    def compatible(self, dims: int) -> bool:
        """Rows can be reused only from tables of the schema this code writes."""
        if self.schema is not None:
            return self.schema == _schema_fingerprint(dims)
        base = _chunk_schema([], dims)
        chunk_fields = [f for f in self.chunks.schema if not f.name.startswith(TAXONOMY_PREFIX)]
        return chunk_fields == list(base) and self.documents.schema == DOCUMENT_SCHEMA

    def reusable(self, keys: dict[str, str]) -> dict[str, FileResult]:
        out = {}
        for relpath, key in keys.items():
            row = self.files.get(relpath)
            if row is not None and row["file_key"] == key:
                out[relpath] = FileResult(
                    relpath, key, row["title"], "", None, reused=True,
                    outline=[OutlineEntry(*e) for e in json.loads(row["outline"])],
                    findings=[Finding(**f) for f in json.loads(row["findings"] or "[]")],
                    metadata=json.loads(row["metadata"]), chunk_count=row["chunk_count"])
        return out

    def stale(self, keys: dict[str, str]) -> list[str]:
        return sorted(path for path, row in self.files.items() if keys.get(path) != row["file_key"])

    def chunk_rows(self, relpaths: list[str]) -> pa.Table:
        return self.chunks.search().where(_in_files(relpaths)).limit(None).to_arrow()

    def document_rows(self, relpaths: list[str]) -> pa.Table:
        return self.documents.search().where(_in_files(relpaths)).limit(None).to_arrow()


def _open_previous(directory: Location | None, spec: dict | None, dims: int) -> _PreviousBuild | None:
    if directory is None or not storage.exists(directory):
        return None
    try:
        previous = _PreviousBuild(storage.as_location(directory))
    except Exception as exc:  # a broken previous build only costs us the reuse
        log.warning("cannot reuse previous build at %s: %s", directory, exc)
        return None
    if previous.metadata.embedding != spec:
        return None  # vectors from another model cannot be reused
    if not previous.compatible(dims):
        log.info("previous build at %s has another table schema; parsing every file", directory)
        return None
    return previous
