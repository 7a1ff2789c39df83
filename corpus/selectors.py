"""Reads of the corpus app, including the one other apps need most: the active index of a corpus."""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DatabaseError

from retrieval.embeddings import check_compatible
from retrieval.embeddings.base import EmbeddingProvider, EmbeddingSpec
from retrieval.errors import IndexUnavailable
from retrieval.storage import Location
from retrieval.storage.cache import BuildCache

from .access import visible, visible_only
from .errors import CorpusNotFound, DatabaseUnavailable, NoActiveBuild, UnknownVersion
from .models import BuildRun, Corpus
from .providers import cached_provider

if TYPE_CHECKING:  # the index module loads Arrow: only a process that opens an index pays for it
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


def corpus_list() -> list[Corpus]:
    """Every corpus the caller may see (corpus.access); another version of a corpus is listed as
    `<corpus>@<version>` beside it."""
    return list(visible_only(Corpus.objects.select_related("active_build")).order_by("name"))


def corpus_get(name: str) -> Corpus:
    """By name or alias, or `<corpus>@<version>` for one version; a corpus the caller may not see is not found.

    The row itself, never its default version: writes (update, delete, build) act on what was named.
    Reads that serve documentation go through `corpus_serving`.
    """
    corpora = visible_only(Corpus.objects.select_related("active_build"))
    corpus = corpora.filter(name=name).first()
    if corpus is None and "@" in name:
        head_name, _, label = name.partition("@")
        head = corpus_get(head_name).family
        for member in family_members(head):
            if member.version == label:
                return member
        raise UnknownVersion(f"corpus {head.name!r} has no version {label!r}; versions: "
                             f"{describe_versions(head)}. Ask for one of these (e.g. {head.name}@<version>), "
                             "or omit the version for the default")
    if corpus is None:
        for candidate in corpora.exclude(aliases=[]):
            if name in (candidate.aliases or []):
                return candidate
        names = ", ".join(corpora.order_by("name").values_list("name", flat=True)) or "none yet"
        raise CorpusNotFound(f"corpus {name!r} not found; available: {names}")
    return corpus


def family_members(corpus: Corpus) -> list[Corpus]:
    """Every version of the corpus users name `corpus` (the row itself first), by label."""
    head = corpus.family
    members = [head, *head.versions.select_related("active_build").order_by("version", "pk")]
    return members


def default_version(corpus: Corpus) -> Corpus:
    """The version served under the corpus's own name: the head's default_version, else the head."""
    head = corpus.family
    if head.default_version and head.default_version != head.version:
        for member in head.versions.select_related("active_build"):
            if member.version == head.default_version:
                return member
    return head


def served_versions(corpus: Corpus) -> list[Corpus]:
    """Versions with an active build; more than one means agents see a `version` choice."""
    return [m for m in family_members(corpus) if m.active_build_id and m.version]


def describe_versions(corpus: Corpus) -> str:
    default = default_version(corpus).version
    labels = [m.version + (" (default)" if m.version == default else "") + ("" if m.active_build_id else
                                                                            " (not built yet)")
              for m in family_members(corpus) if m.version]
    return ", ".join(labels) or "none labelled"


def corpus_serving(name: str) -> Corpus:
    """The row that answers for `name`: `<corpus>@<version>` as named, a bare corpus name its default version."""
    corpus = corpus_get(name)
    return corpus if "@" in name or corpus.version_of_id else default_version(corpus)


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
        head = (corpus_get(name) if name else default_corpus()).family
        versions = [m.version for m in served_versions(head)]
    except (DatabaseError, CorpusNotFound):
        return known
    value = (head.name, versions if len(versions) > 1 else [])
    with _pointer_lock:
        if generation == _generation:
            _versions[name] = (now, value)
    return value


def default_corpus() -> Corpus:
    name = settings.DOCSMCP_DEFAULT_CORPUS
    if name:
        return corpus_get(name)
    corpus = Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, version_of__isnull=True).order_by("created_at").select_related("active_build").first()
    if corpus is not None and not visible(corpus.name):
        raise CorpusNotFound(f"the default corpus is outside this API key's corpora; name one of them "
                             f"(/mcp/c/<corpus>/): {', '.join(c.name for c in corpus_list()) or 'none'}")
    if corpus is None:
        raise CorpusNotFound("no corpus is registered yet; run `manage.py build_index --corpus NAME --source DIR`")
    return corpus


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


