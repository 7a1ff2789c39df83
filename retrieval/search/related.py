"""Related chunks for a document or a passage (the documents tool contract `documents_find_related`).

With vectors: the probe is the embedded `chunk_text` when given, else the centroid of the
document's chunk vectors (mean, re-normalised), which leans towards what the document is
mostly about. Every chunk is scored by exact cosine; the score is the cosine clipped to
[0, 1].

Without vectors (an index built with provider `none`, or `chunk_text` but no embedder): a
full-text search stands in, its query made from the passage's first words or from the
document's title and headings (up to depth 3), which name its topics in few words. Scores
are then normalised fused ranks, like search scores. `RelatedResult.method` says which ran.

The source document is excluded unless `same_document`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from retrieval.embeddings import EmbeddingSpec, check_compatible
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.errors import InvalidArgument, NotFound

from .documents import check_document_path, check_int, get_outline
from .engine import SearchHit, make_hits
from .filters import FilterPlan
from .index import Index
from .legs import TEXT
from .ranking import rank

log = logging.getLogger("retrieval.search")

MAX_RELATED = 50
LEXICAL_PROBE_WORDS = 40
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class RelatedResult:
    document: str
    method: str  # "vector" or "lexical"
    hits: list[SearchHit]


def _lexical_probe(index: Index, path: str, chunk_text: str | None) -> str:
    if chunk_text is None:
        outline = get_outline(index, path, max_depth=3)
        chunk_text = " ".join([outline.title, *(e.text for e in outline.entries)])
    words = dict.fromkeys(w.lower() for w in _WORD.findall(chunk_text))
    return " ".join(list(words)[:LEXICAL_PROBE_WORDS])


def _document_positions(index: Index, path: str) -> np.ndarray:
    matches = pc.equal(index.catalog().table["filepath"], path)
    return np.flatnonzero(matches.to_numpy(zero_copy_only=False))


def find_related(index: Index, path: str, *, chunk_text: str | None = None, limit: int = 5,
                 same_document: bool = False, embedder: EmbeddingProvider | None = None) -> RelatedResult:
    check_document_path(path)
    limit = check_int("limit", limit, 1, MAX_RELATED)
    if chunk_text is not None and (not isinstance(chunk_text, str) or not chunk_text.strip()):
        raise InvalidArgument("chunk text must be a non-empty string, or omitted to use the whole document")
    if path not in index.metadata.files:
        raise NotFound(f"Document '{path}' not found. Use list_documents to see the available documents.")
    own = _document_positions(index, path)
    try:
        probe = _probe_vector(index, own, chunk_text, embedder)
    except Exception as exc:  # like search: a failing embedder costs the vectors, not the answer
        log.warning("related: embedding the probe failed on %s, using full text: %s: %s",
                    index.path, type(exc).__name__, exc)
        probe = None
    if probe is not None:
        scores = index.vectors().dots(probe)
        if not same_document:
            scores[own] = -np.inf
        count = min(limit, int(np.isfinite(scores).sum()))
        top = np.argpartition(-scores, count - 1)[:count] if count else np.empty(0, np.int64)
        top = top[np.lexsort((top, -scores[top]))]
        items = [(int(p), float(max(0.0, min(1.0, scores[p])))) for p in top]
        return RelatedResult(path, "vector", make_hits(index, chunk_text or "", items, _tag(items, "vector")))
    query = _lexical_probe(index, path, chunk_text)
    if not query.strip():
        return RelatedResult(path, "lexical", [])
    ranking = rank(index, query, FilterPlan({}, None), legs=(TEXT,))
    own_set = set(own.tolist())
    items = [(p, s) for p, s in ranking.items if same_document or p not in own_set][:limit]
    return RelatedResult(path, "lexical", make_hits(index, query, items, _tag(items, TEXT)))


def _tag(items: list[tuple[int, float]], leg: str) -> dict[int, tuple[str, ...]]:
    return {p: (leg,) for p, _ in items}


def _probe_vector(index: Index, own: np.ndarray, chunk_text: str | None,
                  embedder: EmbeddingProvider | None) -> np.ndarray | None:
    if not index.has_vectors:
        return None
    if chunk_text is not None:
        if embedder is None:
            return None
        check_compatible(EmbeddingSpec.from_dict(index.metadata.embedding), embedder)
        return np.asarray(embedder.embed_query(chunk_text), dtype=np.float32)
    if not len(own):
        return None
    centroid = index.vectors().rows(own).mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    return centroid / norm if norm > 0 else None


