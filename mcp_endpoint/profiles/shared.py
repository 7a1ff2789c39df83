"""Helpers the documents and techdoc profiles share: which corpora they serve, and merging their hits.

Not a profile itself (the registry never names it). Both profiles serve every markdown corpus;
corpora of kind "chunks" belong to the citeloom profile and are invisible here.
"""

from __future__ import annotations

from typing import Any

from corpus.models import Corpus
from corpus.selectors import corpus_list
from corpus.serving import CorpusHit, active_index, freshness, merge_hits, version_choices  # noqa: F401 (shared)
from retrieval.errors import RetrievalError


def markdown_corpora() -> list[Corpus]:
    """Every markdown corpus, by name (built or not); other versions of a corpus are reached by
    `<corpus>@<version>`, not listed, so a search across all corpora does not repeat a corpus."""
    return [c for c in corpus_list() if c.kind == Corpus.KIND_MARKDOWN and not c.version_of_id]


def served_corpora() -> list[Corpus]:
    """Markdown corpora with an active build: the ones a search across "all" covers."""
    return [c for c in markdown_corpora() if c.active_build_id is not None]


def corpora_freshness() -> str:
    """One sentence for server instructions: each corpus's default version and when it was last built."""
    parts = []
    for corpus in served_corpora():
        try:
            fresh = freshness(active_index(corpus.name))
        except RetrievalError:
            continue
        _name, versions = version_choices(corpus.name)
        label = f"version {fresh['version']}" if fresh["version"] else ""
        if versions:
            label = f"versions {', '.join(versions)}, default {fresh['version']}"
        parts.append(f"{corpus.name} ({label + ', ' if label else ''}last built {fresh['indexed_at']})")
    return ("Corpora: " + "; ".join(parts) + ".") if parts else ""


FRESHNESS_SCHEMA: dict[str, Any] = {
    "version": {"type": ["string", "null"],
                "description": "The corpus version the hit comes from (null when the corpus has no version label)."},
    "revision": {"type": ["string", "null"],
                 "description": "The git commit built, or a content hash of a directory source."},
    "indexed_at": {"type": ["string", "null"], "description": "When that build was made (ISO 8601, UTC)."},
}

