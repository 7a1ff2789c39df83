"""Serving the active build of each corpus: every surface (the MCP profiles, the REST search, warming)
answers through this module, so "which index, which query embedder, which cursor key" is decided once.

A worker caches each corpus's active-build pointer for POINTER_TTL seconds and opens each build
once (retrieval.search.index.INDEXES). While the database cannot be reached it keeps the last
pointer it saw, however old, so searches and reads keep answering from the index on disk.

`corpus_search` and `corpus_read` are the operations; they return what every surface shows beside
the engine's answer (the build and its freshness). `serve_warm` loads every active build before a
serving process takes requests and then watches for activations (the process's state is in
corpus/warming.py).
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections

from retrieval.embeddings import check_compatible
from retrieval.embeddings.base import EmbeddingProvider, EmbeddingSpec
from retrieval.errors import IndexUnavailable, RetrievalError
from retrieval.storage import Location, load_engine
from retrieval.storage.cache import BuildCache

from . import querylog, warming
from .access import visible
from .errors import CorpusError, CorpusNotFound, DatabaseUnavailable
from .models import Corpus
from .providers import cached_provider
from .selectors import (
    active_index_path,
    corpus_get,
    corpus_list,
    default_corpus,
    served_corpus_names,
    version_labels,
)

if TYPE_CHECKING:  # the search modules load Arrow: only a process that opens an index pays for it
    from retrieval.search.coverage import Coverage
    from retrieval.search.documents import ChunkWindow, Document, DocumentSummary
    from retrieval.search.engine import SearchHit, SearchRequest, SearchResult
    from retrieval.search.index import Index

logger = logging.getLogger("docsmcp.corpus")

# Seconds a worker trusts its cached active-build pointer. While the database cannot be reached the
# last known pointer is kept, however old, so search and get_doc keep answering from the index on disk.
POINTER_TTL = 1.0
# corpus name -> (when, active index path); the key None holds the default corpus's name.
_pointers: dict[str | None, tuple[float, str]] = {}
_pointer_lock = threading.Lock()
_versions: dict[str | None, tuple[float, tuple[str, list[str]]]] = {}  # version_choices, by name
_generation = 0  # bumped by forget_active, so a lookup that raced an activation is not cached
_last_stale_warning = 0.0


# --- the active build ---------------------------------------------------------------------------


def _pointer(key: str | None, load: Callable[[], str]) -> str:
    """`load()`, cached for POINTER_TTL; the last known value while the database is unreachable."""
    global _last_stale_warning
    now = time.monotonic()
    cached = _pointers.get(key)
    if cached and now - cached[0] < POINTER_TTL:
        return cached[1]
    generation = _generation
    try:
        value = load()
    except DatabaseError as exc:
        if cached is None:
            raise DatabaseUnavailable("the database is unavailable and this server has not served this corpus "
                                      "since it started; retry shortly") from exc
        if now - _last_stale_warning > 60:
            _last_stale_warning = now
            logger.warning("database unavailable (%s); serving the last known active builds", exc)
        return cached[1]
    with _pointer_lock:
        if generation == _generation:
            _pointers[key] = (now, value)
    return value


def forget_active(name: str | None = None) -> None:
    """Drop the cached pointers of `name` (every version of it), or of every corpus: an activation
    calls this so the process that made it serves the new build at once."""
    global _generation
    with _pointer_lock:
        _generation += 1
        _versions.clear()
        _count.clear()
        _catalog.clear()
        if name is None:
            _pointers.clear()
        else:
            head = name.partition("@")[0]  # every version of a corpus: its bare name may serve any of them
            for key in [k for k in _pointers if k is not None and k.partition("@")[0] == head]:
                _pointers.pop(key, None)
            _pointers.pop(None, None)


def known_active_paths() -> dict[str, str]:
    """The active index path this process last saw per corpus (what it serves while the database is down)."""
    return {name: path for name, (_, path) in _pointers.items() if name is not None}


def active_index(name: str | None = None) -> Index:
    """The active index of a corpus (default corpus when name is None), opened once per process.

    The default corpus's name is cached like the pointers: a server asks for it on every request, and
    the query (a join on the active build) would cost more than the search it precedes.
    """
    corpus_name = name or _pointer(None, lambda: default_corpus().name)
    if not visible(corpus_name):
        corpus_get(corpus_name)  # raises CorpusNotFound, unless `name` is an alias of a visible corpus
    path = _pointer(corpus_name, lambda: active_index_path(corpus_name))
    if "://" not in path and not Path(path).is_dir():
        raise IndexUnavailable(f"the active index of corpus {corpus_name!r} is missing its files; an operator "
                               f"must rebuild it (manage.py build_index --corpus {corpus_name}) or activate "
                               "another build")
    from retrieval.search.index import INDEXES

    return INDEXES.get(build_location(path), slot=corpus_name)


def version_choices(name: str | None) -> tuple[str, list[str]]:
    """(the corpus's name, its versions with an active build) when an agent has a version to choose:
    more than one version, and the name does not pin one already. Otherwise (name, []).

    Cached like the active pointers (every tools/list and search asks), and forgotten with them."""
    if name and "@" in name:
        return name, []
    now = time.monotonic()
    cached = _versions.get(name)
    # The cache is shared by every caller: a key limited to other corpora gets no versions from it.
    known = cached[1] if cached and visible(cached[1][0]) else (name or "", [])
    if cached and now - cached[0] < POINTER_TTL:
        return known
    generation = _generation
    try:
        value = version_labels(name)
    except (DatabaseError, CorpusNotFound):
        return known
    with _pointer_lock:
        if generation == _generation:
            _versions[name] = (now, value)
    return value


def serving_name(name: str | None, version: str | None = None) -> str | None:
    """The name that serves `version` of the corpus called `name` (`<corpus>@<version>`), else `name`."""
    if not version:
        return name
    head, _versions = version_choices(name)
    return f"{head}@{version}"


def check_served(name: str) -> None:
    """Raises CorpusNotFound (or UnknownVersion) when `name` names no corpus the caller may see.

    While the database is unreachable, a name this process has served passes: its last known build
    answers, as the default corpus's does. Any other name re-raises the DatabaseError (503)."""
    try:
        corpus_get(name)
    except DatabaseError:
        if not (visible(name) and name in _pointers):
            raise


@lru_cache(maxsize=1)
def build_cache() -> BuildCache:
    return BuildCache(settings.DOCSMCP_INDEX_CACHE_DIR)


def build_location(index_path: str) -> Location:
    """Where this host opens a build from: a local root's directory as is; for an object-store root
    the host's local copy once fetched (retrieval/storage/cache.py), the store itself until then."""
    return build_cache().resolve(index_path)


# --- what a search needs beside the index ---------------------------------------------------------


def query_embedder(index: Index) -> EmbeddingProvider | None:
    """The provider that embeds queries for this index, or None for an FTS-only index; raises when the
    provider cannot serve this index (a build and a server configured differently)."""
    spec = index.metadata.embedding
    if not spec:
        return None
    embedder = cached_provider(spec["provider"], spec["model"], int(spec["dimensions"]), index.metadata.corpus)
    check_compatible(EmbeddingSpec.from_dict(spec), embedder)
    return embedder


def embedder_for(index: Index) -> EmbeddingProvider | None:
    """`query_embedder`, except that a misconfigured one costs the vector leg, never the search."""
    try:
        return query_embedder(index)
    except RetrievalError as exc:
        logger.warning("no query embedder for %s: %s", index.path, exc)
        return None


@lru_cache(maxsize=1)
def cursor_secret() -> bytes:
    """Key for cursor HMACs, derived from the Django secret so it is shared by every worker."""
    return hmac.new(settings.SECRET_KEY.encode(), b"docsmcp-cursor-v1", hashlib.sha256).digest()


def freshness(index: Index) -> dict[str, Any]:
    """Which version, revision and build time an answer comes from: every hit carries them, so an
    agent can tell a stale or other-version answer apart."""
    stats = index.metadata.stats
    return {"version": stats.get("version") or None, "revision": stats.get("revision") or None,
            "indexed_at": stats.get("indexed_at") or None}


# --- the operations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServedSearch:
    """A search of one corpus's active build, with the build it came from."""

    result: SearchResult
    index: Index
    request: SearchRequest
    freshness: dict[str, Any]

    @property
    def build_id(self) -> str:
        return self.index.build_id

    @property
    def corpus(self) -> str:
        return self.index.metadata.corpus

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


def _legs(index: Index, embedder: EmbeddingProvider | None, hybrid: bool) -> tuple[str, ...] | None:
    """None (every leg) for a hybrid search; else the vector leg alone when the corpus has vectors and a
    query embedder, or the full-text legs (an FTS-only corpus has nothing else to offer)."""
    if hybrid:
        return None
    from retrieval.search.legs import LEXICAL_LEGS, VECTOR

    return (VECTOR,) if index.has_vectors and embedder is not None else LEXICAL_LEGS


def corpus_search(name: str | None, request: SearchRequest, *, version: str | None = None,
                  hybrid: bool = True) -> ServedSearch:
    """`request` on the active build serving `name` (None: the default corpus; `<corpus>@<version>`, or
    `version`, one version); `hybrid=False` asks for the vector leg alone where there is one."""
    return corpus_search_batch(name, [request], version=version, hybrid=hybrid)[0]


def corpus_search_batch(name: str | None, requests: Sequence[SearchRequest], *, version: str | None = None,
                        hybrid: bool = True) -> list[ServedSearch]:
    """Several searches of one corpus; their queries are embedded together."""
    from retrieval.search.engine import search, search_batch

    index = active_index(serving_name(name, version))
    embedder = embedder_for(index)
    legs = _legs(index, embedder, hybrid)
    if legs is not None:
        requests = [replace(r, legs=legs) for r in requests]
    if len(requests) == 1:
        results = [search(index, requests[0], embedder=embedder, cursor_secret=cursor_secret())]
    else:
        results = search_batch(index, requests, embedder=embedder, cursor_secret=cursor_secret())
    fresh = freshness(index)
    for request, result in zip(requests, results, strict=True):  # the query log: one record per query
        querylog.observe_index(index, [(h.chunk_id, h.score) for h in result.hits],
                               query=request.query if len(requests) > 1 else None, coverage=result.coverage)
    return [ServedSearch(result, index, request, fresh) for request, result in zip(requests, results, strict=True)]


def corpus_read(name: str | None, chunk_id: str, context: int = 0, *, version: str | None = None) -> ServedRead:
    """The chunk `chunk_id` of the active build serving `name`, with `context` neighbours each side."""
    from retrieval.search.documents import get_chunk

    index = active_index(serving_name(name, version))
    window = get_chunk(index, chunk_id, context)
    querylog.observe_index(index, [(window.target.chunk_id, None)], target=window.target.chunk_id)
    return ServedRead(window, index, freshness(index))


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


# index path -> its documents: a build never changes, and listing it page by page reads it whole each time.
_catalogs: dict[str, list[DocumentSummary]] = {}
_catalog_lock = threading.Lock()


def corpus_documents(name: str | None, *, version: str | None = None) -> ServedDocuments:
    """Every document of the active build serving `name` (None: the default corpus), ordered by path."""
    from retrieval.search.documents import all_documents

    index = active_index(serving_name(name, version))
    key = str(index.path)
    documents = _catalogs.get(key)
    if documents is None:
        documents = all_documents(index)
        with _catalog_lock:
            if len(_catalogs) > 32:
                _catalogs.clear()
            _catalogs[key] = documents
    return ServedDocuments(documents, index, freshness(index))


def corpus_document(name: str | None, path: str, *, version: str | None = None) -> ServedDocument:
    """The whole document at `path` of the active build serving `name`; raises NotFound (or
    InvalidArgument for a path that could never name a document)."""
    from retrieval.search.documents import get_document

    index = active_index(serving_name(name, version))
    return ServedDocument(get_document(index, path), index, freshness(index))


def build_documents(index: Index, paths: Sequence[str], batch: int = 64) -> Iterator[Document]:
    """The documents at `paths` of one build (the one a corpus_documents answer came from), in that
    order, read `batch` at a time so a large corpus is never held whole."""
    from retrieval.search.documents import read_documents

    for start in range(0, len(paths), batch):
        yield from read_documents(index, list(paths[start:start + batch]))


# --- many corpora ---------------------------------------------------------------------------------


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


def served_corpora() -> list[Corpus]:
    """Markdown corpora with an active build that the caller may see, by name; other versions of a
    corpus are reached through `version`, not listed, so a search across all does not repeat a corpus."""
    return [c for c in corpus_list() if c.kind == Corpus.KIND_MARKDOWN and not c.version_of_id
            and c.active_build_id is not None]


_count: list[tuple[float, int]] = []  # (when, served_corpus_count), cached like the pointers


def readable_corpus_names() -> list[str]:
    """The names of served_corpora(), in one narrow query: asked on every tools/list and search at /mcp/."""
    from .access import visible_only

    return list(visible_only(Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, version_of__isnull=True,
                                                   active_build__isnull=False))
                .order_by("name").values_list("name", flat=True))


