"""Reads of the corpus app, including the one other apps need most: the active index of a corpus."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from retrieval.embeddings import check_compatible
from retrieval.embeddings.base import EmbeddingProvider, EmbeddingSpec
from retrieval.search.index import INDEXES, Index

from .access import visible, visible_only
from .errors import CorpusNotFound, NoActiveBuild
from .models import BuildRun, Corpus
from .providers import cached_provider

POINTER_TTL = 1.0  # seconds a worker trusts its cached active-build pointer
_pointers: dict[str, tuple[float, str]] = {}
_default_name: tuple[float, str] | None = None  # (when, name) of the default corpus, for POINTER_TTL
_pointer_lock = threading.Lock()


def corpus_list() -> list[Corpus]:
    """Every corpus the caller may see (corpus.access)."""
    return list(visible_only(Corpus.objects.select_related("active_build")).order_by("name"))


def corpus_get(name: str) -> Corpus:
    """By name or alias; a corpus the caller may not see is not found."""
    corpora = visible_only(Corpus.objects.select_related("active_build"))
    corpus = corpora.filter(name=name).first()
    if corpus is None:
        for candidate in corpora.exclude(aliases=[]):
            if name in (candidate.aliases or []):
                return candidate
        names = ", ".join(corpora.order_by("name").values_list("name", flat=True)) or "none yet"
        raise CorpusNotFound(f"corpus {name!r} not found; available: {names}")
    return corpus


def default_corpus() -> Corpus:
    name = settings.DOCSMCP_DEFAULT_CORPUS
    if name:
        return corpus_get(name)
    corpus = Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN).order_by("created_at").select_related("active_build").first()
    if corpus is not None and not visible(corpus.name):
        raise CorpusNotFound(f"the default corpus is outside this API key's corpora; name one of them "
                             f"(/mcp/c/<corpus>/): {', '.join(c.name for c in corpus_list()) or 'none'}")
    if corpus is None:
        raise CorpusNotFound("no corpus is registered yet; run `manage.py build_index --corpus NAME --source DIR`")
    return corpus


def _active_path(name: str) -> str:
    now = time.monotonic()
    cached = _pointers.get(name)
    if cached and now - cached[0] < POINTER_TTL:
        return cached[1]
    corpus = corpus_get(name)
    build = corpus.active_build
    if build is None or not build.index_path:
        raise NoActiveBuild(f"corpus {corpus.name!r} has no active build yet; run "
                            f"`manage.py build_index --corpus {corpus.name}` first")
    with _pointer_lock:
        _pointers[name] = (now, build.index_path)
    return build.index_path


def forget_active(name: str | None = None) -> None:
    global _default_name
    with _pointer_lock:
        _default_name = None
        if name is None:
            _pointers.clear()
        else:
            _pointers.pop(name, None)


def _default_corpus_name() -> str:
    """`default_corpus().name`, cached like the pointers: a server asks for it on every request,
    and the query (a join on the active build) would cost more than the search it precedes."""
    global _default_name
    now = time.monotonic()
    cached = _default_name
    if cached and now - cached[0] < POINTER_TTL:
        return cached[1]
    name = default_corpus().name
    with _pointer_lock:
        _default_name = (now, name)
    return name


def active_index(name: str | None = None) -> Index:
    """The active index of a corpus (default corpus when name is None), opened once per process."""
    corpus_name = name or _default_corpus_name()
    if not visible(corpus_name):
        corpus_get(corpus_name)  # raises CorpusNotFound, unless `name` is an alias of a visible corpus
    return INDEXES.get(Path(_active_path(corpus_name)), slot=corpus_name)


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
