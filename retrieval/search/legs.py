"""The legs of a search: each ranks chunk positions for one reading of the query.

- `text`: BM25 over heading, body and the document's title in one `MultiMatchQuery`, heading
  and title boosted (a plain-string FTS query would search every FTS column with equal weight,
  `ident` included). The title is on every chunk of its page, so a chunk of the page whose
  title names the question outranks a chunk that only mentions it; builds made before the
  title was indexed search heading and body only. The page's front matter `keywords`
  (retrieval/ingest/keywords.py) are a fourth field, boosted like the heading; every chunk of
  a page without keywords has it empty, which adds nothing to any score.
- `ident`: the query's identifier terms (retrieval/terms.py) against the `ident` column,
  which keeps `get_queryset` and `client.list_users` whole; the stemming tokenizer of the
  other columns splits them into common words. Every identifier occurs once per chunk in
  that column, so BM25 alone would rank by how few other identifiers a chunk has; the
  chunks that contain the identifier are therefore ranked by their heading (boosted SHOULD
  clause): the section titled `RateLimitError` defines it, the ones that list it do not.
- `phrase`: the query as an exact phrase in the body (positions are indexed), for 2-8 word
  queries: longer ones almost never occur verbatim, one word is already the text leg.
- `vector`: cosine over every chunk's in-memory vector (retrieval/vectors.py), restricted by
  the same filter mask.

Every leg fetches the same fixed depth with the filter pushed down as a prefilter, so a
filter never costs recall: the top `depth` are computed among the matching rows, not cut
from an unfiltered list. Full-text legs return row IDs and scores only (see catalog.py).
"""

from __future__ import annotations

import logging
import re
import time
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from retrieval.errors import EmbeddingMismatch
from retrieval.format.layout import DOCUMENTS_TABLE
from retrieval.format.terms import identifier_terms

from . import pool
from .index import Index
from .vectors import Vectors

log = logging.getLogger("retrieval.search")

TEXT, IDENT, PHRASE, VECTOR = "text", "ident", "phrase", "vector"
LEGS = (TEXT, IDENT, PHRASE, VECTOR)
LEXICAL_LEGS = (TEXT, IDENT, PHRASE)
HEADING_BOOST = 2.0
TITLE_BOOST = 1.5
KEYWORDS_BOOST = HEADING_BOOST  # the author named the page's subject, as a heading does
IDENT_HEADING_BOOST = 3.0
PHRASE_WORDS = (2, 8)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class LegResult:
    """One leg's ranking: catalog positions, best first, and what it cost."""

    name: str
    positions: np.ndarray
    seconds: float
    error: str | None = None  # set when the leg failed and was left out


def lexical_queries(query: str, legs: tuple[str, ...], *, title: bool = False,
                    keywords: bool = False) -> dict[str, object]:
    """The full-text query object of each requested lexical leg that can match this query;
    `title`, `keywords`: the build has a full-text index on the document title, on the page's
    front matter keywords."""
    # imported by the first search, not with the engine: a tools/list never loads Lance
    from lance.query import BooleanQuery, MatchQuery, MultiMatchQuery, Occur, PhraseQuery

    out: dict[str, object] = {}
    if TEXT in legs:
        fields, boosts = ["heading", "content"], [HEADING_BOOST, 1.0]
        if title:
            fields, boosts = [*fields, "title"], [*boosts, TITLE_BOOST]
        if keywords:
            fields, boosts = [*fields, "keywords"], [*boosts, KEYWORDS_BOOST]
        out[TEXT] = MultiMatchQuery(query, fields, boosts=boosts)
    if IDENT in legs:
        terms = " ".join(dict.fromkeys(identifier_terms(query)))
        if terms:
            out[IDENT] = BooleanQuery([
                (Occur.MUST, MatchQuery(terms, "ident")),
                (Occur.SHOULD, MatchQuery(terms, "heading", boost=IDENT_HEADING_BOOST)),
            ])
    if PHRASE in legs:
        words = len(_WORD.findall(query))
        if PHRASE_WORDS[0] <= words <= PHRASE_WORDS[1]:
            out[PHRASE] = PhraseQuery(query, "content")
    return out


@dataclass(frozen=True)
class FtsOutcome:
    """What one full-text query returned: row IDs, or the error it raised."""

    name: str
    rowids: np.ndarray | None
    seconds: float
    error: Exception | None = None


