"""Finding the right corpus for a question: a small per-build summary, and lexical ranking over it.

A server of many corpora lets an agent ask `list_corpora` which one to search. Opening every
corpus's index to answer would defeat loading corpora on demand, so each build stores a summary
in its metadata.json (`extra["summary"]`: its most frequent title and path terms) and the ranking
reads only that, the corpus's name, description and page titles. BM25 over those few hundred
words per corpus separates libraries well ("fastapi dependency injection" → FastAPI) at a cost of
microseconds per corpus; no embedding is needed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

SUMMARY_TERMS = 40
_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*")
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "into", "is", "it", "its",
    "of", "on", "or", "the", "this", "to", "with", "your", "you", "using", "use", "md", "mdx", "rst", "txt",
    "index", "readme", "docs", "doc", "html", "page", "pages",
})
# Field weights: a corpus's own name and description say more about it than any one page title.
NAME_WEIGHT = 4
DESCRIPTION_WEIGHT = 2
K1, B = 1.2, 0.3  # a low B: a corpus with many pages is not much penalised for its long profile


def words(text: str) -> list[str]:
    """Lowercased words without stop words, plurals cut to the singular (`routers` meets `router`)."""
    out = []
    for word in _WORD.findall(text.lower().replace("_", " ").replace("-", " ")):
        if word in _STOP or len(word) < 2:
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def summarize(files: Mapping[str, str], limit: int = SUMMARY_TERMS) -> dict[str, list[str]]:
    """A build's summary: its `limit` most frequent title and path words, counted once per page."""
    counts: Counter[str] = Counter()
    for path, title in files.items():
        counts.update(set(words(title) + words(path.rsplit(".", 1)[0].replace("/", " "))))
    return {"terms": [term for term, _ in counts.most_common(limit)]}


@dataclass(frozen=True)
class CorpusProfile:
    """What ranking knows about one corpus."""

    name: str
    description: str = ""
    titles: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # the build summary's terms

    def bag(self) -> Counter[str]:
        bag: Counter[str] = Counter()
        for _ in range(NAME_WEIGHT):
            bag.update(words(self.name.replace("@", " ")))
        for _ in range(DESCRIPTION_WEIGHT):
            bag.update(words(self.description))
        for title in self.titles:
            bag.update(words(title))
        bag.update(words(" ".join(self.terms)))
        return bag


@lru_cache(maxsize=8192)
def _bag(profile: CorpusProfile) -> Counter[str]:
    """A corpus's words, made once per profile (a server of 1,000 corpora ranks them all per question)."""
    return profile.bag()


@lru_cache(maxsize=8192)
def _length(profile: CorpusProfile) -> int:
    return sum(_bag(profile).values())


def rank_corpora(query: str, profiles: Iterable[CorpusProfile]) -> list[tuple[str, float]]:
    """(name, score) of every profile, best match first, ties by name; a score is 0 when no query word
    occurs in the corpus's profile."""
    bags = [(p.name, _bag(p), _length(p)) for p in profiles]
    if not bags:
        return []
    terms = list(dict.fromkeys(words(query)))
    n = len(bags)
    average = sum(length for _, _, length in bags) / n or 1.0
    frequency = {t: sum(1 for _, bag, _ in bags if t in bag) for t in terms}
    scored = []
    for name, bag, length in bags:
        score = 0.0
        for term in terms:
            tf = bag.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        scored.append((name, round(score, 6)))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored
