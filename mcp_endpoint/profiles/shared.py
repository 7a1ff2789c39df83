"""Helpers the documents and techdoc profiles share: which corpora they serve, and merging their hits.

Not a profile itself (the registry never names it). Both profiles serve every markdown corpus;
corpora of kind "chunks" belong to the citeloom profile and are invisible here.
"""

from __future__ import annotations

from typing import Any

from corpus.errors import CorpusError
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
        except (RetrievalError, CorpusError):  # no usable build of this corpus: left out of the sentence
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


# Every search tool's reply carries the coverage verdict (retrieval/search/coverage.py), first, so a model
# reads whether the docs answer the question before it reads the hits.
COVERAGE_DESCRIPTION = (
    " Each reply carries `coverage`: whether these docs answer the question (`covered`, `partial` or "
    "`not_covered`, with a score from 0 to 1 measuring how well the best hits match it). When it is "
    "`not_covered` the hits are only the closest pages: do not answer from them as if they covered the "
    "question; say the docs do not cover it. `elsewhere`, when present, names another corpus of this server "
    "that is closer to the question: search that one."
)
COVERAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Whether these docs answer the question, judged from how well the best hits match it "
                   "(not from their rank).",
    "properties": {
        "verdict": {"type": "string", "enum": ["covered", "partial", "not_covered"]},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "notice": {"type": "string", "description": "What to do with hits that may not answer the question."},
        "elsewhere": {"type": "string", "description": "Another corpus of this server that is closer to the "
                                                       "question (then the verdict is not_covered)."},
    },
    "required": ["verdict", "score"],
}


def coverage_json(coverage: Any) -> dict[str, Any] | None:
    """The verdict as a reply shows it (None for a search made without one)."""
    return None if coverage is None else coverage.as_dict()


def best_coverage(verdicts: list[Any]) -> Any:
    from retrieval.search.coverage import best_of

    return best_of(verdicts)