def served_corpus_count() -> int:
    """How many corpora this server serves, whoever asks: whether /mcp/ offers a choice of corpus does not
    depend on the caller's key (the names it may see do). Every tools/list and tools/call asks, so it is
    cached for POINTER_TTL like the active pointers; while the database is unreachable the last count holds."""
    now = time.monotonic()
    if _count and now - _count[0][0] < POINTER_TTL:
        return _count[0][1]
    try:
        value = Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, version_of__isnull=True,
                                      active_build__isnull=False).count()
    except DatabaseError:
        if not _count:
            raise
        return _count[0][1]
    _count[:] = [(now, value)]
    return value


@dataclass(frozen=True)
class CorpusCard:
    """What `list_corpora` says of one corpus: enough for an agent to choose it and to judge how current it is."""

    name: str
    title: str
    description: str
    versions: list[str]
    default_version: str | None
    pages: int
    chunks: int
    last_built: str | None
    freshness: dict[str, Any]
    score: float | None = None  # how well it matches the query, when one was given


# index path -> (its description, page titles, summary terms, page paths, lexicon), read from metadata.json and
# its mapped lexicon: listing and ranking corpora never open an index.
_profiles: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], frozenset[str], Any]] = {}


def _profile_of(path: str) -> tuple[str, tuple[str, ...], tuple[str, ...], frozenset[str], Any]:
    from retrieval.corpus_summary import summarize
    from retrieval.ingest.metadata import read_metadata

    known = _profiles.get(path)
    if known is None:
        location = build_location(path)
        try:
            metadata = read_metadata(location)
        except (RetrievalError, OSError) as exc:
            logger.warning("no corpus summary from %s: %s", path, exc)
            return "", (), (), frozenset(), None
        summary = metadata.extra.get("summary") or summarize(metadata.files)  # builds made before summaries
        description = metadata.corpus_description if metadata.corpus_description != metadata.corpus else ""
        known = (description, tuple(t for t in metadata.files.values() if t), tuple(summary.get("terms", ())),
                 frozenset(metadata.files), _lexicon_of(location))
        with _pointer_lock:
            if len(_profiles) > 4096:
                _profiles.clear()
            _profiles[path] = known
    return known


