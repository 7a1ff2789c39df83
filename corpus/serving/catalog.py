"""What list_corpora says of each served corpus (a `CorpusCard`), and how corpora rank for a query.

Every served corpus's card and ranking profile are made once per change of the catalog, whoever asks
(STATE.cards, with the catalog signature they were made at); a caller's view filters them by name. Each
build's description, titles, summary terms and lexicon are read from its metadata.json and mapped lexicon
(STATE.summaries): listing and ranking corpora never open an index.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from retrieval.errors import RetrievalError

from ..models import Corpus
from ..selectors import with_active_build
from .active import build_location
from .state import STATE

logger = logging.getLogger("docsmcp.corpus")


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


def _profile_of(path: str) -> tuple[str, tuple[str, ...], tuple[str, ...], frozenset[str], Any]:
    from retrieval.corpus_summary import summarize
    from retrieval.format.metadata import read_metadata

    known = STATE.summaries.get(path)
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
        with STATE.lock:
            if len(STATE.summaries) > 4096:
                STATE.summaries.clear()
            STATE.summaries[path] = known
    return known


def _lexicon_of(build: Any) -> Any:
    """The build's lexicon (retrieval/format/lexicon.py); None for a build made before lexicons (ranked without)."""
    from retrieval import storage
    from retrieval.format.lexicon import read_lexicon
    from retrieval.format.mapped import MAPPED_DIR

    return read_lexicon(storage.join(build, MAPPED_DIR))


def _catalog_signature() -> tuple:
    """Changes whenever a card could: a corpus added, deleted or saved (an activation saves `updated_at`), or a
    newer commit seen on its git source (written without touching `updated_at`). One aggregate query."""
    from django.db.models import Count, Max, Sum

    return tuple(Corpus.objects.aggregate(Count("id"), Max("updated_at"), Max("latest_commit_at"),
                                          Sum("active_build_id")).values())


def _catalog_cards() -> list[tuple[CorpusCard, Any, frozenset[str]]]:
    """(card, profile, page paths) of every served corpus, by name, unfiltered: two queries however many corpora."""
    from retrieval.corpus_summary import CorpusProfile

    from ..access import limited_to

    signature = _catalog_signature()
    cards = STATE.cards
    if cards is not None and cards[0] == signature:
        return cards[1]
    with limited_to(None):
        heads = [c for c in with_active_build(Corpus.objects).filter(
            kind=Corpus.KIND_MARKDOWN, version_of__isnull=True, active_build__isnull=False).order_by("name")]
        members: dict[int, list[Corpus]] = {}
        for member in with_active_build(Corpus.objects).filter(
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
    STATE.cards = (signature, out)
    return out


def corpus_cards(query: str | None = None) -> list[CorpusCard]:
    """Every corpus the caller may read, by name; with `query`, best match first (the words and identifiers
    of its pages, its name, description, page titles and the build's summary terms:
    retrieval/corpus_summary.py).

    The cards are made once per change of the catalog (_catalog_cards), so listing 1,000 corpora costs an
    aggregate query and the ranking, not a read of every row."""
    from retrieval.corpus_summary import rank_corpora
    from retrieval.format.lexicon import query_terms

    from ..access import visible

    known = [(card, profile) for card, profile, _pages in _catalog_cards() if visible(card.name)]
    if not query:
        return [card for card, _profile in known]
    by_name = {card.name: card for card, _profile in known}
    ranked = rank_corpora(query, [p for _c, p in known], query_terms(query))
    return [replace(by_name[name], score=score) for name, score in ranked]


def corpora_holding(page: str) -> list[str]:
    """The readable corpora whose served build has the page `page` (a chunk ID's path), by name."""
    from ..access import visible

    return [card.name for card, _profile, pages in _catalog_cards() if page in pages and visible(card.name)]


def best_corpora(query: str, limit: int) -> list[str]:
    """The `limit` readable corpora that best match `query` (list_corpora's ranking), only those that match
    at all: what a search without `corpus` covers on a server of more corpora than it can search at once."""
    return [card.name for card in corpus_cards(query)[:limit] if card.score]
