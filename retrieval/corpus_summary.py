"""Finding the right corpus for a question: a small per-build summary, and lexical ranking over it.

A server of many corpora lets an agent ask `list_corpora` which one to search, and a search across
corpora ranks in full only the few that best match. Opening every corpus's index to answer would
defeat loading corpora on demand, so each build stores what ranking reads:

- a summary in its metadata.json (`extra["summary"]`: its most frequent title and path terms), which
  with the corpus's name, description and page titles makes its *profile*. BM25 over those few hundred
  words per corpus separates libraries by name ("fastapi dependency injection" → FastAPI) at a cost
  of microseconds per corpus;
- its *lexicon* (retrieval/format/lexicon.py): how many of its pages, and how many of its chunks, hold
  each word and identifier of their text. A question rarely names its library: it names an identifier
  (`RateLimitError`) or describes a task in words that its corpus's text uses more often than the
  others'. The lexicon scores that as a language model over chunks: the likelihood of the question's
  terms in the corpus against all candidates', summed as logs, each term's likelihood being its share
  of the corpus's term occurrences (the (term, chunk) pairs; smoothed toward all candidates' share with
  PRIOR_CHUNKS chunks' worth of them). Shares of occurrences do not depend on how long a corpus's pages
  or chunks are: shares of pages favoured the corpus of longest pages (the Python docs: 17 chunks a
  page), which holds most everyday words somewhere, and shares of chunks the corpus of longest chunks,
  so a question in everyday words left a corpus of short sections (the sample: 41 distinct words a
  chunk, the Python docs 62) for a larger one. On the Kubernetes, Python docs and sample questions,
  a search across the three loses at most 0.017 of MRR@10 against asking each corpus alone, where the
  shares of pages and chunks lost 0.049 on the sample (docs/BENCHMARKS.md). A build made before chunk
  counts is scored by its pages.

A corpus's match is the lexicon's log-likelihood ratio plus PROFILE_WEIGHT times the profile's BM25
(the name and description still decide when the question names the library).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

SUMMARY_TERMS = 40
_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*")
# The same words split the other way, for a build splitting whole batches with Arrow's regex kernel
# (retrieval/format/lexicon.py): what separates them, and the characters a word may hold but not start with.
WORD_SEPARATORS = r"[^a-z0-9+#]+"
WORD_TAIL_ONLY = "+#"
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "into", "is", "it", "its",
    "of", "on", "or", "the", "this", "to", "with", "your", "you", "using", "use", "md", "mdx", "rst", "txt",
    "index", "readme", "docs", "doc", "html", "page", "pages",
})
# Field weights: a corpus's own name and description say more about it than any one page title.
NAME_WEIGHT = 4
DESCRIPTION_WEIGHT = 2
K1, B = 1.2, 0.3  # a low B: a corpus with many pages is not much penalised for its long profile
# The lexicon's smoothing, in chunks' worth of term occurrences (the candidates' mean per chunk): the sample's
# paraphrased questions were routed alike from 40 to 400, and lost at 10-30 (a small corpus's share of a
# word it never uses is then trusted too soon).
PRIOR_CHUNKS = 100
# The profile's BM25 beside the lexicon's log-likelihood ratio: 0.3 of it put the right corpus first for
# 4% more Kubernetes questions than the lexicon alone and lost none elsewhere (0.1-0.5 measured).
PROFILE_WEIGHT = 0.3
# A corpus that matches at all never shows a score of 0 (which says: no query term anywhere in it).
MIN_SCORE = 1e-6


def words(text: str) -> list[str]:
    """Lowercased words without stop words, plurals cut to the singular (`routers` meets `router`)."""
    return [w for w in map(_normal, _WORD.findall(_lowered(text))) if w]


def _lowered(text: str) -> str:
    return text.lower().replace("_", " ").replace("-", " ")


@lru_cache(maxsize=1 << 16)
def _normal(word: str) -> str | None:
    if word in _STOP or len(word) < 2:
        return None
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def summarize(files: Mapping[str, str], limit: int = SUMMARY_TERMS) -> dict[str, list[str]]:
    """A build's summary: its `limit` most frequent title and path words, counted once per page."""
    counts: Counter[str] = Counter()
    for path, title in files.items():
        counts.update(set(words(title) + words(path.rsplit(".", 1)[0].replace("/", " "))))
    return {"terms": [term for term, _ in counts.most_common(limit)]}