def _lexicon_of(build: Any) -> Any:
    """The build's lexicon (retrieval/ingest/lexicon.py); None for a build made before lexicons (ranked without)."""
    from retrieval import storage
    from retrieval.ingest.lexicon import read_lexicon
    from retrieval.ingest.mapped import MAPPED_DIR

    return read_lexicon(storage.join(build, MAPPED_DIR))


# Every served corpus's card and ranking profile, whoever asks, with the catalog signature they were made at
# (_catalog_signature); a caller's view filters them by name. Made again when the signature moves.
_catalog: list[tuple[Any, list[tuple[CorpusCard, Any, frozenset[str]]]]] = []


def _catalog_signature() -> tuple:
    """Changes whenever a card could: a corpus added, deleted or saved (an activation saves `updated_at`), or a
    newer commit seen on its git source (written without touching `updated_at`). One aggregate query."""
    from django.db.models import Count, Max, Sum

    return tuple(Corpus.objects.aggregate(Count("id"), Max("updated_at"), Max("latest_commit_at"),
                                          Sum("active_build_id")).values())


def _catalog_cards() -> list[tuple[CorpusCard, Any, frozenset[str]]]:
    """(card, profile, page paths) of every served corpus, by name, unfiltered: two queries however many corpora."""
    from retrieval.corpus_summary import CorpusProfile

    from .access import limited_to

    signature = _catalog_signature()
    if _catalog and _catalog[0][0] == signature:
        return _catalog[0][1]
    with limited_to(None):
        heads = [c for c in Corpus.objects.select_related("active_build").filter(
            kind=Corpus.KIND_MARKDOWN, version_of__isnull=True, active_build__isnull=False).order_by("name")]
        members: dict[int, list[Corpus]] = {}
        for member in Corpus.objects.select_related("active_build").filter(
                version_of__in=[c.pk for c in heads]).order_by("version", "pk"):
            members.setdefault(member.version_of_id, []).append(member)
    out = []
    for corpus in heads:
        family = [corpus, *members.get(corpus.pk, [])]
        serving = corpus
        if corpus.default_version and corpus.default_version != corpus.version:
            serving = next((m for m in family[1:] if m.version == corpus.default_version), corpus)
        build = serving.active_build or corpus.active_build
        stats = (build.stats or {}) if build else {}
        versions = [m.version for m in family if m.active_build_id and m.version]
        description, titles, terms, pages, lexicon = _profile_of(build.index_path) if build and build.index_path \
            else ("", (), (), frozenset(), None)
        fresh = {"version": stats.get("version") or None, "revision": stats.get("revision") or None,
                 "indexed_at": stats.get("indexed_at") or None, "stale": corpus.is_stale}
        card = CorpusCard(
            name=corpus.name, title=str((corpus.settings or {}).get("title") or corpus.name),
            description=corpus.description or description, versions=versions,
            default_version=(serving.version or None) if versions else (corpus.version or None),
            pages=int(stats.get("total_files") or 0), chunks=int(stats.get("total_chunks") or 0),
            last_built=stats.get("indexed_at") or None, freshness=fresh)
        out.append((card, CorpusProfile(corpus.name, corpus.description or description, titles, terms, lexicon), pages))
    with _pointer_lock:
        _catalog[:] = [(signature, out)]
    return out


