"""An opened build: its metadata and tables (as Lance datasets), its mapped catalog, vectors and chunk text.

Opened once per process and kept by `index_cache.INDEXES`; builds are immutable, so a request still
holding an old build's `Index` finishes on it while newer requests get the new one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa

from retrieval import storage
from retrieval.corpus_summary import Lexicon
from retrieval.errors import IndexUnavailable
from retrieval.format.layout import (
    CHUNKS_TABLE,
    DOCUMENTS_TABLE,
    full_text_columns,
    table_dataset,
    taxonomy_column,
)
from retrieval.format.lexicon import read_lexicon
from retrieval.format.linkgraph import PageLinks
from retrieval.format.mapped import (
    CONTENT_IN_MEMORY_CHARS,
    MAPPED_DIR,
    Pages,
    open_mapped,
    page_tables,
    read_held,
)
from retrieval.format.metadata import BuildMetadata, read_metadata
from retrieval.storage import Location

from .catalog import Catalog
from .reading import reads_index
from .texts import CompressedTexts
from .vectors import Vectors

MASK_CACHE_SIZE = 64
# A page is as near the question as the mean of its 3 nearest chunks: one chunk is as noisy as the
# vector leg itself, five dilute a page whose subject takes 2 or 3 of its many sections
# (docs/search.md, round five).
PAGE_TOP = 3


class Index:
    def __init__(self, path: Location, content_in_memory_chars: int = CONTENT_IN_MEMORY_CHARS):
        self.path = storage.as_location(path)
        self.content_in_memory_chars = content_in_memory_chars
        self.metadata: BuildMetadata = read_metadata(self.path)
        self._lock = threading.Lock()
        self._vectors: Vectors | None = None
        self._catalog: Catalog | None = None
        self._datasets: dict[str, object] = {}
        self._datasets_lock = threading.Lock()
        self._content: pa.Array | CompressedTexts | None = None
        self.mapped = False  # whether the held arrays are the build's mapped files (shared by the host's processes)
        self._masks: OrderedDict[str, np.ndarray] = OrderedDict()
        self._fts_columns: frozenset[str] | None = None
        self._pages: tuple[np.ndarray, np.ndarray] | None = None
        self._page_text: bool | None = None
        self._document_pages: Pages | None = None
        self._links: PageLinks | None | bool = False  # False: not read yet; None: the build stores no links
        self._lexicon: Lexicon | None | bool = False  # False: not read yet; None: a build made before lexicons

    @property
    def chunks(self):
        """The chunks table as a Lance dataset, opened on first use: what a tools/list needs (the
        metadata) opens no table."""
        return self.dataset(CHUNKS_TABLE)

    @property
    def documents(self):
        """The documents table as a Lance dataset, opened on first use."""
        return self.dataset(DOCUMENTS_TABLE)

    @property
    def build_id(self) -> str:
        return self.metadata.build_id

    @property
    def has_vectors(self) -> bool:
        return bool(self.metadata.embedding)

    @staticmethod
    def column(key: str) -> str:
        return taxonomy_column(key)

    @property
    def taxonomy_columns(self) -> list[str]:
        return [taxonomy_column(key) for key in self.metadata.taxonomy]

    @property
    def fts_columns(self) -> frozenset[str]:
        """Columns with a full-text index that a query should search: builds made before the title was
        indexed lack it, and `keywords` counts only where some page has keywords. A build without any
        (most are: authors add them one page at a time) would otherwise pay for a fourth field in every
        full-text query that can add nothing to any score."""
        if self._fts_columns is None:
            columns = full_text_columns(self.chunks)
            if "keywords" in columns and not self.chunks.count_rows(filter="keywords != ''"):
                columns -= {"keywords"}
            self._fts_columns = columns
        return self._fts_columns

    @property
    def has_page_text(self) -> bool:
        """Whether whole pages have a full-text index (builds made before it lack one)."""
        if self._page_text is None:
            self._page_text = "content" in full_text_columns(self.documents)
        return self._page_text

    def document_pages(self, rowids: np.ndarray) -> np.ndarray:
        """Page codes (as `catalog().codes("filepath", ...)`) of documents-table row IDs; -1 for a
        page without chunks: a full-text query over pages returns row IDs only."""
        if self._document_pages is None:
            self._page_tables()
        known, codes = self._document_pages.rowids, self._document_pages.codes
        rowids = np.asarray(rowids, dtype=np.uint64)
        if not len(known):
            return np.full(len(rowids), -1, np.int64)
        at = np.minimum(np.searchsorted(known, rowids), len(known) - 1)
        return np.where(known[at] == rowids, codes[at], -1)

    def dataset(self, table: str = CHUNKS_TABLE):
        """A table as a Lance dataset (retrieval/format/layout.py): the full-text legs query it
        (retrieval/search/legs.py), filters and reads by row ID scan it. Serving never imports LanceDB,
        which builds write through: its library would be about 70 MiB more in every worker."""
        found = self._datasets.get(table)
        if found is None:
            with self._datasets_lock:  # not `_lock`: loading, which holds that, opens the tables
                found = self._datasets.get(table)
                if found is None:
                    try:
                        found = table_dataset(self.path, table)
                    except Exception as exc:
                        raise IndexUnavailable(f"index at {self.path} cannot be opened: {exc}") from exc
                    self._datasets[table] = found
        return found

    def catalog(self) -> Catalog:
        """Light columns of every chunk by position (see retrieval/catalog.py)."""
        if self._catalog is None:
            self._load()
        return self._catalog

    def vectors(self) -> Vectors:
        """All chunk vectors as int8 codes (retrieval/vectors.py), row i belonging to catalog position i.

        Scanning them costs a few ms at 100k chunks and loses no recall under filters, which an
        ANN index with a post-filter would.
        """
        if self._vectors is None:
            self._load()
        return self._vectors

    @reads_index
    def _load(self) -> None:
        """Maps the build's catalog, vectors and chunk text (retrieval/format/mapped.py), on first use;
        a build made before they were written, or served straight from an object store, has them
        read from its tables into this process's memory instead."""
        with self._lock:
            if self._catalog is not None:
                return
            held = open_mapped(self.path)
            if held is None:
                dims = int(self.metadata.embedding["dimensions"]) if self.has_vectors else 0
                held = read_held(self.chunks, self.documents, self.taxonomy_columns, dims,
                                 self.content_in_memory_chars)
            self._content = held.texts if held.text_offsets is None else CompressedTexts(
                held.texts, held.text_offsets, held.text_starts)
            self.mapped = held.mapped
            if held.pages is not None:  # made with the pages: no links then means the tables store none
                self._document_pages, self._links = held.pages, held.links
            self._catalog = Catalog(held.catalog, held.rowids, held.id_order)
            self._vectors = Vectors(held.codes, held.scales)

    def lexicon(self) -> Lexicon | None:
        """How many chunks and pages hold each term (retrieval/format/lexicon.py), mapped once; None for a
        build made before lexicons (coverage then weighs every question term alike)."""
        if self._lexicon is False:
            self._lexicon = read_lexicon(storage.join(self.path, MAPPED_DIR))
        return self._lexicon

    def page_links(self) -> PageLinks | None:
        """The pages each page links to, by page code (as `catalog().codes("filepath", ...)`); None
        for builds made before links were stored."""
        if self._links is False:
            self._page_tables()
        return self._links

    def _page_tables(self) -> None:
        """The documents' page codes and the links between pages: the build's mapped files have them; a
        build made before those files has them read and resolved here, once (two threads may both
        resolve; they get equal results): 8 ms at 722 pages, about 0.15 s at 11.1k."""
        self.catalog()
        if self._document_pages is None or self._links is False:
            pages, links = page_tables(self.documents, self.catalog().values("filepath"))
            self._document_pages, self._links = pages, links

    def _page_members(self) -> tuple[np.ndarray, np.ndarray]:
        if self._pages is None:
            codes = self.catalog().codes("filepath", np.arange(len(self.catalog())))
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(int(codes.max(initial=-1)) + 2))
            self._pages = (order, bounds)
        return self._pages

    def page_similarity(self, query_vector: np.ndarray, pages: np.ndarray) -> np.ndarray:
        """Per candidate, how near its page is to the query: the mean cosine of the page's PAGE_TOP
        chunks nearest to it, over all the page's chunks (the candidates are a few of them)."""
        order, bounds = self._page_members()
        unique, inverse = np.unique(pages, return_inverse=True)
        sizes = bounds[unique + 1] - bounds[unique]
        offsets = np.repeat(np.cumsum(sizes) - sizes, sizes)
        within = np.arange(int(sizes.sum())) - offsets
        members = order[np.repeat(bounds[unique], sizes) + within]
        dots = self.vectors().dots(query_vector, members)
        group = np.repeat(np.arange(len(unique)), sizes)
        ranked = np.lexsort((-dots, group))
        top = within < PAGE_TOP
        sums = np.bincount(group[ranked][top], weights=dots[ranked][top], minlength=len(unique))
        return (sums / np.minimum(sizes, PAGE_TOP))[inverse]

    def filter_mask(self, where: str | None) -> np.ndarray | None:
        """Boolean mask over catalog positions for a WHERE clause (None: no filter), LRU-cached.

        The clause is evaluated by Lance, so the vector leg filters with exactly the semantics
        the full-text legs push down. The clause must come from retrieval.search.filters, never from input.
        """
        if where is None:
            return None
        mask = self._masks.get(where)
        if mask is not None:
            with self._lock:
                if where in self._masks:
                    self._masks.move_to_end(where)
            return mask
        catalog = self.catalog()
        rowids = self.chunks.to_table(columns=[], filter=where, with_row_id=True)["_rowid"].to_numpy()
        mask = np.zeros(len(catalog), dtype=bool)
        mask[catalog.positions(rowids)] = True
        mask.flags.writeable = False
        with self._lock:
            self._masks[where] = mask
            while len(self._masks) > MASK_CACHE_SIZE:
                self._masks.popitem(last=False)
        return mask

    @reads_index
    def contents(self, positions: list[int]) -> list[str]:
        """Chunk markdown for the given catalog positions, in that order."""
        if not positions:
            return []
        if self._content is None:
            self._load()
        texts = self._content
        if isinstance(texts, CompressedTexts):
            return texts.get(positions)
        return texts.take(pa.array(positions, pa.int64())).to_pylist()


def check_index(path: Location) -> None:
    """Raise IndexUnavailable unless the index at `path` has its metadata and both tables, without
    loading them (health checks call this often)."""
    try:
        path = storage.as_location(path)
        read_metadata(path)
        tables = {name.removesuffix(".lance") for name in storage.list_children(storage.join(path, "lancedb"))
                  if name.endswith(".lance")}
    except Exception as exc:
        raise IndexUnavailable(f"index at {path} cannot be read: {exc}") from exc
    missing = sorted({CHUNKS_TABLE, DOCUMENTS_TABLE} - tables)
    if missing:
        raise IndexUnavailable(f"index at {path} is missing table(s) {', '.join(missing)}")
