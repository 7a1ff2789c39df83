"""Reading chunks and documents of a build: by chunk ID with context, whole files, listings,
outlines and sections. Everything a `get_doc`-style tool needs besides search.

Chunks are read from the chunks table (exact markdown source slices, positions 0-based in
storage, 1-based in every output); documents, outlines and sections from the documents table,
whose outline column comes from the markdown parser, so headings inside fenced code are
never mistaken for sections (the documents tool contract's line regex would).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from retrieval.errors import InvalidArgument, InvalidChunkId, NotFound
from retrieval.format.layout import sql_string

from .index import Index
from .reading import reads_index

MAX_CONTEXT = 5
MAX_ID_LENGTH = 2048
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CHUNK_COLUMNS = ["chunk_id", "filepath", "title", "heading", "heading_level", "breadcrumb", "content",
                  "chunk_index", "total_chunks", "start_line", "end_line"]
ID_FORMAT = ("Expected '{filepath}' or '{filepath}#{heading-path}', e.g. 'guides/retries.md#backoff-strategy', "
             "exactly as returned by search_docs.")


@dataclass(frozen=True)
class ChunkRecord:
    chunk_id: str
    filepath: str
    title: str
    heading: str
    heading_level: int
    breadcrumb: str
    content: str
    chunk_index: int  # 1-based position in the file
    total_chunks: int
    start_line: int
    end_line: int
    metadata: dict[str, str]


@dataclass(frozen=True)
class ChunkWindow:
    """A target chunk with up to N neighbours on each side, all from the same file, in file order."""

    target: ChunkRecord
    before: list[ChunkRecord]
    after: list[ChunkRecord]

    @property
    def chunks(self) -> list[ChunkRecord]:
        return [*self.before, self.target, *self.after]


@dataclass(frozen=True)
class Document:
    filepath: str
    title: str
    content: str
    size: int  # characters
    chunk_count: int


@dataclass(frozen=True)
class DocumentSummary:
    filepath: str
    title: str
    size: int
    chunk_count: int


@dataclass(frozen=True)
class DocumentPage:
    documents: list[DocumentSummary]
    total: int
    offset: int
    limit: int

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.documents) < self.total


@dataclass(frozen=True)
class OutlineEntry:
    level: int
    text: str
    line: int  # 1-based line of the heading in the document


@dataclass(frozen=True)
class Outline:
    filepath: str
    title: str
    entries: list[OutlineEntry]


@dataclass(frozen=True)
class Section:
    filepath: str
    heading: str  # the matched heading's text
    level: int
    content: str
    start_line: int  # 1-based, the heading line
    end_line: int  # 1-based, inclusive


# --- validation -----------------------------------------------------------------------------

def _path_problem(path: str) -> str | None:
    if not path:
        return "it has no file path"
    if "\\" in path:
        return "file paths use forward slashes"
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        return "file paths are relative to the docs root, without a leading '/'"
    if any(seg in ("", ".", "..") for seg in path.split("/")):
        return "file paths must not contain '..', '.' or empty segments"
    return None


def check_chunk_id(chunk_id: object) -> str:
    """Raises InvalidChunkId unless `chunk_id` has the shape `{filepath}` or `{filepath}#{heading-path}`."""
    if not isinstance(chunk_id, str) or not chunk_id.strip():
        reason = "it is empty"
    elif chunk_id != chunk_id.strip():
        reason = "it has leading or trailing whitespace"
    elif len(chunk_id) > MAX_ID_LENGTH:
        reason = f"it is longer than {MAX_ID_LENGTH} characters"
    elif _CONTROL.search(chunk_id):
        reason = "it contains control characters or line breaks"
    else:
        path, sep, fragment = chunk_id.partition("#")
        reason = _path_problem(path)
        if reason is None and sep and not fragment:
            reason = "the heading path after '#' is empty"
        elif reason is None and re.search(r"\s", fragment):
            reason = "heading paths are slugs without spaces"
    if reason is not None:
        shown = chunk_id if isinstance(chunk_id, str) else repr(chunk_id)
        raise InvalidChunkId(f"Invalid chunk ID '{shown}': {reason}. {ID_FORMAT}")
    return chunk_id


def check_document_path(path: object) -> str:
    reason = _path_problem(path) if isinstance(path, str) else "it is not a string"
    if reason is None and (path != path.strip() or _CONTROL.search(path)):
        reason = "it has surrounding whitespace or control characters"
    if reason is not None:
        raise InvalidArgument(f"Invalid document path {path!r}: {reason}. Use a path as listed by list_documents, "
                              "e.g. 'guides/retries.md'.")
    return path


def check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise InvalidArgument(f"{name} must be an integer {bound}, got {value!r}")
    return value


# --- chunks ---------------------------------------------------------------------------------

@reads_index
def _select(index: Index, where: str, columns: list[str]) -> list[dict]:
    return index.chunks.to_table(columns=columns, filter=where).to_pylist()


def _record(index: Index, row: dict) -> ChunkRecord:
    metadata = {key: row[index.column(key)] for key in index.metadata.taxonomy
                if row.get(index.column(key)) is not None}
    return ChunkRecord(
        chunk_id=row["chunk_id"], filepath=row["filepath"], title=row["title"] or "", heading=row["heading"] or "",
        heading_level=int(row["heading_level"]), breadcrumb=row["breadcrumb"] or "", content=row["content"],
        chunk_index=int(row["chunk_index"]) + 1, total_chunks=int(row["total_chunks"]),
        start_line=int(row["start_line"]), end_line=int(row["end_line"]), metadata=metadata,
    )


def get_chunk(index: Index, chunk_id: str, context: int = 0) -> ChunkWindow:
    """The chunk and up to `context` chunks before and after it in the same file."""
    check_chunk_id(chunk_id)
    context = check_int("context", context, 0, MAX_CONTEXT)
    columns = [*_CHUNK_COLUMNS, *index.taxonomy_columns]
    found = _select(index, f"chunk_id = {sql_string(chunk_id)}", columns)
    if not found:
        raise NotFound(f"Chunk ID '{chunk_id}' not found. Use search_docs to discover valid chunk IDs.")
    target = _record(index, found[0])
    if context == 0:
        return ChunkWindow(target, [], [])
    position = target.chunk_index - 1
    where = (f"filepath = {sql_string(target.filepath)} AND chunk_index >= {position - context} "
             f"AND chunk_index <= {position + context}")
    window = sorted((_record(index, row) for row in _select(index, where, columns)), key=lambda c: c.chunk_index)
    before = [c for c in window if c.chunk_index < target.chunk_index]
    after = [c for c in window if c.chunk_index > target.chunk_index]
    return ChunkWindow(target, before, after)


def _delimiter(chunk: ChunkRecord, label: str) -> str:
    return f"--- Chunk: {chunk.chunk_id} (Chunk {chunk.chunk_index} of {chunk.total_chunks}) ({label}) ---"


def render_chunk_window(window: ChunkWindow) -> str:
    """The docs tool contract's `get_doc` text: `--- Chunk: {id} (Chunk {n} of {m}) (Target|Context: {+N|-N}) ---`,
    then the chunk's markdown; blocks separated by one blank line, exactly one `(Target)`."""
    blocks = []
    for chunk in window.chunks:
        offset = chunk.chunk_index - window.target.chunk_index
        label = "Target" if offset == 0 else f"Context: {offset:+d}"
        blocks.append(f"{_delimiter(chunk, label)}\n{chunk.content}")
    return "\n\n".join(blocks)


# --- documents ------------------------------------------------------------------------------

@reads_index
def _document_row(index: Index, path: str, columns: list[str]) -> dict:
    check_document_path(path)
    rows = index.documents.to_table(columns=columns, filter=f"filepath = {sql_string(path)}", limit=1).to_pylist()
    if not rows:
        raise NotFound(f"Document '{path}' not found. Use list_documents to see the available documents.")
    return rows[0]


def get_document(index: Index, path: str) -> Document:
    row = _document_row(index, path, ["filepath", "title", "content", "size", "chunk_count"])
    return Document(row["filepath"], row["title"] or "", row["content"], int(row["size"]), int(row["chunk_count"]))


@reads_index
def list_documents(index: Index, limit: int = 100, offset: int = 0) -> DocumentPage:
    """Documents ordered by path, `limit` from `offset`, with the total for paging."""
    limit = check_int("limit", limit, 1, 1000)
    offset = check_int("offset", offset, 0)
    rows = index.documents.to_table(columns=["filepath", "title", "size", "chunk_count"])
    rows = sorted(rows.to_pylist(), key=lambda r: r["filepath"])
    page = [DocumentSummary(r["filepath"], r["title"] or "", int(r["size"]), int(r["chunk_count"]))
            for r in rows[offset: offset + limit]]
    return DocumentPage(page, len(rows), offset, limit)


