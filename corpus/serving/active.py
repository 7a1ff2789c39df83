"""The active build of each corpus, resolved once per call and handed down (`resolve` -> `Active`).

A worker caches each corpus's active-build pointer (with the corpus's coverage thresholds) on STATE for
POINTER_TTL seconds and opens each build once (retrieval.search.index_cache.INDEXES). While the database cannot
be reached it keeps the last pointer it saw, however old, so searches and reads keep answering from the
index on disk.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError

from retrieval.embeddings import check_compatible
from retrieval.embeddings.base import EmbeddingProvider, EmbeddingSpec
from retrieval.errors import IndexUnavailable, RetrievalError
from retrieval.storage import Location

from ..access import visible
from ..errors import CorpusNotFound, DatabaseUnavailable, NoActiveBuild
from ..models import Corpus
from ..providers import cached_provider
from ..selectors import corpus_get, corpus_list, corpus_serving, default_corpus, version_labels
from .state import STATE

if TYPE_CHECKING:
    from retrieval.search.coverage import Thresholds
    from retrieval.search.index import Index

logger = logging.getLogger("docsmcp.corpus")


@dataclass(frozen=True)
class Active:
    """What one call serves from: the name it answers under, the opened build and the corpus's coverage
    thresholds (settings.coverage; None: the engine's)."""

    name: str  # `<corpus>@<version>` for a version
    index: Index
    thresholds: Thresholds | None = None


def thresholds_of(corpus: Corpus) -> Thresholds | None:
    """The corpus's settings.coverage as the engine's Thresholds (checked when the settings were saved)."""
    wanted = (corpus.settings or {}).get("coverage")
    if not isinstance(wanted, dict):
        return None
    from retrieval.search.coverage import Thresholds

    try:
        return Thresholds(covered=float(wanted["covered"]), partial=float(wanted["partial"]))
    except (KeyError, TypeError, ValueError) as exc:  # saved before the check: the defaults answer
        logger.warning("corpus %s: settings.coverage ignored (%s)", corpus.name, exc)
        return None


def _pointer(key: str | None, load: Any) -> Any:
    """`load()`, cached for POINTER_TTL; the last known value while the database is unreachable."""
    fresh, cached = STATE.fresh("pointer", key)
    if fresh:
        return cached
    began = STATE.began()
    try:
        value = load()
    except DatabaseError as exc:
        if not STATE.known("pointer", key):
            _outage(exc, f"corpus {key or '(default)'} not served since start: refused")
            raise DatabaseUnavailable("the database is unavailable and this server has not served this corpus "
                                      "since it started; retry shortly") from exc
        _outage(exc, "serving the last known active builds")
        return cached
    return STATE.remember("pointer", key, value, began, load)


def _outage(exc: DatabaseError, doing: str) -> None:
    """Logs, at most once a minute per process, that the database is away and what serving does instead:
    every call meets the outage, and a line a minute is enough to say so."""
    now = STATE.clock()
    if now - STATE.last_stale_warning > 60:
        STATE.last_stale_warning = now
        logger.warning("database unavailable (%s); %s", exc, doing)


def _load_pointer(name: str) -> tuple[str, Thresholds | None]:
    corpus = corpus_serving(name)
    build = corpus.active_build
    if build is None or not build.index_path:
        raise NoActiveBuild(f"corpus {corpus.name!r} has no active build yet; run "
                            f"`manage.py build_index --corpus {corpus.name}` first")
    return build.index_path, thresholds_of(corpus)


def remember_default(*, build: bool = True) -> None:
    """Looks up the default corpus's name (and, with `build`, its active build), as warming does every
    pinned corpus's, so a worker that has not served it yet still answers /mcp/ from it through a database
    outage."""
    try:
        name = _pointer(None, lambda: default_corpus().name)
        if build:
            _pointer(name, lambda: _load_pointer(name))
    except Exception as exc:  # no database or no corpus yet: the first request asks again
        logger.info("default corpus not looked up at start: %s", exc)


def resolve(name: str | None = None, version: str | None = None) -> Active:
    """The active build serving `name` (None: the default corpus; `<corpus>@<version>`, or `version`, one
    version), opened once per process. Every step of a call takes this `Active` rather than a name, so a
    call looks its build up once.

    The default corpus's name is cached like the pointers: a server asks for it on every request, and the
    query (a join on the active build) would cost more than the search it precedes."""
    corpus_name = serving_name(name, version) or _pointer(None, lambda: default_corpus().name)
    if not visible(corpus_name):
        corpus_get(corpus_name)  # raises CorpusNotFound, unless `name` is an alias of a visible corpus
    path, thresholds = _pointer(corpus_name, lambda: _load_pointer(corpus_name))
    if "://" not in path and not Path(path).is_dir():
        raise IndexUnavailable(f"the active index of corpus {corpus_name!r} is missing its files; an operator "
                               f"must rebuild it (manage.py build_index --corpus {corpus_name}) or activate "
                               "another build")
    index = STATE.indexes.get(build_location(path), slot=corpus_name)
    return Active(corpus_name, index, thresholds)


def active_index(name: str | None = None) -> Index:
    """The active index of a corpus (default corpus when name is None), opened once per process."""
    return resolve(name).index


def forget_active(name: str | None = None) -> None:
    """STATE.forget: what an activation calls so the process that made it serves the new build at once."""
    STATE.forget(name)


def known_active_paths() -> dict[str, str]:
    """The active index path this process last saw per corpus (what it serves while the database is down)."""
    return {name: value[0] for name, value in STATE.pointers().items()}


def version_choices(name: str | None) -> tuple[str, list[str]]:
    """(the corpus's name, its versions with an active build) when an agent has a version to choose:
    more than one version, and the name does not pin one already. Otherwise (name, []).

    Cached like the active pointers (every tools/list and search asks), and forgotten with them."""
    if name and "@" in name:
        return name, []
    fresh, cached = STATE.fresh("versions", name)
    # The cache is shared by every caller: a key limited to other corpora gets no versions from it.
    known = cached if cached and visible(cached[0]) else (name or "", [])
    if fresh:
        return known
    began = STATE.began()
    try:
        value = version_labels(name)
    except CorpusNotFound:  # the lookup that follows says so
        return known
    except DatabaseError as exc:  # the versions last seen (none offered when none were)
        _outage(exc, "offering the last known versions")
        return known
    return STATE.remember("versions", name, value, began, lambda: version_labels(name))


def serving_name(name: str | None, version: str | None = None) -> str | None:
    """The name that serves `version` of the corpus called `name` (`<corpus>@<version>`), else `name`."""
    if not version:
        return name
    head, _versions = version_choices(name)
    return f"{head}@{version}"


def check_served(name: str) -> None:
    """Raises CorpusNotFound (or UnknownVersion) when `name` names no corpus the caller may see.

    Cached like the pointers, so a warm /mcp/c/<corpus>/ call reads no row. The cache is shared by every
    caller: a hit counts only for a caller who may see the name. While the database is unreachable, a name
    this process has served passes: its last known build answers. Any other name re-raises the
    DatabaseError (503)."""
    fresh, _ = STATE.fresh("served", name)
    if fresh and visible(name):
        return
    began = STATE.began()
    try:
        corpus_get(name)
    except DatabaseError as exc:
        if not (visible(name) and STATE.known("pointer", name)):
            raise  # each surface's table answers it 503: a name never served cannot be told from a missing one
        _outage(exc, "passing the corpora this process has served")
        return
    STATE.remember("served", name, True, began, lambda: bool(corpus_get(name)))


def build_location(index_path: str) -> Location:
    """Where this host opens a build from: a local root's directory as is; for an object-store root
    the host's local copy once fetched (retrieval/storage/cache.py), the store itself until then."""
    return STATE.build_cache().resolve(index_path)


def build_cache() -> Any:
    return STATE.build_cache()


def cursor_secret() -> bytes:
    return STATE.cursor_secret()


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


def freshness(index: Index) -> dict[str, Any]:
    """Which version, revision and build time an answer comes from: every hit carries them, so an
    agent can tell a stale or other-version answer apart."""
    stats = index.metadata.stats
    return {"version": stats.get("version") or None, "revision": stats.get("revision") or None,
            "indexed_at": stats.get("indexed_at") or None}


# --- which corpora are served ---------------------------------------------------------------------


def served_corpora() -> list[Corpus]:
    """Markdown corpora with an active build that the caller may see, by name; other versions of a
    corpus are reached through `version`, not listed, so a search across all does not repeat a corpus."""
    return [c for c in corpus_list() if c.kind == Corpus.KIND_MARKDOWN and not c.version_of_id
            and c.active_build_id is not None]


def readable_corpus_names() -> list[str]:
    """The names of served_corpora(), in one narrow query: asked on every tools/list and search at /mcp/."""
    from ..access import visible_only

    return list(visible_only(Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, version_of__isnull=True,
                                                   active_build__isnull=False))
                .order_by("name").values_list("name", flat=True))


def served_corpus_count() -> int:
    """How many corpora this server serves, whoever asks: whether /mcp/ offers a choice of corpus does not
    depend on the caller's key (the names it may see do). Every tools/list and tools/call asks, so it is
    cached for POINTER_TTL like the active pointers; while the database is unreachable the last count holds."""
    fresh, cached = STATE.fresh("count", None)
    if fresh:
        return cached
    began = STATE.began()
    try:
        value = _count_served()
    except DatabaseError as exc:
        if cached is None:
            _outage(exc, "the number of corpora served is unknown")
            raise
        _outage(exc, "counting the corpora as last seen")
        return cached
    return STATE.remember("count", None, value, began, _count_served)


def _count_served() -> int:
    return Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, version_of__isnull=True,
                                 active_build__isnull=False).count()