def corpus_cards(query: str | None = None) -> list[CorpusCard]:
    """Every corpus the caller may read, by name; with `query`, best match first (the words and identifiers
    of its pages, its name, description, page titles and the build's summary terms:
    retrieval/corpus_summary.py).

    The cards are made once per change of the catalog (_catalog_cards), so listing 1,000 corpora costs an
    aggregate query and the ranking, not a read of every row."""
    from retrieval.corpus_summary import rank_corpora
    from retrieval.ingest.lexicon import query_terms

    from .access import visible

    known = [(card, profile) for card, profile, _pages in _catalog_cards() if visible(card.name)]
    if not query:
        return [card for card, _profile in known]
    by_name = {card.name: card for card, _profile in known}
    ranked = rank_corpora(query, [p for _c, p in known], query_terms(query))
    return [replace(by_name[name], score=score) for name, score in ranked]


def corpora_holding(page: str) -> list[str]:
    """The readable corpora whose served build has the page `page` (a chunk ID's path), by name."""
    from .access import visible

    return [card.name for card, _profile, pages in _catalog_cards() if page in pages and visible(card.name)]


def best_corpora(query: str, limit: int) -> list[str]:
    """The `limit` readable corpora that best match `query` (list_corpora's ranking), only those that match
    at all: what a search without `corpus` covers on a server of more corpora than it can search at once."""
    return [card.name for card in corpus_cards(query)[:limit] if card.score]


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

    @property
    def next_cursor(self) -> str | None:
        return self.cursor_after(len(self.hits)) if self.more else None

    def cursor_after(self, kept: int) -> str:
        """The cursor of the page that starts after the first `kept` hits of this one."""
        from retrieval.search.cursor import CursorState, encode_cursor
        from retrieval.search.engine import DEFAULT_DEPTH, check_query

        return encode_cursor(cursor_secret(), query=check_query(self.request.query), filters={},
                             build_id=self.builds, state=CursorState(self.offset + kept, self.limit, DEFAULT_DEPTH))