@reads_index
def all_documents(index: Index) -> list[DocumentSummary]:
    """Every document of the build, ordered by path: what a listing of the whole corpus pages through."""
    rows = index.documents.to_table(columns=["filepath", "title", "size", "chunk_count"])
    return [DocumentSummary(r["filepath"], r["title"] or "", int(r["size"]), int(r["chunk_count"]))
            for r in sorted(rows.to_pylist(), key=lambda r: r["filepath"])]


@reads_index
def read_documents(index: Index, paths: list[str]) -> list[Document]:
    """The documents at `paths` (unknown ones left out), in the order given: one query for a batch."""
    if not paths:
        return []
    where = "filepath IN (" + ", ".join(sql_string(p) for p in paths) + ")"
    rows = index.documents.to_table(columns=["filepath", "title", "content", "size", "chunk_count"],
                                    filter=where).to_pylist()
    found = {r["filepath"]: r for r in rows}
    return [Document(r["filepath"], r["title"] or "", r["content"], int(r["size"]), int(r["chunk_count"]))
            for r in (found.get(p) for p in paths) if r is not None]


def _outline_entries(row: dict) -> list[OutlineEntry]:
    return [OutlineEntry(int(level), str(text), int(line)) for level, text, line in json.loads(row["outline"] or "[]")]


def get_outline(index: Index, path: str, max_depth: int = 3) -> Outline:
    """Headings of the document down to `max_depth` (1-6), with their 1-based line numbers."""
    max_depth = check_int("max_depth", max_depth, 1, 6)
    row = _document_row(index, path, ["filepath", "title", "outline"])
    entries = [e for e in _outline_entries(row) if e.level <= max_depth]
    return Outline(row["filepath"], row["title"] or "", entries)


def get_section(index: Index, path: str, heading: str, include_subsections: bool = True) -> Section:
    """The section under the first heading matching `heading`: an exact case-insensitive match wins,
    else the first heading containing it (docs/contracts/documents-tools.md). It runs to the next heading of the same or a
    higher level, or to the next heading of any level without subsections."""
    if not isinstance(heading, str) or not heading.strip():
        raise InvalidArgument("section heading text must be a non-empty string, e.g. 'Backoff strategy'")
    row = _document_row(index, path, ["filepath", "content", "outline"])
    entries = _outline_entries(row)
    wanted = heading.strip().casefold()
    matches = [e for e in entries if e.text.casefold() == wanted] or \
              [e for e in entries if wanted in e.text.casefold()]
    if not matches:
        listed = ", ".join(repr(e.text) for e in entries[:20]) or "(none)"
        raise NotFound(f"Section '{heading}' not found in '{path}'. Its headings: {listed}. "
                       "Use get_outline to list them.")
    match = matches[0]
    lines = row["content"].split("\n")
    end = len(lines)
    for entry in entries:
        if entry.line > match.line and (not include_subsections or entry.level <= match.level):
            end = entry.line - 1
            break
    while end > match.line and not lines[end - 1].strip():
        end -= 1
    content = "\n".join(lines[match.line - 1: end])
    return Section(row["filepath"], match.text, match.level, content, match.line, end)
