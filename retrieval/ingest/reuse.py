"""Reuse of the previous build: which files it already holds unchanged, read from its files.json
(written here too) without opening a table, and its rows for the files reused."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import posixpath
from collections.abc import Callable

import pyarrow as pa

from retrieval import storage
from retrieval.format.layout import (
    DOCUMENT_SCHEMA,
    TAXONOMY_PREFIX,
    chunk_schema,
    in_files,
    open_tables,
    schema_fingerprint,
)
from retrieval.format.metadata import read_metadata
from retrieval.storage import Location

from . import sitegen
from .batches import file_record
from .folder import Known
from .manifest import MANIFEST_NAME
from .pages import FileResult, OutlineEntry
from .scan import CorpusScan, Finding
from .seen import SourceFiles
from .validate import process_files

log = logging.getLogger("retrieval.ingest")


FILES_JSON = "files.json"  # per-file records of a build, beside metadata.json


def file_keys(scan: CorpusScan, previous: PreviousBuild | None, changed: frozenset[str] | None) -> dict[str, str]:
    """Each file's key. With a diff from the previous build's commit, a file the diff does not name
    keeps its recorded key unhashed; a changed manifest governs files the diff does not name, so
    then, as without a diff, every file's content decides."""
    if previous is not None and changed is None and isinstance(scan.files, SourceFiles) \
            and previous.context == scan_context(scan):
        keys = _unread_keys(scan, previous)
        if keys is not None:
            return keys
    if (previous is None or changed is None or any(posixpath.basename(p) == MANIFEST_NAME for p in changed)
            or scan.any_included(changed)):  # a page that includes a changed one is not in the diff either
        return {relpath: scan.file_key(relpath) for relpath in sorted(scan.files)}
    recorded = previous.files
    return {relpath: recorded[relpath]["file_key"] if relpath in recorded and relpath not in changed
            else scan.file_key(relpath) for relpath in sorted(scan.files)}


def _unread_keys(scan: CorpusScan, previous: PreviousBuild) -> dict[str, str] | None:
    """A folder's keys where a page whose stat is the one recorded when its key was made keeps the key
    unread (seen.py). Under a site generator a page's key holds the pages it includes: it is kept only when
    they are unchanged too, as recorded; which pages an include names depends on the pages there are, so
    with another set of pages (or none recorded) None: every page is keyed from its bytes."""
    files, recorded = scan.files, previous.files
    if scan.includes_files:  # read whole already; an included file's edit must show in its includers' keys
        return None
    includes: dict[str, list[str]] = {}
    if scan.generator:
        if previous.includes is None or previous.pages != pages_digest(scan):
            return None
        includes = previous.includes
    keys = {}
    for relpath in sorted(files):
        named = includes.get(relpath, [])
        if relpath in recorded and files.unchanged(relpath) and all(files.unchanged(p) for p in named):
            keys[relpath] = recorded[relpath]["file_key"]
            if scan.generator:
                scan.known_includes(relpath, named)
        else:
            keys[relpath] = scan.file_key(relpath)
    return keys


def pages_digest(scan: CorpusScan) -> str:
    """The pages a scan holds, as one hash: what the includes they name were resolved among."""
    return hashlib.sha256("\0".join(sorted(scan.files)).encode()).hexdigest()[:32]


def scan_context(scan: CorpusScan) -> str:
    """What, besides a page's own bytes, its key holds when no site generator reads it: the manifests'
    texts (and the generator and cleaners, for an .mdx page). Another context, and every page is keyed
    again from its bytes."""
    digest = hashlib.sha256(json.dumps([sorted(scan.manifest_texts.items()), scan.generator,
                                        sitegen.CLEANER_VERSION]).encode())
    return digest.hexdigest()[:32]


def write_file_records(directory: Location, results: list[FileResult], dims: int,
                       previous: PreviousBuild | None = None, scan: CorpusScan | None = None) -> None:
    """files.json: what the next build compares against, readable without opening the tables. A reused
    file's record is the previous build's, as read, rather than encoded again. With the `scan` of a
    folder, what it saw of each file (seen.py), for the next build to read only the files changed."""
    recorded = previous.files if previous is not None and previous.schema is not None else {}
    payload = {"schema": schema_fingerprint(dims),
               "files": [recorded[r.relpath] if r.reused and r.relpath in recorded else file_record(r)
                         for r in results]}
    if scan is not None and scan.seen:
        payload["sources"] = {"context": scan_context(scan), "stats": scan.seen,
                              "signatures_version": sitegen.SIGNATURES_VERSION, "signatures": scan.signatures}
        includes = scan.all_includes() if scan.generator else None
        if includes is not None:  # every page's: one not known would be taken for none
            payload["sources"].update(pages=pages_digest(scan), includes=includes)
    storage.write_bytes(storage.join(directory, FILES_JSON), json.dumps(payload, ensure_ascii=False).encode())