def _builds_key(indexes: Sequence[tuple[str, Index]]) -> str:
    text = "\n".join(f"{name}={index.build_id}" for name, index in sorted(indexes, key=lambda item: item[0]))
    return "corpora:" + hashlib.sha256(text.encode()).hexdigest()[:24]


def corpora_search(names: Sequence[str], request: SearchRequest) -> CorporaSearch:
    """`request` (query, limit, cursor; no filters: taxonomies differ between corpora) on each corpus
    named, merged by score. Each hit keeps the chunk ID it has on its corpus's own endpoint."""
    from retrieval.search.coverage import NOT_COVERED, Coverage
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
    from .access import visible_only

    wanted_names = list(dict.fromkeys(names))
    corpora = {c.name: c for c in visible_only(Corpus.objects.filter(
        name__in=wanted_names, kind=Corpus.KIND_MARKDOWN, version_of__isnull=True, active_build__isnull=False)
        .select_related("active_build").only("name", "description", "version", "default_version",
                                             "active_build__index_path"))}
    targets = [corpora[name] for name in wanted_names if name in corpora]
    _remember_pointers(targets)
    indexes = [(c.name, active_index(c.name)) for c in targets]
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
    pending = [(position, _ranking_pool().submit(ranked, position)) for position in chosen[1:]]
    if chosen:
        per_corpus[chosen[0]] = ranked(chosen[0])
    for position, future in pending:
        per_corpus[position] = future.result()
    merged = merge_hits(per_corpus, wanted + 1)
    verdicts = {position: assess_ranking(indexes[position][1], query, per_corpus[position][0].ranking)
                for position in chosen if per_corpus[position]}
    page = merged[offset:offset + limit]
    hits: dict[tuple[int, int], CorpusHit] = {}
    for position, (corpus, (_name, index)) in enumerate(zip(targets, indexes, strict=True)):
        mine = [c for c in page if c.corpus == position]
        dressed = dress(index, query, [(c.item, c.score) for c in mine], mine[0].ranking) if mine else []
        fresh = freshness(index)
        for candidate, hit in zip(mine, dressed, strict=True):
            hits[candidate.order] = CorpusHit(corpus, hit, candidate.order, fresh)
        if position not in chosen:
            continue
        # The query log: a record per corpus searched, with the hits shown from it and how many it had.
        found = per_corpus[position]
        querylog.observe_index(index, [(h.chunk_id, h.score) for h in dressed],
                               total=len(found[0].ranking.items) if found else 0, coverage=verdicts.get(position))
    best = max(verdicts.values(), key=lambda c: c.score, default=None)
    return CorporaSearch([hits[c.order] for c in page], request, offset, limit, builds, len(merged) > wanted,
                         tuple(indexes[position][0] for position in chosen),
                         best or Coverage(NOT_COVERED, 0.0))


