"""Searching several corpora at once (/mcp/ of a server of several corpora): the best matching routed,
ranked side by side, merged by score, only the page's hits dressed."""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.conf import settings

from retrieval.embeddings.base import EmbeddingProvider

from .. import querylog
from ..models import Corpus
from .active import cursor_secret, embedder_for, freshness, resolve, thresholds_of
from .state import STATE

if TYPE_CHECKING:
    from retrieval.search.coverage import Coverage
    from retrieval.search.engine import SearchHit, SearchRequest
    from retrieval.search.index import Index

logger = logging.getLogger("docsmcp.corpus")


class _Ranked(Protocol):
    score: float
    order: tuple[int, int]


Merged = TypeVar("Merged", bound=_Ranked)


@dataclass(frozen=True)
class CorpusHit:
    """A hit and the corpus it came from, for merging the results of several corpora."""

    corpus: Corpus
    hit: SearchHit
    order: tuple[int, int]  # (position of its corpus among those searched, rank): the tie-break
    freshness: dict[str, Any] = field(default_factory=dict)


    @property
    def score(self) -> float:
        return self.hit.score


def merge_hits(per_corpus: list[list[Merged]], limit: int) -> list[Merged]:
    """Hits of several corpora by descending score (each corpus's scores are normalised to [0, 1]
    the same way), ties by corpus order then rank; the first `limit`."""
    merged = [hit for hits in per_corpus for hit in hits]
    merged.sort(key=lambda h: (-h.score, h.order))
    return merged[:limit]


@dataclass(frozen=True)
class CorporaSearch:
    """One page of a search across several corpora, merged by score.

    Paging is by offset over the merged list: page N re-runs each corpus's search for its first
    offset+limit hits and merges again. The cursor is signed like a one-corpus cursor, bound to
    the query and to the set of corpora and their active builds (`builds`), so a rebuild of any of
    them, or a key that sees other corpora, asks for a new search."""

    hits: list[CorpusHit]
    request: SearchRequest
    offset: int
    limit: int
    builds: str
    more: bool
    ranked: tuple[str, ...] = ()  # the corpora ranked in full (routing may leave some of those named out)
    coverage: Coverage | None = None  # the best verdict of the corpora ranked: the question is covered if one covers it
    seen: tuple[querylog.Observation, ...] = ()  # for the query log: each corpus ranked, its hits shown and total

    @property
    def next_cursor(self) -> str | None:
        return self.cursor_after(len(self.hits)) if self.more else None

    def cursor_after(self, kept: int) -> str:
        """The cursor of the page that starts after the first `kept` hits of this one."""
        from retrieval.search.cursor import CursorState, encode_cursor
        from retrieval.search.engine import check_query
        from retrieval.search.ranking import DEFAULT_DEPTH

        return encode_cursor(cursor_secret(), query=check_query(self.request.query), filters={},
                             build_id=self.builds, state=CursorState(self.offset + kept, self.limit, DEFAULT_DEPTH))


def _builds_key(indexes: Sequence[tuple[str, Index]]) -> str:
    text = "\n".join(f"{name}={index.build_id}" for name, index in sorted(indexes, key=lambda item: item[0]))
    return "corpora:" + hashlib.sha256(text.encode()).hexdigest()[:24]