class PreviousBuild:
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
        sources = records.get("sources") if self.schema is not None else None
        self.context = sources["context"] if sources else None
        self.pages = sources.get("pages") if sources else None
        self.includes: dict[str, list[str]] | None = sources.get("includes") if sources else None
        self.known = Known(sources["stats"], sources["signatures"] if sources["signatures_version"]
                           == sitegen.SIGNATURES_VERSION else {}) if sources else None

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
            return self.schema == schema_fingerprint(dims)
        base = chunk_schema([], dims)
        chunk_fields = [f for f in self.chunks.schema if not f.name.startswith(TAXONOMY_PREFIX)]
        return chunk_fields == list(base) and self.documents.schema == DOCUMENT_SCHEMA

    def reusable(self, keys: dict[str, str]) -> dict[str, FileResult]:
        out = {}
        for relpath, key in keys.items():
            row = self.files.get(relpath)
            if row is not None and row["file_key"] == key:
                out[relpath] = ReusedResult(row)
        return out

    def stale(self, keys: dict[str, str]) -> list[str]:
        return sorted(path for path, row in self.files.items() if keys.get(path) != row["file_key"])

    def chunk_rows(self, relpaths: list[str]) -> pa.Table:
        return self.chunks.search().where(in_files(relpaths)).limit(None).to_arrow()

    def document_rows(self, relpaths: list[str]) -> pa.Table:
        return self.documents.search().where(in_files(relpaths)).limit(None).to_arrow()


class ReusedResult(FileResult):
    """A reused file's result, its outline, findings and metadata decoded from its record only when
    read: a rebuild after a one-page change decoded them for every page (0.4 s at 11,000 pages)."""

    def __init__(self, row: dict):  # noqa: D107 - the dataclass fields set directly, the decoded ones lazily
        self.relpath, self.key, self.title, self.content, self.config = (
            row["filepath"], row["file_key"], row["title"], "", None)
        self.chunks, self.reused, self.chunk_count, self.links = [], True, row["chunk_count"], []
        self._row = row
        self._decoded: dict[str, object] = {}

    @property
    def outline(self) -> list[OutlineEntry]:
        found = self._decoded.get("outline")
        if found is None:
            found = self._decoded["outline"] = [OutlineEntry(*e) for e in json.loads(self._row["outline"])]
        return found

    @outline.setter
    def outline(self, value: list[OutlineEntry]) -> None:
        self._decoded["outline"] = value

    @property
    def findings(self) -> list[Finding]:
        found = self._decoded.get("findings")
        if found is None:
            text = self._row["findings"]
            found = self._decoded["findings"] = (
                [Finding(**f) for f in json.loads(text)] if text and text != "[]" else [])
        return found

    @findings.setter
    def findings(self, value: list[Finding]) -> None:
        self._decoded["findings"] = value

    @property
    def metadata(self) -> dict[str, str]:
        found = self._decoded.get("metadata")
        if found is None:
            found = self._decoded["metadata"] = dict(_metadata(self._row["metadata"]))
        return found

    @metadata.setter
    def metadata(self, value: dict[str, str]) -> None:
        self._decoded["metadata"] = value


@functools.lru_cache(maxsize=4096)
def _metadata(text: str) -> dict[str, str]:
    """A record's metadata decoded, once per distinct text: most pages of a corpus share a few."""
    return json.loads(text)


def open_previous(directory: Location | None, spec: dict | None, dims: int) -> PreviousBuild | None:
    if directory is None or not storage.exists(directory):
        return None
    try:
        previous = PreviousBuild(storage.as_location(directory))
    except Exception as exc:  # a broken previous build only costs us the reuse
        log.warning("cannot reuse previous build at %s: %s", directory, exc)
        return None
    if previous.metadata.embedding != spec:
        return None  # vectors from another model cannot be reused
    if not previous.compatible(dims):
        log.info("previous build at %s has another table schema; parsing every file", directory)
        return None
    return previous


def validate_changed(scan: CorpusScan, previous: Location | None, *, workers: int,
                     progress: Callable[[int, int], None] | None = None) -> list[FileResult]:
    """Every file's result in path order, as `validate_corpus` gives them, but a file unchanged since the
    build at `previous` keeps the findings that build recorded (its files.json) instead of being parsed
    again: validating after a one-page change parses one page. Reused results carry no chunks, only their
    `chunk_count`. Without a previous build, or one older than files.json, every file is parsed."""
    recorded = None
    if previous is not None and storage.exists(storage.join(previous, FILES_JSON)):
        try:
            recorded = PreviousBuild(storage.as_location(previous))
        except Exception as exc:  # a broken previous build only costs us the reuse
            log.warning("cannot reuse the findings of the build at %s: %s", previous, exc)
    keys = file_keys(scan, recorded, None)
    reused = recorded.reusable(keys) if recorded else {}
    fresh = process_files(scan, [(p, k) for p, k in keys.items() if p not in reused], workers=workers)
    results: list[FileResult] = []
    for relpath in keys:
        results.append(reused.get(relpath) or next(fresh))
        if progress:
            progress(len(results), len(keys))
    return results
