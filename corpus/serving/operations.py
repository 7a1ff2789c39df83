"""The operations on one corpus's active build: search, read a chunk, list and read documents.

Each takes the corpus's name or an `Active` a caller already resolved, and only reads: what it returns
(`ServedSearch`, `ServedRead`, ...) carries the build and its freshness for the surface to show, and
`.seen` for the surface to record in the query log (corpus/querylog.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from retrieval.embeddings.base import EmbeddingProvider

from .. import querylog
from .active import Active, cursor_secret, embedder_for, freshness, resolve
from .elsewhere import judged_among_corpora
from .state import STATE

if TYPE_CHECKING:
    from retrieval.search.documents import ChunkWindow, Document, DocumentSummary
    from retrieval.search.engine import SearchRequest, SearchResult
    from retrieval.search.index import Index

Served = str | None | Active  # a corpus's name (None: the default corpus) or its resolved build


def _active(name: Served, version: str | None = None) -> Active:
    return name if isinstance(name, Active) else resolve(name, version)


@dataclass(frozen=True)
class ServedSearch:
    """A search of one corpus's active build, with the build it came from."""

    result: SearchResult
    index: Index
    request: SearchRequest
    freshness: dict[str, Any]
    batch: bool = False  # one of several queries: its record names its own query

    @property
    def build_id(self) -> str:
        return self.index.build_id

    @property
    def corpus(self) -> str:
        return self.index.metadata.corpus

    @property
    def seen(self) -> querylog.Observation:
        """What the query log records of this search."""
        return querylog.observation(self.index, [(h.chunk_id, h.score) for h in self.result.hits],
                                    query=self.request.query if self.batch else None,
                                    coverage=self.result.coverage)

    def cursor_after(self, kept: int) -> str:
        """A cursor whose page starts after the first `kept` hits of this page: a surface that shows
        fewer hits than it got (the response budget) continues there, skipping none."""
        from retrieval.search.engine import cursor_after

        return cursor_after(self.index, self.request, self.result, kept, cursor_secret=cursor_secret())


@dataclass(frozen=True)
class ServedRead:
    """A chunk and its neighbours from one corpus's active build."""

    window: ChunkWindow
    index: Index
    freshness: dict[str, Any]

    @property
    def build_id(self) -> str:
        return self.index.build_id

    @property
    def seen(self) -> querylog.Observation:
        target = self.window.target.chunk_id
        return querylog.observation(self.index, [(target, None)], target=target)


def _legs(index: Index, embedder: EmbeddingProvider | None, hybrid: bool) -> tuple[str, ...] | None:
    """None (every leg) for a hybrid search; else the vector leg alone when the corpus has vectors and a
    query embedder, or the full-text legs (an FTS-only corpus has nothing else to offer)."""
    if hybrid:
        return None
    from retrieval.search.legs import LEXICAL_LEGS, VECTOR

    return (VECTOR,) if index.has_vectors and embedder is not None else LEXICAL_LEGS


def corpus_search(name: Served, request: SearchRequest, *, version: str | None = None,
                  hybrid: bool = True) -> ServedSearch:
    """`request` on the active build serving `name` (None: the default corpus; `<corpus>@<version>`, or
    `version`, one version; or an `Active`); `hybrid=False` asks for the vector leg alone where there is one."""
    return corpus_search_batch(name, [request], version=version, hybrid=hybrid)[0]


def corpus_search_batch(name: Served, requests: Sequence[SearchRequest], *, version: str | None = None,
                        hybrid: bool = True) -> list[ServedSearch]:
    """Several searches of one corpus; their queries are embedded together."""
    from retrieval.search.engine import search, search_batch

    active = _active(name, version)
    index = active.index
    embedder = embedder_for(index)
    legs = _legs(index, embedder, hybrid)
    if legs is not None:
        requests = [replace(r, legs=legs) for r in requests]
    if len(requests) == 1:
        results = [search(index, requests[0], embedder=embedder, cursor_secret=cursor_secret(),
                          thresholds=active.thresholds)]
    else:
        results = search_batch(index, requests, embedder=embedder, cursor_secret=cursor_secret(),
                               thresholds=active.thresholds)
    results = [replace(result, coverage=judged_among_corpora(active, request.query, result.coverage,
                                                             result.query_vector))
               for request, result in zip(requests, results, strict=True)]
    fresh = freshness(index)
    batch = len(requests) > 1
    return [ServedSearch(result, index, request, fresh, batch)
            for request, result in zip(requests, results, strict=True)]


def corpus_read(name: Served, chunk_id: str, context: int = 0, *, version: str | None = None) -> ServedRead:
    """The chunk `chunk_id` of the active build serving `name`, with `context` neighbours each side."""
    from retrieval.search.documents import get_chunk

    index = _active(name, version).index
    return ServedRead(get_chunk(index, chunk_id, context), index, freshness(index))


@dataclass(frozen=True)
class ServedDocuments:
    """Every document of one corpus's active build (path order), with the build it came from."""

    documents: list[DocumentSummary]
    index: Index
    freshness: dict[str, Any]

    @property
    def build_id(self) -> str:
        return self.index.build_id


@dataclass(frozen=True)
class ServedDocument:
    """One whole document of one corpus's active build."""

    document: Document
    index: Index
    freshness: dict[str, Any]

    @property
    def build_id(self) -> str:
        return self.index.build_id

    def seen(self, target: str | None = None) -> querylog.Observation:
        """What the query log records of this read; `target` as the surface names the page."""
        path = self.document.filepath
        return querylog.observation(self.index, [(path, None)], target=target or path)


def corpus_documents(name: Served, *, version: str | None = None) -> ServedDocuments:
    """Every document of the active build serving `name` (None: the default corpus), ordered by path.
    A build never changes, and listing it page by page would read it whole each time: kept per build."""
    from retrieval.search.documents import all_documents

    index = _active(name, version).index
    key = str(index.path)
    documents = STATE.documents.get(key)
    if documents is None:
        documents = all_documents(index)
        with STATE.lock:
            if len(STATE.documents) > 32:
                STATE.documents.clear()
            STATE.documents[key] = documents
    return ServedDocuments(documents, index, freshness(index))


def corpus_document(name: Served, path: str, *, version: str | None = None) -> ServedDocument:
    """The whole document at `path` of the active build serving `name`; raises NotFound (or
    InvalidArgument for a path that could never name a document)."""
    from retrieval.search.documents import get_document

    index = _active(name, version).index
    return ServedDocument(get_document(index, path), index, freshness(index))


def build_documents(index: Index, paths: Sequence[str], batch: int = 64) -> Iterator[Document]:
    """The documents at `paths` of one build (the one a corpus_documents answer came from), in that
    order, read `batch` at a time so a large corpus is never held whole."""
    from retrieval.search.documents import read_documents

    for start in range(0, len(paths), batch):
        yield from read_documents(index, list(paths[start:start + batch]))
