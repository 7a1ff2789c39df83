"""A chunk store (the citeloom contract's project collection): caller-chunked, caller-embedded items in one LanceDB table.

Unlike a build, a store is written in place, batch by batch: `upsert` merges on the chunk ID
(`merge_insert("id")`), so sending a batch twice changes nothing. Readers open the table with
strong read consistency, so every worker sees every committed write without a restart.

Search: the vector leg is LanceDB's exact cosine search with the filter applied first (scores are
cosine similarities clipped to [0, 1]); the hybrid search adds a BM25 leg over the text and fuses
both rankings by reciprocal rank (`retrieval.search.fusion.fuse`, scores normalised to [0, 1]).

One store holds one project, so no query can reach another project's rows.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from retrieval import storage
from retrieval.errors import EmbeddingMismatch, IndexUnavailable, InvalidArgument
from retrieval.format.layout import sql_string
from retrieval.search.fusion import fuse
from retrieval.storage import Location

log = logging.getLogger("retrieval.chunkstore")

TABLE = "chunks"
HYBRID_DEPTH = 50  # candidates each leg contributes to the fusion
PAYLOAD_KEY_SCAN = 10_000  # inspect() reads the payload keys of at most this many chunks
ROW_COLUMNS = ("id", "text", "embed_model", "citekey", "doi", "url", "title", "source_path", "section",
               "section_path", "page_start", "page_end", "tags", "version", "payload")
# filter key (as a client writes it, flat or as the payload path) -> column
FILTER_COLUMNS = {
    "tags": "tags", "zotero.tags": "tags",
    "citekey": "citekey", "zotero.citekey": "citekey",
    "doi": "doi", "section": "section", "doc.section": "section",
    "source_path": "source_path", "source.path": "source_path",
    "version": "version", "embed_model": "embed_model",
}
LIST_COLUMNS = frozenset({"tags"})
INDEX_KINDS = {"BTree": "keyword", "Bitmap": "keyword", "LabelList": "keyword", "FTS": "fulltext",
               "INVERTED": "fulltext"}


def _schema(dimensions: int) -> pa.Schema:
    text = pa.string()
    return pa.schema([
        pa.field("id", text, nullable=False), pa.field("text", text), pa.field("embed_model", text),
        pa.field("citekey", text), pa.field("doi", text), pa.field("url", text), pa.field("title", text),
        pa.field("source_path", text), pa.field("section", text), pa.field("section_path", pa.list_(text)),
        pa.field("page_start", pa.int32()), pa.field("page_end", pa.int32()), pa.field("tags", pa.list_(text)),
        pa.field("version", text), pa.field("payload", text),
        pa.field("vector", pa.list_(pa.float32(), dimensions)),
    ])


# --- what a chunk carries ------------------------------------------------------------------------

def _get(payload: Mapping[str, Any], *paths: str) -> Any:
    """The first non-null value among dotted `paths` of the payload."""
    for path in paths:
        value: Any = payload
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None:
            return value
    return None


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value) else None


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        out = [str(v) for v in value if isinstance(v, str | int | float) and not isinstance(v, bool)]
        return out or None
    return None


def _page_span(value: Any) -> tuple[int, int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    if isinstance(value, list | tuple) and value and all(isinstance(v, int) and not isinstance(v, bool)
                                                         for v in value[:2]):
        return value[0], value[1] if len(value) > 1 else value[0]
    return None


@dataclass(frozen=True)
class Citation:
    """The citation fields of a chunk, read from its payload (the citeloom contract layout, flat keys as fallback)."""

    citekey: str | None = None
    doi: str | None = None
    url: str | None = None
    title: str | None = None
    source_path: str | None = None
    section: str | None = None
    section_path: list[str] | None = None
    page_span: tuple[int, int] | None = None
    tags: list[str] | None = None
    version: str | None = None

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Citation:
        return cls(
            citekey=_text(_get(payload, "zotero.citekey", "citekey")),
            doi=_text(_get(payload, "zotero.doi", "doi", "source.doi", "doc.doi")),
            url=_text(_get(payload, "zotero.url", "url", "source.url", "doc.url")),
            title=_text(_get(payload, "source.title", "zotero.title", "title")),
            source_path=_text(_get(payload, "source.path", "source_path", "path")),
            section=_text(_get(payload, "doc.section", "section")),
            section_path=_strings(_get(payload, "doc.section_path", "section_path")),
            page_span=_page_span(_get(payload, "doc.page_span", "page_span")),
            tags=_strings(_get(payload, "zotero.tags", "tags")),
            version=_text(_get(payload, "version")),
        )


@dataclass(frozen=True)
class StoredChunk:
    id: str
    text: str
    vector: np.ndarray  # float32, the store's dimensions
    embed_model: str
    payload: dict[str, Any]

    def row(self) -> dict[str, Any]:
        c = Citation.from_payload(self.payload)
        return {
            "id": self.id, "text": self.text, "embed_model": self.embed_model, "citekey": c.citekey,
            "doi": c.doi, "url": c.url, "title": c.title, "source_path": c.source_path, "section": c.section,
            "section_path": c.section_path, "page_start": c.page_span[0] if c.page_span else None,
            "page_end": c.page_span[1] if c.page_span else None, "tags": c.tags, "version": c.version,
            "payload": json.dumps(self.payload, ensure_ascii=False, sort_keys=True),
            "vector": self.vector.astype(np.float32).tolist(),
        }


def as_vector(values: Any, what: str) -> np.ndarray:
    """A finite float32 vector from a JSON array; InvalidArgument otherwise."""
    if not isinstance(values, list | tuple | np.ndarray) or len(values) == 0:
        raise InvalidArgument(f"{what} must be a non-empty array of numbers")
    try:
        vector = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{what} must be an array of numbers") from None
    if vector.ndim != 1 or not np.all(np.isfinite(vector)) or any(isinstance(v, bool) for v in values[:8]):
        raise InvalidArgument(f"{what} must be a flat array of finite numbers")
    return vector


# --- results ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StoreHit:
    id: str
    score: float  # [0, 1]
    text: str
    citation: Citation


@dataclass(frozen=True)
class UpsertResult:
    written: int
    removed: int = 0  # rows of another embedding model dropped by a migration


@dataclass(frozen=True)
class StoreInfo:
    size: int
    dimensions: int | None
    payload_keys: list[str]
    indexes: dict[str, list[str]]
    samples: list[dict[str, Any]] = field(default_factory=list)


def _hit(row: Mapping[str, Any], score: float) -> StoreHit:
    start, end = row.get("page_start"), row.get("page_end")
    citation = Citation(
        citekey=row.get("citekey"), doi=row.get("doi"), url=row.get("url"), title=row.get("title"),
        source_path=row.get("source_path"), section=row.get("section"),
        section_path=list(row["section_path"]) if row.get("section_path") is not None else None,
        page_span=(int(start), int(end if end is not None else start)) if start is not None else None,
        tags=list(row["tags"]) if row.get("tags") is not None else None, version=row.get("version"),
    )
    return StoreHit(row["id"], float(max(0.0, min(1.0, score))), row.get("text") or "", citation)


def plan_where(filters: Mapping[str, Any] | None) -> str | None:
    """A WHERE clause for `{"tags": ["architecture"], "citekey": "x"}`: keys from FILTER_COLUMNS, values a
    string or a list of strings (any of them matches); keys combine with AND. Values are quoted, never
    pasted."""
    if not filters:
        return None
    clauses = []
    for key, value in sorted(filters.items()):
        column = FILTER_COLUMNS.get(key)
        if column is None:
            allowed = ", ".join(sorted(FILTER_COLUMNS))
            raise InvalidArgument(f"unknown filter {key!r}; filter on one of: {allowed}")
        values = _strings(value)
        if not values:
            raise InvalidArgument(f"filter {key!r} needs a string or a list of strings, got {value!r}")
        literals = ", ".join(sql_string(v) for v in values)
        if column in LIST_COLUMNS:
            clauses.append(f"array_has_any(`{column}`, [{literals}])")
        else:
            clauses.append(f"`{column}` IN ({literals})")
    return " AND ".join(clauses)


# --- the store -------------------------------------------------------------------------------------

class ChunkStore:
    """The LanceDB table of one project under `path` (a directory, or an object-store prefix, of its own).

    Concurrent writers from several hosts are safe on an object store too: Lance commits a new
    table version with a conditional PUT and retries on conflict."""

    def __init__(self, path: Location):
        self.path = storage.as_location(path)

    def _db(self):
        return storage.connect(self.path, read_consistency_interval=timedelta(0))

    def _table(self):
        """The table, or None when nothing was stored yet; IndexUnavailable when it cannot be read."""
        if not storage.is_remote(self.path) and not self.path.exists():
            return None
        try:
            db = self._db()
            if TABLE not in db.list_tables().tables:
                return None
            return db.open_table(TABLE)
        except Exception as exc:
            raise IndexUnavailable(f"chunk store at {self.path} cannot be opened: {exc}") from exc

    def count(self) -> int:
        table = self._table()
        return table.count_rows() if table is not None else 0

    @staticmethod
    def _dimensions(table) -> int:
        return table.schema.field("vector").type.list_size

    def upsert(self, chunks: Sequence[StoredChunk], *, dimensions: int, migrate_to: str | None = None) -> UpsertResult:
        """Insert or replace `chunks` by ID. `migrate_to` (a model name): first drop every row of another
        model, and the whole table when its vector dimension differs, so the project changes model."""
        removed = 0
        table = self._table()
        if table is not None and self._dimensions(table) != dimensions:
            if migrate_to is None:
                raise EmbeddingMismatch(f"the store holds {self._dimensions(table)}-dimension vectors; these have "
                                        f"{dimensions}")
            removed = table.count_rows()
            self._db().drop_table(TABLE)
            table = None
        elif table is not None and migrate_to is not None:
            before = table.count_rows()
            table.delete(f"embed_model IS NULL OR embed_model != {sql_string(migrate_to)}")
            removed = before - table.count_rows()
        if table is None:
            if not storage.is_remote(self.path):
                self.path.mkdir(parents=True, exist_ok=True)
            table = self._db().create_table(TABLE, schema=_schema(dimensions), exist_ok=True)
        rows = pa.Table.from_pylist([c.row() for c in chunks], schema=_schema(dimensions))
        table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows)
        self._index(table)
        return UpsertResult(len(chunks), removed)

    def _index(self, table) -> None:
        """ID index for the merges, FTS over the text for hybrid search; then fold the new rows into them.

        A failure here (two workers indexing at once) leaves the rows written; the next write retries."""
        from lancedb.index import FTS, BTree

        try:
            names = {ix.name for ix in table.list_indices()}
            if "id_idx" not in names:
                table.create_index("id", config=BTree(), replace=True)
            if "text_idx" not in names:
                table.create_index("text", config=FTS(with_position=False), replace=True)
            table.optimize()
        except Exception as exc:
            log.warning("indexing the chunk store at %s failed; the next write retries: %s", self.path, exc)

    def _vector_rows(self, table, vector: np.ndarray, depth: int, where: str | None) -> list[dict]:
        if self._dimensions(table) != len(vector):
            raise EmbeddingMismatch(f"the query vector has {len(vector)} dimensions; the project's vectors have "
                                    f"{self._dimensions(table)}")
        query = table.search(vector.astype(np.float32).tolist(), vector_column_name="vector")
        query = query.distance_type("cosine").select([*ROW_COLUMNS, "_distance"]).limit(depth)
        if where:
            query = query.where(where, prefilter=True)
        return query.to_list()

    def vector_search(self, vector: np.ndarray, top_k: int, where: str | None = None) -> list[StoreHit]:
        table = self._table()
        if table is None:
            return []
        rows = self._vector_rows(table, vector, top_k, where)
        return [_hit(r, 1.0 - float(r["_distance"])) for r in rows]

    def hybrid_search(self, query: str, vector: np.ndarray, top_k: int, where: str | None = None) -> list[StoreHit]:
        table = self._table()
        if table is None:
            return []
        depth = max(HYBRID_DEPTH, top_k)
        by_vector = self._vector_rows(table, vector, depth, where)
        try:
            search = table.search(query, query_type="fts", fts_columns="text")
            search = search.select([*ROW_COLUMNS, "_score"]).limit(depth)
            if where:
                search = search.where(where, prefilter=True)
            by_text = search.to_list()
        except Exception as exc:
            raise IndexUnavailable(f"the full-text index of {self.path} is not usable: {exc}") from exc
        rows = {r["id"]: r for r in [*by_text, *by_vector]}
        fused = fuse([[r["id"] for r in by_vector], [r["id"] for r in by_text]], {i: i for i in rows})
        return [_hit(rows[i], score) for i, score in fused[:top_k]]

    def inspect(self, sample: int = 0) -> StoreInfo:
        table = self._table()
        if table is None:
            return StoreInfo(0, None, [], {"keyword": [], "fulltext": [], "vector": []})
        try:
            payloads = table.search().select(["payload"]).limit(PAYLOAD_KEY_SCAN).to_arrow()["payload"].to_pylist()
            keys = sorted({k for p in payloads if p for k in json.loads(p)})
            indexes: dict[str, list[str]] = {"keyword": [], "fulltext": [], "vector": []}
            for ix in table.list_indices():
                kind = INDEX_KINDS.get(str(ix.index_type), "vector")
                indexes[kind].extend(c for c in ix.columns if c not in indexes[kind])
            samples = []
            if sample:
                rows = table.search().select(["id", "payload"]).limit(sample).to_list()
                samples = [{"id": r["id"], **json.loads(r["payload"] or "{}")} for r in rows]
            return StoreInfo(table.count_rows(), self._dimensions(table), keys, indexes, samples)
        except IndexUnavailable:
            raise
        except Exception as exc:
            raise IndexUnavailable(f"chunk store at {self.path} cannot be read: {exc}") from exc
