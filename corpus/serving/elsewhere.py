"""Whether another corpus of this server holds a question better than the one searched: the verdict's
`elsewhere` (retrieval/search/coverage.py), from the two signals a search across corpora routes by; for a
full-text build, the corpus's share of the question's words among them as one more input of its score.

A corpus's own hits cannot tell a Python question from a Kubernetes one when both docs say "delete a file";
the corpus beside it can. Nothing is compared on a server of one corpus (its cached count says so). On
more, a search of a semantic corpus costs one matrix product per other corpus embedded by the same model
(routing.affinity: 0.1 ms at 3.6k chunks, 2.4 ms at 124.5k), and a ranking of the compared corpora's words
(list_corpora's, over their lexicons) only when one of them is closer; a full-text search, that ranking
alone. Only corpora the caller may read and this process has open are compared or named, and at most
MAX_NEIGHBOURS of them: on a larger server each corpus's own evidence decides, as on a server of one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError

from retrieval.errors import RetrievalError

from ..access import limited_to, visible
from ..errors import CorpusError
from .active import Active, resolve, served_corpora, served_corpus_count
from .corpora import routing_profile
from .state import STATE

if TYPE_CHECKING:
    from retrieval.search.coverage import Coverage

logger = logging.getLogger("docsmcp.corpus")

MAX_NEIGHBOURS = 20


def judged_among_corpora(active: Active, query: str, coverage: Coverage | None, query_vector: Any) -> Coverage | None:
    """`coverage` of a search of `active`, judged again against the other corpora this server serves: a
    semantic build's by `elsewhere`, a full-text build's by its share of the question's words among them
    (coverage.with_word_share)."""
    if coverage is None or served_corpus_count() < 2:
        return coverage
    from retrieval.search.coverage import elsewhere, with_word_share
    from retrieval.search.routing import affinity

    head = active.name.partition("@")[0]
    # only those this process has open: judging one corpus's search never opens another (a server of more
    # corpora than its memory budget holds opens each on first use, docs/corpora.md)
    names = [name for name in _served_names() if name != head and visible(name) and STATE.indexes.loaded(name)]
    if not names or len(names) > MAX_NEIGHBOURS:
        return coverage
    evidence = coverage.evidence
    closeness = None if query_vector is None else affinity(active.index, query_vector)
    if closeness is None and (evidence is None or evidence.cosine is not None):
        return coverage  # word-hash vectors: neither meaning nor the full-text model to judge by
    model = _model(active.index)
    compared = {head: active.index}
    neighbours = {}
    for name in names:
        try:
            index = resolve(name).index
        except (CorpusError, RetrievalError, DatabaseError) as exc:  # not served now: nothing to compare
            logger.info("corpus %s left out of the coverage verdict of %s: %s", name, active.name, exc)
            continue
        if closeness is None:
            compared[name] = index
        elif _model(index) == model and (value := affinity(index, query_vector)) is not None:
            neighbours[name], compared[name] = value, index
    if closeness is None:
        return with_word_share(coverage, _share(query, head, compared), active.thresholds) \
            if len(compared) > 1 else coverage
    return elsewhere(coverage, closeness, neighbours, lambda: _share(query, head, compared))


def _model(index: Any) -> tuple:
    return tuple(sorted((index.metadata.embedding or {}).items()))


def _share(query: str, head: str, compared: dict[str, Any]) -> float:
    """The corpus's share of the word evidence among the compared corpora: list_corpora's score
    (corpus_summary.rank_corpora), over the profiles a search across corpora routes by."""
    from retrieval.corpus_summary import rank_corpora
    from retrieval.format.lexicon import query_terms

    profiles = [routing_profile(name, index) for name, index in compared.items()]
    return dict(rank_corpora(query, profiles, query_terms(query))).get(head, 0.0)


def _served_names() -> list[str]:
    """Every served corpus's name, whoever asks (each caller's limit is applied per name), cached like the
    pointers; while the database is unreachable the last list holds, or none."""
    fresh, cached = STATE.fresh("names", None)
    if fresh:
        return cached
    began = STATE.began()
    try:
        names = _list_served()
    except DatabaseError as exc:
        logger.info("served corpora not listed for the coverage verdict: %s", exc)
        return cached or []
    return STATE.remember("names", None, names, began, _list_served)


def _list_served() -> list[str]:
    with limited_to(None):
        return [corpus.name for corpus in served_corpora()]