def _load_active_path(name: str) -> str:
    corpus = corpus_serving(name)
    build = corpus.active_build
    if build is None or not build.index_path:
        raise NoActiveBuild(f"corpus {corpus.name!r} has no active build yet; run "
                            f"`manage.py build_index --corpus {corpus.name}` first")
    return build.index_path


def forget_active(name: str | None = None) -> None:
    global _generation
    with _pointer_lock:
        _generation += 1
        _versions.clear()
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
    path = _pointer(corpus_name, lambda: _load_active_path(corpus_name))
    if "://" not in path and not Path(path).is_dir():
        raise IndexUnavailable(f"the active index of corpus {corpus_name!r} is missing its files; an operator "
                               f"must rebuild it (manage.py build_index --corpus {corpus_name}) or activate "
                               "another build")
    from retrieval.search.index import INDEXES

    return INDEXES.get(build_location(path), slot=corpus_name)


@lru_cache(maxsize=1)
def build_cache() -> BuildCache:
    return BuildCache(Path(settings.DOCSMCP_INDEX_CACHE_DIR))


def build_location(index_path: str) -> Location:
    """Where this host opens a build from: a local root's directory as is; for an object-store root
    the host's local copy once fetched (retrieval/storage/cache.py), the store itself until then."""
    return build_cache().resolve(index_path)


def query_embedder(index: Index) -> EmbeddingProvider | None:
    """The provider that embeds queries for this index, or None for an FTS-only index."""
    spec = index.metadata.embedding
    if not spec:
        return None
    embedder = cached_provider(spec["provider"], spec["model"], int(spec["dimensions"]), index.metadata.corpus)
    check_compatible(EmbeddingSpec.from_dict(spec), embedder)
    return embedder


@lru_cache(maxsize=1)
def cursor_secret() -> bytes:
    """Key for cursor HMACs, derived from the Django secret so it is shared by every worker."""
    return hmac.new(settings.SECRET_KEY.encode(), b"docsmcp-cursor-v1", hashlib.sha256).digest()


def health_summary() -> list[dict]:
    out = []
    for corpus in corpus_list():
        build = corpus.active_build
        out.append({
            "corpus": corpus.name,
            "active_build": build.build_id if build else None,
            "chunks": (build.stats or {}).get("total_chunks") if build else None,
            "activated_at": build.activated_at.isoformat() if build and build.activated_at else None,
            "index_path": build.index_path if build else None,
        })
    return out


def build_get(build_id: str) -> BuildRun:
    from .errors import BuildNotFound

    build = BuildRun.objects.filter(build_id=build_id).select_related("corpus").first()
    if build is None:
        raise BuildNotFound(f"build {build_id!r} not found")
    return build


def build_list(*, corpus: Corpus, status: str | None = None):
    """A corpus's builds, newest first, optionally of one status (a QuerySet, for pagination)."""
    builds = corpus.builds.select_related("corpus").order_by("-created_at", "-pk")
    return builds.filter(status=status) if status else builds


def corpus_build_get(*, corpus: Corpus, build_id: str) -> BuildRun:
    """A build that belongs to `corpus`; another corpus's build is reported as not found."""
    from .errors import BuildNotFound

    build = corpus.builds.filter(build_id=build_id).select_related("corpus").first()
    if build is None:
        raise BuildNotFound(f"build {build_id!r} not found in corpus {corpus.name!r}; list its builds "
                            "to find the ID")
    return build


def fix_list(*, corpus: Corpus, status: str | None = None):
    """A corpus's fix proposals, newest first, optionally of one status (a QuerySet, for pagination)."""
    from .models import FixProposal

    proposals = FixProposal.objects.filter(corpus=corpus).select_related("corpus").order_by("-created_at", "-pk")
    return proposals.filter(status=status) if status else proposals


def fix_get(*, corpus: Corpus, proposal_id: int):
    """A fix proposal of `corpus`; another corpus's proposal is reported as not found."""
    from .errors import FixNotFound
    from .models import FixProposal

    proposal = FixProposal.objects.filter(corpus=corpus, pk=proposal_id).select_related("corpus").first()
    if proposal is None:
        raise FixNotFound(f"fix proposal #{proposal_id} not found in corpus {corpus.name!r}; list its proposals "
                          "to find the ID")
    return proposal