def _fts(dataset, name: str, fts_query, where: str | None, depth: int) -> FtsOutcome:
    started = time.perf_counter()
    try:
        found = dataset.to_table(full_text_query=fts_query, columns=["_score"], with_row_id=True, limit=depth,
                                 filter=where, prefilter=bool(where))
    except Exception as exc:  # reported per leg; the caller decides whether the search can go on
        return FtsOutcome(name, None, time.perf_counter() - started, exc)
    return FtsOutcome(name, found["_rowid"].to_numpy(), time.perf_counter() - started)


def submit_lexical(index: Index, queries: dict[str, object], where: str | None, depth: int) -> list[Future[FtsOutcome]]:
    """Starts every full-text leg on the process's leg pool (retrieval/search/pool.py) and returns
    at once; the caller collects the outcomes when it has done its own work."""
    dataset = index.dataset()
    return [pool.submit(_fts, dataset, name, q, where, depth) for name, q in queries.items()]


def page_text(dataset, query: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Whole pages ranked by BM25 over their text (the documents table), for the page-text prior
    (priors.py): row IDs of the documents table and their scores, best first."""
    from lance.query import MatchQuery

    found = dataset.to_table(full_text_query=MatchQuery(query, "content"), columns=["_score"], with_row_id=True,
                             limit=depth)
    return found["_rowid"].to_numpy(), found["_score"].to_numpy()


def submit_page_text(index: Index, query: str, depth: int) -> Future[tuple[np.ndarray, np.ndarray]]:
    """Starts the whole-page search on the leg pool, beside the legs."""
    return pool.submit(page_text, index.dataset(DOCUMENTS_TABLE), query, depth)


def lexical_results(index: Index, pending: list[Future[FtsOutcome]]) -> list[LegResult]:
    """Row IDs -> catalog positions; failed legs are logged and kept with their error."""
    catalog = index.catalog()
    out = []
    for outcome in (f.result() for f in pending):
        if outcome.error is not None:
            log.warning("search leg %r failed on %s: %s", outcome.name, index.path, outcome.error)
            error = f"{type(outcome.error).__name__}: {outcome.error}"
            out.append(LegResult(outcome.name, np.empty(0, np.int64), outcome.seconds, error))
        else:
            out.append(LegResult(outcome.name, catalog.positions(outcome.rowids), outcome.seconds))
    return out


def _scores(vectors: Vectors, query_vector: np.ndarray,
            mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Scores of the rows the mask allows, and their positions (None: every row, in order).

    A selective filter scores only its rows: gathering a tenth of 124k rows and scoring them
    takes 0.6 ms, scoring every row 2.4 ms.
    """
    if mask is None:
        return vectors.dots(query_vector), None
    positions = np.flatnonzero(mask)
    if len(positions) > len(mask) // 2:
        return np.where(mask, vectors.dots(query_vector), -np.inf), None
    return vectors.dots(query_vector, positions), positions


def vector_leg(index: Index, query_vector: np.ndarray, mask: np.ndarray | None, depth: int,
               floor: float) -> np.ndarray:
    """Top `depth` positions by cosine (rows and query are unit vectors), best first.

    A scan of the rows the filter allows rather than an ANN index, so a selective filter still
    yields its true nearest neighbours (at int8 precision, retrieval/vectors.py). Rows below
    `floor` are left out: they would put unrelated chunks into every result list and hide
    zero-result hints.
    Ties go to the lower position, so the order is deterministic.
    """
    vectors = index.vectors()
    query_vector = np.asarray(query_vector, dtype=np.float32).ravel()
    if vectors.dims != query_vector.shape[0]:
        raise EmbeddingMismatch(f"query vector has {query_vector.shape[0]} dimensions; the index has "
                                f"{vectors.dims}: configure the provider the index was built with")
    scores, positions = _scores(vectors, query_vector, mask)
    candidates = np.flatnonzero(scores >= floor)
    if len(candidates) > depth:
        top = np.argpartition(-scores[candidates], depth - 1)[:depth]
        candidates = candidates[top]
    order = np.lexsort((candidates, -scores[candidates]))
    ranked = candidates[order]
    return (ranked if positions is None else positions[ranked]).astype(np.int64)
