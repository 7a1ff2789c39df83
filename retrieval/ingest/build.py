"""Build one index directory from a corpus: validate, chunk, embed, write LanceDB tables.

A build writes into `<out_dir>.partial` and renames it to `out_dir` only when every table,
index and metadata.json is in place, so a reader never sees a half-written build, and a
failed or interrupted build leaves nothing that looks complete. On an object store (no
rename) the build is written in place and metadata.json, written last, marks it complete;
contents.json, written just before it, lists every file with its size for the hosts that
copy the build to a local cache. A page with an error is left out of the build with its
findings, and the rest is built; under `strict` nothing is embedded or written before the whole
corpus has validated, so a corpus with errors costs no API calls.

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
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from retrieval import storage
from retrieval.corpus_summary import summarize
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.errors import BuildCancelled, ValidationFailed
from retrieval.format.layout import CHUNKS_TABLE, open_tables, table_dataset
from retrieval.format.mapped import MAPPED_DIR, has_mapped, write_mapped_from_tables
from retrieval.format.metadata import AutoInclude, BuildMetadata, TaxonomyField, write_metadata
from retrieval.storage import Location
from retrieval.storage.contents import write_contents

from .batches import parse_files
from .carryover import carry_over
from .embed import embed_batches
from .folder import scan_corpus
from .indexes import create_indexes, index_patched
from .pages import FileResult
from .progress import Cancelled, Progress
from .reuse import file_keys, open_previous, write_file_records
from .scan import DEFAULT_MAX_FILE_BYTES, CorpusScan, Finding
from .tables import copy_part, patch_tables, write_tables
from .validate import left_out_stats

PATCH_MAX_TOUCHED = 0.2  # above this fraction of files added, changed or removed, rewriting beats patching


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
    strict: bool = False  # any error fails the build; otherwise a page with an error is left out of it


@dataclass
class BuildResult:
    path: Location
    metadata: BuildMetadata
    findings: list[Finding]
    stats: dict
    timings: dict


def _noop(stage: str, done: int, total: int) -> None:
    return None


def build_index(request: BuildRequest, progress: Progress | None = None,
                cancelled: Cancelled | None = None) -> BuildResult:
    progress = progress or _noop
    cancelled = cancelled or (lambda: False)
    timings: dict[str, float] = {}
    started = time.perf_counter()

    def mark(stage: str) -> None:
        if cancelled():
            raise BuildCancelled(f"build {request.build_id} was cancelled during {stage}")
        timings[stage] = round(time.perf_counter() - started - sum(timings.values()), 3)

    storage.require_bucket(request.out_dir)
    provider = request.provider
    dims = provider.dimensions if provider else 0
    spec = provider.spec.to_dict() if provider and dims else None
    previous = None if request.full else open_previous(request.previous_dir, spec, dims)
    scan = request.scan or scan_corpus(request.source_dir, max_file_bytes=request.max_file_bytes,
                                       known=previous.known if previous else None)
    keys = file_keys(scan, previous, request.changed)
    reused = previous.reusable(keys) if previous else {}
    stale = previous.stale(keys) if previous else []  # files whose previous rows must go
    touched = len(set(keys) - set(reused) | set(stale))
    patch = previous is not None and touched <= PATCH_MAX_TOUCHED * max(len(keys), 1)
    results, batches, left_out = parse_files(scan, keys, reused, dims > 0, request.workers, progress, cancelled,
                                             strict=request.strict)
    findings = list(scan.findings) + [f for r in results + left_out for f in r.findings]
    errors = [f for f in findings if f.severity == "error"]
    if errors and (request.strict or not results):
        why = "fix them before building" if request.strict else "no page without errors is left to build"
        raise ValidationFailed(f"validation found {len(errors)} error(s); {why}", findings)
    mark("scan_and_chunk")

    embedded = embed_batches(provider, batches, request.cache_dir, request.full, progress, cancelled)
    mark("embed")

    taxonomy = _taxonomy(scan, results)
    partial = _staging(request.out_dir)
    try:
        unchanged = patch and touched == 0 and set(taxonomy) <= set(previous.metadata.taxonomy)
        patched = None
        if unchanged:  # the previous tables as they are: hard links, no table opened
            copy_part(previous.directory, partial, "lancedb")
        elif patch:
            patched = patch_tables(partial, previous, stale, batches, scan.files, taxonomy, progress, cancelled,
                                   scan.included)
            chunks = patched.chunks
        else:
            chunks, documents = write_tables(partial, previous, results, batches, scan.files, taxonomy, dims,
                                             progress, cancelled, scan.included)
        mark("write")
        if patched is not None:
            if not index_patched(patched.chunks, patched.documents, taxonomy, progress, cancelled):
                create_indexes(*open_tables(partial), taxonomy, progress, cancelled)
                chunks = table_dataset(partial, CHUNKS_TABLE)
        elif not unchanged:
            create_indexes(chunks, documents, taxonomy, progress, cancelled)
        mark("index")
        carried = unchanged and has_mapped(previous.directory)
        if carried:
            copy_part(previous.directory, partial, MAPPED_DIR)
        else:
            carried = patched is not None and carry_over(partial, previous.directory, stale, list(taxonomy), dims,
                                                         patched.fragments, progress)
        if not carried:
            write_mapped_from_tables(partial, list(taxonomy), dims, progress)
        mark("mapped")
        write_file_records(partial, results, dims, previous, scan)
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
            **left_out_stats(scan, left_out, findings),
            "patched": patch,
            "mapped_carried_over": carried,  # the mapped files and lexicon patched, not read from every row
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