CORPORA_SEARCH_THREADS = 4
_ranking_executor: tuple[int, ThreadPoolExecutor] | None = None


def _ranking_pool() -> ThreadPoolExecutor:
    """The process's threads for ranking corpora side by side; made once per process (a forked worker
    makes its own), since starting threads for every search cost more than a small corpus's ranking."""
    global _ranking_executor
    if _ranking_executor is None or _ranking_executor[0] != os.getpid():
        with _pointer_lock:
            if _ranking_executor is None or _ranking_executor[0] != os.getpid():
                _ranking_executor = (os.getpid(), ThreadPoolExecutor(CORPORA_SEARCH_THREADS,
                                                                     thread_name_prefix="docsmcp-corpora"))
    return _ranking_executor[1]


def _remember_pointers(corpora: Sequence[Corpus]) -> None:
    """Caches the active-build pointers of corpora served under their own row (no default version of
    another row), read with them in one query: a search across 20 corpora would otherwise look each up
    in a query of its own whenever its pointer is older than POINTER_TTL."""
    now = time.monotonic()
    with _pointer_lock:
        for corpus in corpora:
            build = corpus.active_build
            if corpus.default_version and corpus.default_version != corpus.version or build is None:
                continue
            cached = _pointers.get(corpus.name)
            if build.index_path and (cached is None or now - cached[0] >= POINTER_TTL):
                _pointers[corpus.name] = (now, build.index_path)


