"""Build one index directory from a corpus: validate, chunk, embed, write LanceDB tables.

A build writes into `<out_dir>.partial` and renames it to `out_dir` only when every table,
index and metadata.json is in place, so a reader never sees a half-written build, and a
failed or interrupted build leaves nothing that looks complete.

Incremental: a file whose content and governing manifests hash the same as in the previous
build (`file_key`) is not parsed or chunked again; its rows, vectors included, are copied.
Chunks of changed files are embedded through the embedding cache, so only new text costs.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree

from .chunking import Chunk
from .embedding_cache import EmbeddingCache, embed_with_cache
from .embeddings.base import EmbeddingProvider
from .errors import BuildCancelled, ValidationFailed
from .manifest import AutoInclude
from .metadata import BuildMetadata, TaxonomyField, write_metadata
from .sources import FileResult, Finding, OutlineEntry, process_corpus, scan_corpus

log = logging.getLogger("retrieval.build")

CHUNKS_TABLE = "chunks"
DOCUMENTS_TABLE = "documents"
TAXONOMY_PREFIX = "m_"
Progress = Callable[[str, int, int], None]


def taxonomy_column(key: str) -> str:
    return f"{TAXONOMY_PREFIX}{key}"


@dataclass
class BuildRequest:
    source_dir: Path
    out_dir: Path
    build_id: str
    corpus: str
    provider: EmbeddingProvider | None = None
    description: str = ""
    previous_dir: Path | None = None  # last complete build, for incremental reuse
    full: bool = False  # ignore the previous build and the embedding cache
    cache_dir: Path | None = None
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)


@dataclass
class BuildResult:
    path: Path
    metadata: BuildMetadata
    findings: list[Finding]
    stats: dict
    timings: dict


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

    scan = scan_corpus(request.source_dir)
    previous = None if request.full else _previous_rows(request.previous_dir)
    provider = request.provider
    spec = provider.spec.to_dict() if provider and provider.dimensions else None
    if previous is not None and previous.embedding != spec:
        previous = None  # vectors from another model cannot be reused
    results = process_corpus(scan, reuse=previous.reuse if previous else None, workers=request.workers,
                             progress=lambda d, t: progress("chunk", d, t))
    findings = list(scan.findings) + [f for r in results for f in r.findings]
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ValidationFailed(f"validation found {len(errors)} error(s); fix them before building", findings)
    mark("scan_and_chunk")

    taxonomy = _taxonomy(scan.taxonomy_config(), results)
    fresh = [r for r in results if not r.reused]
    fresh_chunks = [c for r in fresh for c in r.chunks]
    vectors, embedded = _embed(request, provider, fresh_chunks, progress)
    mark("embed")

    partial = request.out_dir.with_name(request.out_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        db = lancedb.connect(partial / "lancedb")
        chunk_table = _chunk_table(results, fresh, vectors, previous, taxonomy, provider)
        doc_table = _document_table(results, previous)
        progress("write", 0, 2)
        chunks = db.create_table(CHUNKS_TABLE, chunk_table)
        documents = db.create_table(DOCUMENTS_TABLE, doc_table)
        progress("write", 2, 2)
        mark("write")
        _create_indexes(chunks, documents, taxonomy, progress, cancelled)
        mark("index")
        reused_files = sum(1 for r in results if r.reused)
        stats = {
            "total_chunks": chunk_table.num_rows,
            "total_files": len(results),
            "indexed_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source_commit": None,
            "reused_files": reused_files,
            "chunked_files": len(results) - reused_files,
            "embedded_chunks": embedded,
            "warnings": sum(1 for f in findings if f.severity == "warning"),
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
        )
        write_metadata(partial, metadata)
        if cancelled():
            raise BuildCancelled(f"build {request.build_id} was cancelled before activation")
        shutil.rmtree(request.out_dir, ignore_errors=True)
        os.replace(partial, request.out_dir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    timings["total"] = round(time.perf_counter() - started, 3)
    return BuildResult(request.out_dir, metadata, findings, stats, timings)


def _taxonomy(config: dict, results: list[FileResult]) -> dict[str, TaxonomyField]:
    values: dict[str, set[str]] = {}
    for result in results:
        if result.config and result.chunks:
            for key, value in result.config.metadata.items():
                values.setdefault(key, set()).add(value)
    return {key: TaxonomyField(config[key].description if key in config else None, tuple(sorted(found)),
                               config[key].vector_collapse if key in config else False)
            for key, found in sorted(values.items())}


def _auto_include(rules: list[AutoInclude], taxonomy: dict[str, TaxonomyField]) -> list[AutoInclude]:
    """Rules whose keys the corpus does not have would never fire; drop them here, not at query time."""
    return [r for r in rules if r.when in taxonomy and r.unless in taxonomy and set(r.include) <= set(taxonomy)]


def _embed(request: BuildRequest, provider: EmbeddingProvider | None, chunks: list[Chunk],
           progress: Progress) -> tuple[np.ndarray | None, int]:
    if provider is None or not provider.dimensions:
        return None, 0
    texts = [c.embed_text for c in chunks]
    progress("embed", 0, len(texts))
    report = lambda n: progress("embed", n, len(texts))  # noqa: E731
    cache = EmbeddingCache(request.cache_dir, provider.spec) if request.cache_dir is not None else None
    if cache is not None and not request.full:
        vectors, embedded = embed_with_cache(provider, texts, cache, progress=report)
    else:
        vectors, embedded = provider.embed(texts, progress=report), len(texts)
        if cache is not None:
            cache.put_many([cache.key(t) for t in texts], vectors)
    progress("embed", len(texts), len(texts))
    return vectors, embedded


def _chunk_schema(taxonomy: dict[str, TaxonomyField], dimensions: int) -> pa.Schema:
    fields = [
        pa.field("chunk_id", pa.string()), pa.field("filepath", pa.string()), pa.field("title", pa.string()),
        pa.field("heading", pa.string()), pa.field("heading_level", pa.int32()),
        pa.field("breadcrumb", pa.string()), pa.field("content", pa.string()), pa.field("ident", pa.string()),
        pa.field("chunk_index", pa.int32()), pa.field("total_chunks", pa.int32()),
        pa.field("start_line", pa.int32()), pa.field("end_line", pa.int32()), pa.field("file_key", pa.string()),
    ]
    fields += [pa.field(taxonomy_column(key), pa.string()) for key in taxonomy]
    if dimensions:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dimensions)))
    return pa.schema(fields)


def _chunk_table(results: list[FileResult], fresh: list[FileResult], vectors: np.ndarray | None,
                 previous: _PreviousBuild | None, taxonomy: dict[str, TaxonomyField],
                 provider: EmbeddingProvider | None) -> pa.Table:
    dims = provider.dimensions if provider else 0
    schema = _chunk_schema(taxonomy, dims)
    columns: dict[str, list] = {name: [] for name in schema.names if name != "vector"}
    for result in fresh:
        total = len(result.chunks)
        for chunk in result.chunks:
            columns["chunk_id"].append(chunk.chunk_id)
            columns["filepath"].append(chunk.filepath)
            columns["title"].append(result.title)
            columns["heading"].append(chunk.heading)
            columns["heading_level"].append(chunk.heading_level)
            columns["breadcrumb"].append(chunk.breadcrumb)
            columns["content"].append(chunk.content)
            columns["ident"].append(chunk.ident)
            columns["chunk_index"].append(chunk.chunk_index)
            columns["total_chunks"].append(total)
            columns["start_line"].append(chunk.start_line)
            columns["end_line"].append(chunk.end_line)
            columns["file_key"].append(result.key)
            for key in taxonomy:
                columns[taxonomy_column(key)].append(result.config.metadata.get(key) if result.config else None)
    arrays = [pa.array(columns[name], type=schema.field(name).type) for name in schema.names if name != "vector"]
    if dims:
        flat = vectors if vectors is not None else np.zeros((0, dims), np.float32)
        arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat.astype(np.float32).ravel(), pa.float32()), dims))
    table = pa.Table.from_arrays(arrays, schema=schema)
    reused = [r.relpath for r in results if r.reused]
    if previous is not None and reused:
        table = pa.concat_tables([previous.rows_for(reused, schema), table])
    return table


DOCUMENT_SCHEMA = pa.schema([
    pa.field("filepath", pa.string()), pa.field("title", pa.string()), pa.field("content", pa.string()),
    pa.field("size", pa.int64()), pa.field("chunk_count", pa.int32()), pa.field("outline", pa.string()),
    pa.field("file_key", pa.string()), pa.field("findings", pa.string()),
])


def _document_table(results: list[FileResult], previous: _PreviousBuild | None) -> pa.Table:
    rows = []
    for result in results:
        if result.reused:
            rows.append(previous.document(result.relpath))
            continue
        rows.append({
            "filepath": result.relpath, "title": result.title, "content": result.content,
            "size": len(result.content), "chunk_count": len(result.chunks),
            "outline": json.dumps([[e.level, e.text, e.line] for e in result.outline], ensure_ascii=False),
            "file_key": result.key,
            "findings": json.dumps([f.as_dict() for f in result.findings], ensure_ascii=False),
        })
    return pa.Table.from_pylist(rows, schema=DOCUMENT_SCHEMA)


def _create_indexes(chunks, documents, taxonomy: dict[str, TaxonomyField], progress: Progress,
                    cancelled: Callable[[], bool]) -> None:
    steps = [
        lambda: chunks.create_index("heading", config=FTS(with_position=False)),
        lambda: chunks.create_index("content", config=FTS(with_position=True)),
        lambda: chunks.create_index("ident", config=FTS(base_tokenizer="whitespace", stem=False,
                                                        remove_stop_words=False, max_token_length=80,
                                                        with_position=False)),
        lambda: chunks.create_index("chunk_id", config=BTree()),
        lambda: chunks.create_index("filepath", config=BTree()),
        lambda: documents.create_index("filepath", config=BTree()),
    ]
    if chunks.count_rows():
        columns = [taxonomy_column(key) for key in taxonomy]
        steps += [(lambda col=col: chunks.create_index(col, config=Bitmap())) for col in columns]
    else:
        steps = steps[3:]
    for n, step in enumerate(steps):
        if cancelled():
            raise BuildCancelled("build was cancelled while creating indexes")
        step()
        progress("index", n + 1, len(steps))


class _PreviousBuild:
    """Rows of the last complete build, looked up by file for reuse."""

    def __init__(self, directory: Path):
        from .metadata import read_metadata

        self.metadata = read_metadata(directory)
        self.embedding = self.metadata.embedding
        db = lancedb.connect(directory / "lancedb")
        self.chunks = db.open_table(CHUNKS_TABLE).to_arrow()
        self.documents = {row["filepath"]: row for row in db.open_table(DOCUMENTS_TABLE).to_arrow().to_pylist()}
        self.keys = {path: row["file_key"] for path, row in self.documents.items()}
        order = np.argsort(np.array(self.chunks["filepath"].to_pylist(), dtype=object), kind="stable")
        self._by_file: dict[str, np.ndarray] = {}
        paths = self.chunks["filepath"].to_pylist()
        for idx in order:
            self._by_file.setdefault(paths[idx], []).append(idx)

    def reuse(self, relpath: str, key: str) -> FileResult | None:
        if self.keys.get(relpath) != key:
            return None
        doc = self.documents[relpath]
        return FileResult(relpath, key, doc["title"], doc["content"], None, reused=True,
                          outline=[OutlineEntry(*e) for e in json.loads(doc["outline"])],
                          findings=[Finding(**f) for f in json.loads(doc["findings"] or "[]")])

    def rows_for(self, relpaths: list[str], schema: pa.Schema) -> pa.Table:
        """The previous rows of these files, conformed to the new schema (taxonomy keys may differ)."""
        rows = [i for path in relpaths for i in self._by_file.get(path, [])]
        taken = self.chunks.take(pa.array(rows, pa.int64()))
        arrays = [taken[f.name].cast(f.type) if f.name in taken.column_names else pa.nulls(taken.num_rows, f.type)
                  for f in schema]
        return pa.Table.from_arrays(arrays, schema=schema)

    def document(self, relpath: str) -> dict:
        return self.documents[relpath]


def _previous_rows(directory: Path | None) -> _PreviousBuild | None:
    if directory is None or not Path(directory).exists():
        return None
    try:
        return _PreviousBuild(Path(directory))
    except Exception as exc:  # a broken previous build only costs us the reuse
        log.warning("cannot reuse previous build at %s: %s", directory, exc)
        return None
