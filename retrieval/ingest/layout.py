"""How a build lays out its LanceDB tables: the names and column conventions that the build writes
and the search engine reads. Both sides import them from here, so neither imports the other."""

from __future__ import annotations

from retrieval import storage

CHUNKS_TABLE = "chunks"
DOCUMENTS_TABLE = "documents"
TAXONOMY_PREFIX = "m_"


def taxonomy_column(key: str) -> str:
    return f"{TAXONOMY_PREFIX}{key}"


def sql_string(value: str) -> str:
    """A SQL string literal: single quotes doubled, so a value can never end the literal."""
    return "'" + value.replace("'", "''") + "'"


def open_tables(directory: storage.Location) -> tuple:
    """(chunks, documents) of the build at `directory`: the one place a build's tables are opened,
    so LanceDB loads only when something reads them."""
    db = storage.connect(storage.join(directory, "lancedb"))
    return db.open_table(CHUNKS_TABLE), db.open_table(DOCUMENTS_TABLE)