# (corpus name, build directory, description) -> its profile for routing, from the open index's metadata
_route_profiles: dict[tuple[str, str, str], Any] = {}


def _routed(query: str, corpora: Sequence[Corpus], indexes: Sequence[tuple[str, Index]],
            vectors: Sequence[Any]) -> list[int]:
    """Positions of the corpora whose ranking a search across them runs (retrieval/search/routing.py): the
    DOCSMCP_SEARCH_ROUTE_TOP that best match the query, by their chunks' best cosine for a semantic model's
    corpora, by their pages' words (the lexicon) for the others."""
    from retrieval.corpus_summary import CorpusProfile, match_scores, profile_scores, summarize
    from retrieval.ingest.lexicon import query_terms
    from retrieval.search.routing import affinity, route

    keep = settings.DOCSMCP_SEARCH_ROUTE_TOP
    if keep <= 0 or len(indexes) <= keep:
        return list(range(len(indexes)))
    profiles = []
    for corpus, (name, index) in zip(corpora, indexes, strict=True):
        key = (name, str(index.path), corpus.description)
        profile = _route_profiles.get(key)
        if profile is None:
            metadata = index.metadata
            built = metadata.corpus_description if metadata.corpus_description != metadata.corpus else ""
            summary = metadata.extra.get("summary") or summarize(metadata.files)
            profile = CorpusProfile(name, corpus.description or built, tuple(t for t in metadata.files.values() if t),
                                    tuple(summary.get("terms", ())), _lexicon_of(index.path))
            if len(_route_profiles) > 4096:
                _route_profiles.clear()
            _route_profiles[key] = profile
        profiles.append(profile)
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


# --- warming --------------------------------------------------------------------------------------


def warm(index: Index) -> None:
    """Loads an opened build and the embedding model its queries need, through a real search."""
    from retrieval.search.warm import warm_index

    warm_index(index, query_embedder(index))


def _warm_in_background(index: Index) -> None:
    """`warm` on IndexCache's thread, which then ends: its database connection must not outlive it."""
    try:
        warm(index)
    finally:
        connections.close_all()


def _warm_model(name: str) -> None:
    """Loads the query embedding model of one corpus without loading its index (only its metadata.json is
    read), so a worker that pins no corpus does not make its first search load the model."""
    from retrieval.search.index import Index

    try:
        embedder = query_embedder(Index(build_location(active_index_path(name))))
        if embedder is not None:
            embedder.embed_query("warm up")
    except Exception as exc:  # the first search loads it instead, and reports what is wrong
        logger.warning("query model of corpus %s not loaded: %s", name, exc)


def pinned_corpora(names: Sequence[str]) -> list[str]:
    """The corpora a serving process loads at start and never evicts: DOCSMCP_PINNED_CORPORA (comma-separated
    names, or `*` for all); unset, every corpus while there are at most DOCSMCP_PIN_ALL_MAX of them (a small
    server starts as it always did, everything warm), else none (each opens on its first use)."""
    wanted = settings.DOCSMCP_PINNED_CORPORA.strip()
    if wanted == "*":
        return list(names)
    if wanted:
        chosen = {n.strip() for n in wanted.split(",") if n.strip()}
        return [n for n in names if n in chosen]
    return list(names) if len(names) <= settings.DOCSMCP_PIN_ALL_MAX else []


