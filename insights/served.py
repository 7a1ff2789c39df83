"""What the insights pages need of the serving code: a corpus's active index, its query embedder, its
pages, and a search of a gap's question (the author picks the page that should answer from its hits).

Everything goes through the same module the MCP tools and REST search use, so the hits an author
sees are the hits an agent got.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("docsmcp.insights")


def _serving():
    try:
        from corpus import serving
    except ImportError:  # older layout: the index cache lived in corpus.selectors
        from corpus import selectors as serving
    return serving


def active_index(name: str) -> Any | None:
    """The corpus's active index, or None when it has none (or it cannot be opened)."""
    from corpus.errors import CorpusError
    from retrieval.errors import RetrievalError

    try:
        return _serving().active_index(name)
    except (CorpusError, RetrievalError) as exc:
        log.info("insights: no active index for %s: %s", name, exc)
        return None


def embedder(index: Any) -> Any | None:
    """The provider that embeds this index's queries, or None (FTS-only, or misconfigured)."""
    from corpus.errors import CorpusError
    from retrieval.errors import RetrievalError

    if index is None or not index.metadata.embedding:
        return None
    try:
        return _serving().query_embedder(index)
    except (RetrievalError, CorpusError) as exc:
        log.warning("insights: no query embedder for %s: %s", index.metadata.corpus, exc)
        return None


def pages(index: Any) -> set[str]:
    """Every page (file path) of the index."""
    if index is None:
        return set()
    return {p for p in index.catalog().values("filepath").to_pylist() if p}


@dataclass(frozen=True)
class PageHit:
    filepath: str
    chunk_id: str
    heading: str
    title: str
    score: float
    snippet: str


def search_pages(name: str, query: str, *, limit: int = 10) -> list[PageHit]:
    """The hits the corpus's active build gives `query` now, one per page, best first."""
    from corpus.errors import CorpusError
    from retrieval.errors import RetrievalError
    from retrieval.search.engine import SearchRequest

    serving = _serving()
    try:
        if hasattr(serving, "corpus_search"):
            hits = serving.corpus_search(name, SearchRequest(query=query[:1000], limit=limit)).result.hits
        else:
            from retrieval.search.engine import search

            index = serving.active_index(name)
            hits = search(index, SearchRequest(query=query[:1000], limit=limit), embedder=embedder(index),
                          cursor_secret=serving.cursor_secret()).hits
    except (CorpusError, RetrievalError) as exc:
        log.info("insights: search of %s failed: %s", name, exc)
        return []
    out, seen = [], set()
    for hit in hits:
        if hit.filepath in seen:
            continue
        seen.add(hit.filepath)
        out.append(PageHit(hit.filepath, hit.chunk_id, hit.heading, hit.title, hit.score, hit.snippet))
    return out
