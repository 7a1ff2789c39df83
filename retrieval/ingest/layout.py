"""How a build lays out its LanceDB tables: the names and column conventions that the build writes
and the search engine reads. Both sides import them from here, so neither imports the other."""

CHUNKS_TABLE = "chunks"
DOCUMENTS_TABLE = "documents"
TAXONOMY_PREFIX = "m_"


def taxonomy_column(key: str) -> str:
    return f"{TAXONOMY_PREFIX}{key}"


def sql_string(value: str) -> str:
    """A SQL string literal: single quotes doubled, so a value can never end the literal."""
    return "'" + value.replace("'", "''") + "'"
