"""Serving the active build of each corpus: every surface (the MCP profiles, the REST search, llms.txt,
warming) answers through this package, so "which index, which query embedder, which cursor key" is decided
once, and every call only reads (the query log is the surface's step, from what these calls return).

- state.py       STATE, the one owner of every cache of serving and its `forget`
- active.py      the active build of a corpus, resolved once per call (`resolve` -> `Active`), its pointer
                 cached for POINTER_TTL; query embedder, cursor key, freshness; which corpora are served
- operations.py  search, read, documents of one corpus (`corpus_search`, `corpus_read`, ...)
- corpora.py     search across corpora (`corpora_search`), routed, merged by score
- catalog.py     list_corpora's cards and the ranking of corpora for a query
- elsewhere.py   a search's coverage verdict judged against the server's other corpora
- warm.py        `serve_warm`: a serving process loads its builds before taking requests, then watches
"""

from .active import (
    Active,
    active_index,
    build_cache,
    build_location,
    check_served,
    cursor_secret,
    embedder_for,
    forget_active,
    freshness,
    known_active_paths,
    query_embedder,
    readable_corpus_names,
    resolve,
    served_corpora,
    served_corpus_count,
    serving_name,
    thresholds_of,
    version_choices,
)
from .catalog import CorpusCard, best_corpora, corpora_holding, corpus_cards
from .corpora import Candidate, CorporaSearch, CorpusHit, corpora_search, merge_hits
from .operations import (
    ServedDocument,
    ServedDocuments,
    ServedRead,
    ServedSearch,
    build_documents,
    corpus_document,
    corpus_documents,
    corpus_read,
    corpus_search,
    corpus_search_batch,
)
from .state import POINTER_TTL, STATE, ServingState
from .warm import pinned_corpora, serve_warm, start_watcher, warm, watch_once

__all__ = [
    "POINTER_TTL", "STATE", "Active", "Candidate", "CorporaSearch", "CorpusCard", "CorpusHit", "ServedDocument",
    "ServedDocuments", "ServedRead", "ServedSearch", "ServingState", "active_index", "best_corpora",
    "build_cache", "build_documents", "build_location", "check_served", "corpora_holding", "corpora_search",
    "corpus_cards", "corpus_document", "corpus_documents", "corpus_read", "corpus_search", "corpus_search_batch",
    "cursor_secret", "embedder_for", "forget_active", "freshness", "known_active_paths", "merge_hits",
    "pinned_corpora", "query_embedder", "readable_corpus_names", "resolve", "serve_warm", "served_corpora",
    "served_corpus_count", "serving_name", "start_watcher", "thresholds_of", "version_choices", "warm",
    "watch_once",
]
