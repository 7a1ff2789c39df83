"""How a build lays out its tables (written through LanceDB, read as Lance datasets): the names, schemas
and column conventions that the build writes and the search engine reads. Both sides import them from
here, so neither imports the other."""

from __future__ import annotations

import hashlib

import pyarrow as pa

from retrieval import storage

CHUNKS_TABLE = "chunks"
DOCUMENTS_TABLE = "documents"
TAXONOMY_PREFIX = "m_"
FULL_TEXT_INDEX_TYPES = frozenset({"Inverted", "FTS"})  # as Lance names LanceDB's full-text index


def taxonomy_column(key: str) -> str:
    return f"{TAXONOMY_PREFIX}{key}"


def sql_string(value: str) -> str:
    """A SQL string literal: single quotes doubled, so a value can never end the literal."""
    return "'" + value.replace("'", "''") + "'"


def open_tables(directory: storage.Location) -> tuple:
    """(chunks, documents) of the build at `directory` as LanceDB tables: what a build writes and indexes
    through. Reading a finished build needs only `table_dataset`."""
    db = storage.connect(storage.join(directory, "lancedb"))
    return db.open_table(CHUNKS_TABLE), db.open_table(DOCUMENTS_TABLE)


def table_dataset(directory: storage.Location, table: str):
    """One of the build's tables as a Lance dataset (LanceDB keeps each table as `lancedb/<table>.lance`):
    how serving, a patch and the mapped files read a finished build, without LanceDB, whose import alone
    (its REST namespace models) costs more than a one-page patch and whose library a serving worker
    would otherwise map (docs/BENCHMARKS.md)."""
    return storage.dataset(storage.join(directory, "lancedb", f"{table}.lance"))


def open_datasets(directory: storage.Location) -> tuple:
    """(chunks, documents) of the build at `directory` as Lance datasets."""
    return table_dataset(directory, CHUNKS_TABLE), table_dataset(directory, DOCUMENTS_TABLE)


def full_text_columns(dataset) -> frozenset[str]:
    """The columns of a table (a Lance dataset) that have a full-text index."""
    return frozenset(name for index in dataset.describe_indices() if index.index_type in FULL_TEXT_INDEX_TYPES
                     for name in index.field_names)


BASE_CHUNK_SCHEMA = pa.schema([
    pa.field("chunk_id", pa.string()), pa.field("filepath", pa.string()), pa.field("title", pa.string()),
    pa.field("heading", pa.string()), pa.field("heading_level", pa.int32()),
    pa.field("breadcrumb", pa.string()), pa.field("content", pa.string()), pa.field("ident", pa.string()),
    pa.field("chunk_index", pa.int32()), pa.field("total_chunks", pa.int32()),
    pa.field("start_line", pa.int32()), pa.field("end_line", pa.int32()), pa.field("file_key", pa.string()),
    pa.field("link_share", pa.float32()),
    pa.field("keywords", pa.string()),  # the page's front matter keywords (retrieval/ingest/keywords.py)
])
DOCUMENT_SCHEMA = pa.schema([
    pa.field("filepath", pa.string()), pa.field("title", pa.string()), pa.field("content", pa.string()),
    pa.field("size", pa.int64()), pa.field("chunk_count", pa.int32()), pa.field("outline", pa.string()),
    pa.field("file_key", pa.string()), pa.field("findings", pa.string()), pa.field("metadata", pa.string()),
    pa.field("links", pa.list_(pa.string())),  # where the page links to, a ranking prior (retrieval/ingest/links.py)
])


def chunk_schema(keys: list[str], dimensions: int) -> pa.Schema:
    fields = [*BASE_CHUNK_SCHEMA, *(pa.field(taxonomy_column(key), pa.string()) for key in keys)]
    if dimensions:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dimensions)))
    return pa.schema(fields)


def schema_fingerprint(dims: int) -> str:
    return hashlib.sha256(f"{chunk_schema([], dims)}\n{DOCUMENT_SCHEMA}".encode()).hexdigest()[:16]


def in_files(relpaths: list[str]) -> str:
    """A WHERE clause naming these files, their paths quoted as SQL strings."""
    return f"filepath IN ({', '.join(sql_string(p) for p in relpaths)})"