@dataclass(frozen=True)
class Lexicon:
    """How many of a build's pages and chunks hold each term, by term hash (retrieval/format/lexicon.py)."""

    hashes: np.ndarray  # uint64, ascending
    pages: np.ndarray  # how many pages hold the term
    total: int  # the build's pages
    chunks: np.ndarray | None = None  # how many chunks hold the term; None: a build made before chunk counts
    chunk_total: int = 0  # the build's chunks

    @cached_property
    def page_pairs(self) -> int:
        """How many (term, page) pairs the build holds: the size a term's share of its pages is taken of."""
        return int(self.pages.sum())

    @cached_property
    def chunk_pairs(self) -> int:
        """How many (term, chunk) pairs the build holds (0 without chunk counts); each is summed once per
        process, and only for the counts scored: the pages' only for a build made before chunk counts."""
        return 0 if self.chunks is None else int(self.chunks.sum())

    def frequencies(self, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """How many pages, and how many chunks (None: no chunk counts), hold each of `terms` (hashes)."""
        if not len(self.hashes):
            return np.zeros(len(terms)), None if self.chunks is None else np.zeros(len(terms))
        at = np.minimum(np.searchsorted(self.hashes, terms), len(self.hashes) - 1)
        known = self.hashes[at] == terms
        return self.pages[at] * known, None if self.chunks is None else self.chunks[at] * known


@dataclass(frozen=True)
class CorpusProfile:
    """What ranking knows about one corpus."""

    name: str
    description: str = ""
    titles: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # the build summary's terms
    lexicon: Lexicon | None = field(default=None, compare=False)  # None: a build made before lexicons

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


def profile_scores(query: str, profiles: Sequence[CorpusProfile]) -> list[float]:
    """Each profile's BM25 against the query (0 when no query word occurs in it), in the profiles' order."""
    bags = [(_bag(p), _length(p)) for p in profiles]
    if not bags:
        return []
    terms = list(dict.fromkeys(words(query)))
    n = len(bags)
    average = sum(length for _, length in bags) / n or 1.0
    frequency = {t: sum(1 for bag, _ in bags if t in bag) for t in terms}
    scores = []
    for bag, length in bags:
        score = 0.0
        for term in terms:
            tf = bag.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        scores.append(score)
    return scores


def page_text_scores(terms: np.ndarray, lexicons: Sequence[Lexicon | None]) -> tuple[np.ndarray, np.ndarray]:
    """(log-likelihood ratio, whether any term occurs) per lexicon, for the query's term hashes `terms`: the
    ratio over chunks, compared among the candidates that have chunk counts, or over pages for a build made
    before them (compared among all candidates).

    A build without a lexicon scores 0 (as likely as all candidates together) and matches nothing."""
    count = len(lexicons)
    present = [i for i, lexicon in enumerate(lexicons) if lexicon is not None]
    scores, found = np.zeros(count), np.zeros(count, dtype=bool)
    if not present or not len(terms):
        return scores, found
    counts = [lexicons[i].frequencies(terms) for i in present]
    pages = np.array([in_pages for in_pages, _in_chunks in counts])  # corpora x terms
    found[present] = (pages > 0).any(axis=1)
    chunked = [(i, in_chunks) for i, (_in_pages, in_chunks) in zip(present, counts, strict=True)
               if in_chunks is not None]
    if len(chunked) < len(present):
        scores[present] = _ratios(pages, [lexicons[i].page_pairs for i in present],
                                  [lexicons[i].total for i in present])
    if chunked:
        where = [i for i, _in_chunks in chunked]
        scores[where] = _ratios(np.array([in_chunks for _i, in_chunks in chunked]),
                                [lexicons[i].chunk_pairs for i in where], [lexicons[i].chunk_total for i in where])
    return scores, found


def _ratios(counts: np.ndarray, pairs: Sequence[int], units: Sequence[int]) -> np.ndarray:
    """Per corpus (row of `counts`: how many of its `units` hold each term, of `pairs` (term, unit) pairs in
    all), the summed log ratio of each term's share of its pairs, smoothed with PRIOR_CHUNKS units' worth of
    them, to its share over all the corpora's."""
    sizes = np.maximum(np.asarray(pairs, dtype=np.float64), 1)
    prior = PRIOR_CHUNKS * sizes.sum() / max(sum(units), 1)
    counts = counts.astype(np.float64)
    background = counts.sum(axis=0) / sizes.sum()
    held = background > 0  # a term no candidate holds says nothing about any of them
    counts, background = counts[:, held], background[held]
    return (np.log((counts + prior * background) / (sizes[:, None] + prior)) - np.log(background)).sum(axis=1)


def match_scores(query: str, profiles: Sequence[CorpusProfile], terms: np.ndarray | None = None) -> list[float | None]:
    """How well each corpus matches the query: the lexicon's log-likelihood ratio for the query's term
    hashes `terms` plus PROFILE_WEIGHT x the profile's BM25; None for a corpus that matches nothing
    (no query term in its profile or its pages)."""
    profile = profile_scores(query, profiles)
    text, found = page_text_scores(np.zeros(0, np.uint64) if terms is None else terms,
                                   [p.lexicon for p in profiles])
    return [float(t + PROFILE_WEIGHT * b) if b > 0 or f else None
            for b, t, f in zip(profile, text.tolist(), found.tolist(), strict=True)]


def rank_corpora(query: str, profiles: Iterable[CorpusProfile],
                 terms: np.ndarray | None = None) -> list[tuple[str, float]]:
    """(name, score) of every profile, best match first (match_scores), ties by name. A score is the
    corpus's share of the evidence (the matches as a softmax: they sum to 1), or 0 when no query term
    occurs in its profile or its pages."""
    profiles = list(profiles)
    matches = match_scores(query, profiles, terms)
    known = [m for m in matches if m is not None]
    top = max(known, default=0.0)
    weights = [math.exp(m - top) if m is not None else 0.0 for m in matches]
    total = sum(weights) or 1.0
    scored = [(p.name, round(max(w / total, MIN_SCORE), 6) if m is not None else 0.0, m)
              for p, w, m in zip(profiles, weights, matches, strict=True)]
    scored.sort(key=lambda item: (item[2] is None, -(item[2] or 0.0), item[0]))
    return [(name, score) for name, score, _match in scored]