def corpora_search(names: Sequence[str], request: SearchRequest) -> CorporaSearch:
    """`request` (query, limit, cursor; no filters: taxonomies differ between corpora) on each corpus
    named, merged by score. Each hit keeps the chunk ID it has on its corpus's own endpoint."""
    from retrieval.search.coverage import best_of
    from retrieval.search.cursor import decode_cursor
    from retrieval.search.engine import (
        DEFAULT_LIMIT,
        assess_ranking,
        check_limit,
        check_query,
        dress,
        query_vector_for,
        rank_all,
    )

    query = check_query(request.query)
    from ..access import visible_only

    wanted_names = list(dict.fromkeys(names))
    corpora = {c.name: c for c in visible_only(Corpus.objects.filter(
        name__in=wanted_names, kind=Corpus.KIND_MARKDOWN, version_of__isnull=True, active_build__isnull=False)
        .select_related("active_build").only("name", "description", "version", "default_version", "settings",
                                             "active_build__index_path"))}
    targets = [corpora[name] for name in wanted_names if name in corpora]
    _remember_pointers(targets)
    actives = [resolve(c.name) for c in targets]
    indexes = [(c.name, active.index) for c, active in zip(targets, actives, strict=True)]
    builds = _builds_key(indexes)
    offset, limit = 0, check_limit(request.limit if request.limit is not None else DEFAULT_LIMIT)
    if request.cursor is not None:
        state = decode_cursor(cursor_secret(), request.cursor, query=query, filters={}, build_id=builds)
        offset = state.offset
        limit = check_limit(request.limit if request.limit is not None else state.limit)
    wanted = offset + limit
    # Rank every corpus (one query embedding per model, the corpora in parallel threads: the legs wait on
    # LanceDB and numpy, not the interpreter), merge the undressed (position, score) lists, then dress only
    # the page's hits: a corpus's chunk texts are read only for hits that are shown.
    # Embedders and query vectors are made here: the provider lookup reads the database, which the pool's
    # threads must not (each would open a connection of its own).
    vectors: dict[str, Any] = {}
    legs: list[tuple[EmbeddingProvider | None, Any]] = []
    for _name, index in indexes:
        embedder = embedder_for(index)
        spec = repr(sorted((index.metadata.embedding or {}).items()))
        if embedder is not None and spec not in vectors:
            try:
                vectors[spec] = query_vector_for(index, embedder, query)
            except Exception as exc:  # as in a one-corpus search: the full-text legs still answer
                logger.warning("query not embedded for %s: %s", index.path, exc)
                vectors[spec] = None
        legs.append((embedder, vectors.get(spec)))

    def ranked(position: int) -> list[Candidate]:
        index = indexes[position][1]
        embedder, vector = legs[position]
        ranking = rank_all(index, query, embedder=embedder, query_vector=vector)
        return [Candidate(position, item, score, ranking, (position, rank))
                for rank, (item, score) in enumerate(ranking.items[:wanted + 1])]

    chosen = _routed(query, targets, indexes, [vector for _embedder, vector in legs])
    per_corpus: list[list[Candidate]] = [[] for _ in indexes]
    # The first corpus is ranked in this thread while the pool ranks the others.
    pending = [(position, STATE.ranking_pool().submit(ranked, position)) for position in chosen[1:]]
    if chosen:
        per_corpus[chosen[0]] = ranked(chosen[0])
    for position, future in pending:
        per_corpus[position] = future.result()
    merged = merge_hits(per_corpus, wanted + 1)
    verdicts = {position: assess_ranking(indexes[position][1], query, per_corpus[position][0].ranking,
                                         actives[position].thresholds)
                for position in chosen if per_corpus[position]}
    page = merged[offset:offset + limit]
    hits: dict[tuple[int, int], CorpusHit] = {}
    seen: list[querylog.Observation] = []
    for position, (corpus, (_name, index)) in enumerate(zip(targets, indexes, strict=True)):
        mine = [c for c in page if c.corpus == position]
        dressed = dress(index, query, [(c.item, c.score) for c in mine], mine[0].ranking) if mine else []
        fresh = freshness(index)
        for candidate, hit in zip(mine, dressed, strict=True):
            hits[candidate.order] = CorpusHit(corpus, hit, candidate.order, fresh)
        if position not in chosen:
            continue
        # For the query log: a record per corpus searched, with the hits shown from it and how many it had.
        found = per_corpus[position]
        seen.append(querylog.observation(index, [(h.chunk_id, h.score) for h in dressed],
                                         total=len(found[0].ranking.items) if found else 0,
                                         coverage=verdicts.get(position)))
    return CorporaSearch([hits[c.order] for c in page], request, offset, limit, builds, len(merged) > wanted,
                         tuple(indexes[position][0] for position in chosen),
                         best_of(verdicts.values()), tuple(seen))


def _remember_pointers(corpora: Sequence[Corpus]) -> None:
    """Caches the active-build pointers of corpora served under their own row (no default version of
    another row), read with them in one query: a search across 20 corpora would otherwise look each up
    in a query of its own whenever its pointer is older than POINTER_TTL."""
    for corpus in corpora:
        build = corpus.active_build
        if corpus.default_version and corpus.default_version != corpus.version or build is None:
            continue
        if build.index_path:
            STATE.remember_if_old("pointer", corpus.name, (build.index_path, thresholds_of(corpus)))


def routing_profile(name: str, index: Index, description: str = "") -> Any:
    """What the corpus's words are ranked by (retrieval/corpus_summary.py), made once per build and description;
    its lexicon is the opened build's, which the coverage verdict already holds."""
    from retrieval.corpus_summary import CorpusProfile, summarize

    key = (name, str(index.path), description)
    profile = STATE.routes.get(key)
    if profile is None:
        metadata = index.metadata
        built = metadata.corpus_description if metadata.corpus_description != metadata.corpus else ""
        summary = metadata.extra.get("summary") or summarize(metadata.files)
        profile = CorpusProfile(name, description or built, tuple(t for t in metadata.files.values() if t),
                                tuple(summary.get("terms", ())), index.lexicon())
        with STATE.lock:
            if len(STATE.routes) > 4096:
                STATE.routes.clear()
            STATE.routes[key] = profile
    return profile


def _routed(query: str, corpora: Sequence[Corpus], indexes: Sequence[tuple[str, Index]],
            vectors: Sequence[Any]) -> list[int]:
    """Positions of the corpora whose ranking a search across them runs (retrieval/search/routing.py): the
    DOCSMCP_SEARCH_ROUTE_TOP that best match the query, by their chunks' best cosine for a semantic model's
    corpora, by their pages' words (the lexicon) for the others."""
    from retrieval.corpus_summary import match_scores, profile_scores
    from retrieval.format.lexicon import query_terms
    from retrieval.search.routing import affinity, route

    keep = settings.DOCSMCP_SEARCH_ROUTE_TOP
    if keep <= 0 or len(indexes) <= keep:
        return list(range(len(indexes)))
    profiles = [routing_profile(name, index, corpus.description)
                for corpus, (name, index) in zip(corpora, indexes, strict=True)]
    models = [repr(sorted((index.metadata.embedding or {}).items())) for _name, index in indexes]
    affinities = [affinity(index, vector) for (_name, index), vector in zip(indexes, vectors, strict=True)]
    lexical = [None if p.lexicon is None else -math.inf if m is None else m
               for p, m in zip(profiles, match_scores(query, profiles, query_terms(query)), strict=True)]
    return route(profile_scores(query, profiles), affinities, models, keep, lexical)


@dataclass(frozen=True)
class Candidate:
    """One corpus's ranked chunk before it is dressed as a hit (merge_hits orders these like hits)."""

    corpus: int  # position among the corpora searched
    item: int  # catalog position in its index
    score: float
    ranking: Any
    order: tuple[int, int]