def serve_warm(notify: Callable[[], None] | None = None, watch: bool = True) -> dict:
    """Warms the active build of every pinned corpus (pinned_corpora); then (with `watch`) warms new
    activations of the corpora this process has loaded as they come. Other corpora open on first use
    and stay while they fit DOCSMCP_SERVING_MEMORY_MB (retrieval.search.index.IndexCache).

    `notify` is called between corpora, so a supervisor that expects signs of life (gunicorn's
    worker timeout) does not kill a process warming a large corpus.
    """
    from retrieval.embeddings.local import set_intra_op_threads
    from retrieval.search.index import INDEXES

    warming.begin()
    started = time.perf_counter()
    set_intra_op_threads(warming.model_threads())
    try:
        names = served_corpus_names()
    except Exception as exc:  # no database at start: serve what requests bring, opened on first use
        logger.warning("warming skipped: the corpora cannot be listed (%s)", exc)
        names = []
    served, names = names, pinned_corpora(names)
    if served and not names:  # every corpus opens on first use: load what any first search would need now
        _warm_model(served[0])
        load_engine()
    budget = settings.DOCSMCP_SERVING_MEMORY_MB
    INDEXES.configure(budget_bytes=budget * 1024 * 1024 if budget else None, pinned=frozenset(names),
                      max_open=None if budget else INDEXES.max_open)
    _remember_default()
    for name in names:
        began = time.perf_counter()
        try:
            warm(active_index(name))
            warming.record(name, {"state": "ok", "seconds": round(time.perf_counter() - began, 3)})
        except (RetrievalError, CorpusError) as exc:
            warming.record(name, {"state": "error", "error": str(exc)})
            logger.warning("corpus %s not warmed: %s", name, exc)
        except Exception as exc:  # never keep a worker from serving: its requests report what is wrong
            warming.record(name, {"state": "error", "error": str(exc)})
            logger.exception("corpus %s not warmed", name)
        if notify is not None:
            notify()
    close_old_connections()
    # What is loaded now lives as long as the process: frozen, the collector's full passes skip it.
    # Unfrozen, one pass over a warm worker's 140k objects took 50-100 ms every few hundred
    # requests, stalling whichever searches were running (docs/BENCHMARKS.md).
    gc.collect()
    gc.freeze()
    INDEXES.warmer = _warm_in_background
    warming.ready()
    logger.info("warmed %d corpora in %.2fs", len(names), time.perf_counter() - started)
    if watch:
        start_watcher()
    return warming.warm_state()


def _remember_default() -> None:
    """Looks up the default corpus's name and its active build, as warming does every pinned corpus's, so a
    worker that has not served it yet still answers /mcp/ from it through a database outage."""
    try:
        name = _pointer(None, lambda: default_corpus().name)
        _pointer(name, lambda: active_index_path(name))
    except Exception as exc:  # no database or no corpus yet: the first request asks again
        logger.info("default corpus not looked up at start: %s", exc)


_watcher: threading.Thread | None = None


def start_watcher(interval: float = POINTER_TTL) -> None:
    """A daemon thread that notices activations without waiting for a request to ask."""
    global _watcher
    if _watcher is not None and _watcher.is_alive():
        return
    _watcher = threading.Thread(target=_watch, args=(interval,), name="docsmcp-activation-watcher", daemon=True)
    _watcher.start()


def _watch(interval: float) -> None:
    while True:
        time.sleep(interval)
        watch_once()


def watch_once() -> None:
    """One look at the active builds: a loaded corpus whose build changed starts warming the new one in the
    background (IndexCache); a corpus not loaded opens its new build on its first use, not here."""
    from retrieval.search.index import INDEXES

    try:
        _pointer(None, lambda: default_corpus().name)  # kept current where no request asked for it
        for name in served_corpus_names():
            if INDEXES.loaded(name):
                active_index(name)
    except Exception as exc:  # the database may be down: requests keep the last known builds
        logger.debug("activation watcher: %s", exc)
    finally:
        close_old_connections()
