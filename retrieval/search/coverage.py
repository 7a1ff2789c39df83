"""Whether the docs answer a question: a verdict on every search, from how well the best hits match it.

The fused score of a hit is a rank (1.0 = first in every leg), so a search always "finds" something:
a Python coding question asked of the Kubernetes docs gets first hits scored like a Kubernetes
question's. An agent handed those pages answers from them. The verdict looks at what rank hides: how
much of the question the best few hits actually hold.

- **Lexical evidence** (every build). The question's informative terms, each weighted by how rare it is
  in the corpus (its inverse chunk frequency from the build's lexicon, retrieval/format/lexicon.py; a
  term no chunk holds weighs the most), and the best of the first COVERAGE_DEPTH hits' share of that
  weight (its title, heading trail and text; words matched on a crude stem, so "configuring" meets
  "configure"). A question whose rarest words appear nowhere near the closest pages is off-topic, or
  names something the docs never mention ("Apple Pay", "PHP SDK").
- **Semantic evidence** (builds with a semantic embedding model). The best cosine between the question
  and those hits' vectors: it carries paraphrases that share no words with the page.

The two combine into one score in [0, 1] (`score_from`), calibrated on questions the docs answer,
questions of other domains and near-miss questions (docs/search.md, docs/BENCHMARKS.md), and two
thresholds cut it into `covered` / `partial` / `not_covered`. A corpus may set its own thresholds
(settings {"coverage": {"covered": ..., "partial": ...}}).

A server of several corpora knows one more thing: whether another of them holds the question better
(`elsewhere`). A corpus's own evidence cannot tell a Python question from a Kubernetes one when both
docs say "delete a file"; the other corpus beside it can.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from retrieval.corpus_summary import Lexicon, words
from retrieval.format.terms import identifier_terms

if TYPE_CHECKING:
    from .index import Index

COVERED, PARTIAL, NOT_COVERED = "covered", "partial", "not_covered"
VERDICTS = (COVERED, PARTIAL, NOT_COVERED)
NOT_COVERED_NOTICE = ("These docs do not appear to cover this question; the closest pages are below. "
                      "Do not answer from them as if they did.")
ELSEWHERE_NOTICE = ("These docs do not appear to cover this question: the corpus `{corpus}` on this server is "
                    "closer to it, by meaning and by words; search that corpus instead. The closest pages here "
                    "are below; do not answer from them as if they covered it.")
PARTIAL_NOTICE = ("These docs may cover this question only in part: check that the pages below answer it "
                  "before relying on them, and say what they leave out.")
COVERAGE_DEPTH = 5  # the first hits whose text is weighed


@dataclass(frozen=True)
class Thresholds:
    """Scores at or above `covered` are covered; below `partial`, not covered; between, partial."""

    covered: float
    partial: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.partial <= self.covered <= 1.0:
            raise ValueError(f"coverage thresholds need 0 <= partial <= covered <= 1, got partial={self.partial} "
                             f"covered={self.covered}")


DEFAULT_THRESHOLDS = Thresholds(covered=0.5, partial=0.2)


@dataclass(frozen=True)
class Evidence:
    """What the verdict is made of, for benchmarks and calibration."""

    lexical: float  # the best hit's share of the question's term weight, in [0, 1]
    cosine: float | None  # the best hit's cosine to the question; None without semantic vectors
    terms: int  # the question's informative terms
    runner_up: float = 0.0  # the second-best hit's share: an answered question's words recur in its pages
    absent: float = 0.0  # the share of the question's term weight in terms the corpus never uses


@dataclass(frozen=True)
class Coverage:
    verdict: str
    score: float  # in [0, 1]: how well the best hits match the question
    elsewhere: str | None = None  # another corpus of the server that holds the question better (`elsewhere`)
    evidence: Evidence | None = field(default=None, compare=False, repr=False)  # what the score was made of

    @property
    def notice(self) -> str | None:
        if self.elsewhere:
            return ELSEWHERE_NOTICE.format(corpus=self.elsewhere)
        return {NOT_COVERED: NOT_COVERED_NOTICE, PARTIAL: PARTIAL_NOTICE}.get(self.verdict)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"verdict": self.verdict, "score": self.score}
        if self.elsewhere:
            out["elsewhere"] = self.elsewhere
        if self.notice:
            out["notice"] = self.notice
        return out


def best_of(verdicts: Iterable[Coverage]) -> Coverage:
    """A search over several corpora covers the question when one of them does: the best verdict (then
    the best score), or not covered when no corpus was searched. Verdict first: a corpus that sent the
    question `elsewhere` keeps its hits' score, which may top the verdict of the corpus it named."""
    return max(verdicts, key=lambda c: (-VERDICTS.index(c.verdict), c.score), default=None) or Coverage(NOT_COVERED, 0.0)


# Below this share of the corpora's word evidence (corpus_summary.rank_corpora) the words do not prefer the corpus.
ELSEWHERE_SHARE = 0.5


def elsewhere(coverage: Coverage, closeness: float, neighbours: dict[str, float],
              share: Callable[[], float]) -> Coverage:
    """`coverage` judged again on a server of several corpora: not covered, naming the other corpus, when
    another corpus embedded by the same model holds a chunk closer to the question than any of this one's
    (`closeness`, and each neighbour's best cosine: routing.affinity) and the question's words do not
    prefer this corpus either (`share()`, its share of the word evidence among the corpora served, under
    ELSEWHERE_SHARE). Both routers agreeing is what keeps a question the corpus answers from being sent
    away: with the cosines alone 9.4% of the answerable questions were, with both 5.0% (docs/BENCHMARKS.md).
    `share` is called only when a neighbour is closer, since ranking every corpus's words costs more. The
    score stays what this corpus's hits earned: the verdict says the question belongs elsewhere."""
    if not neighbours:
        return coverage
    closest = max(neighbours, key=lambda name: (neighbours[name], name))
    if neighbours[closest] <= closeness or share() >= ELSEWHERE_SHARE:
        return coverage
    return Coverage(NOT_COVERED, coverage.score, closest, coverage.evidence)


def verdict_of(score: float, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    if score >= thresholds.covered:
        return COVERED
    return PARTIAL if score >= thresholds.partial else NOT_COVERED


def coverage_of(evidence: Evidence, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Coverage:
    score = round(score_from(evidence), 4)
    return Coverage(verdict_of(score, thresholds), score, evidence=evidence)


def with_word_share(coverage: Coverage, share: float, thresholds: Thresholds | None = None) -> Coverage:
    """`coverage` of a full-text build scored again on a server of several corpora, where the corpus's share
    of the question's word evidence among them (corpus_summary.rank_corpora) is one more input: a coding
    question asked of the Kubernetes docs holds their words, but the Python docs beside them hold more
    (SHARED_LEXICAL_MODEL; docs/BENCHMARKS.md). Semantic builds are judged by `elsewhere` instead."""
    evidence = coverage.evidence
    if evidence is None or evidence.cosine is not None or not evidence.terms:
        return coverage
    features = (*features_of(evidence), max(math.log(max(share, 1e-6)), -12.0))
    z = sum(w * x for w, x in zip(SHARED_LEXICAL_MODEL, features, strict=False)) + SHARED_LEXICAL_MODEL[-1]
    score = round(1.0 / (1.0 + math.exp(-z)), 4)
    return Coverage(verdict_of(score, thresholds or DEFAULT_THRESHOLDS), score, coverage.elsewhere, evidence)


def score_from(evidence: Evidence) -> float:
    """The probability that the docs answer the question, from a logistic model of the evidence: the
    lexical share alone on a full-text build, with the cosine on a semantic one (coefficients fitted by
    bench/answerability.py --fit on answerable, out-of-domain and near-miss questions)."""
    if evidence.terms == 0 and evidence.cosine is None:
        return 0.0
    features = features_of(evidence)
    model = LEXICAL_MODEL if evidence.cosine is None else SEMANTIC_MODEL
    z = sum(w * x for w, x in zip(model, features, strict=False)) + model[-1]
    return 1.0 / (1.0 + math.exp(-z))


def features_of(evidence: Evidence) -> tuple[float, ...]:
    """The model's inputs, in the order of LEXICAL_MODEL (and SEMANTIC_MODEL, which adds the cosine).

    A longer question whose words the best hits share is stronger evidence than a two-word one: the
    number of terms enters as log(1 + terms)."""
    lexical = (evidence.lexical, math.log1p(evidence.terms), evidence.runner_up, evidence.absent)
    return lexical if evidence.cosine is None else (*lexical, evidence.cosine)


# Logistic models of P(the docs answer the question), fitted by bench/answerability.py --fit:
# (lexical, log(1 + terms), runner-up, absent, bias) and the same with the cosine before the bias.
LEXICAL_MODEL = (3.406, 1.257, 2.363, -4.495, -3.991)
# The lexical model with log(the corpus's share of the word evidence among the server's corpora) before the
# bias, fitted on the same questions with the three corpora served together.
SHARED_LEXICAL_MODEL = (2.598, 1.210, 1.876, -5.035, 0.378, -2.756)
SEMANTIC_MODEL = (2.889, 0.467, 0.341, -5.016, 11.078, -6.583)


_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "er", "ed", "ly", "es", "s", "e")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude stem for matching a question's words against a page's: the full-text index stems its own
    way, and this only needs "configuring", "configured" and "configure" to meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def question_terms(query: str) -> list[str]:
    """The question's informative terms, spelt as the lexicon spells a page's (words, then identifiers),
    without the function words of a question ("when", "does", "my"): in a small corpus those are rare
    enough to weigh like a topic word. A question made only of such words, or of words the lexicon sets
    aside as too common in file names ("index", "docs"), is taken word for word, since it still names
    what it asks for."""
    terms = [t for t in dict.fromkeys(words(query) + identifier_terms(query)) if t not in QUESTION_WORDS]
    return terms or [w for w in dict.fromkeys(_PLAIN_WORD.findall(query.lower())) if len(w) >= 2]


_PLAIN_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*")
# English function words, and the words that frame a question rather than name its topic ("VACUUM
# explained", "an example of"), spelt as `words` leaves them (plurals cut: "does" is "doe", "was" is "wa").
QUESTION_WORDS = frozenset({
    "about", "above", "after", "again", "against", "all", "also", "am", "any", "because", "been", "before",
    "being", "below", "between", "both", "but", "can", "cannot", "could", "did", "do", "doe", "doing", "done",
    "down", "during", "each", "either", "else", "ever", "every", "few", "further", "had", "has", "have",
    "having", "he", "her", "here", "hers", "him", "his", "i", "if", "just", "me", "might", "more", "most",
    "much", "must", "my", "myself", "no", "nor", "not", "now", "off", "once", "only", "other", "our", "ours",
    "ourselves", "out", "over", "own", "same", "shall", "she", "should", "so", "some", "such", "than", "that",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "those", "through", "thu",
    "too", "under", "until", "up", "upon", "very", "wa", "want", "way", "we", "were", "what", "whatever",
    "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "would", "yet",
    "anyone", "anything", "someone", "something", "thing",
    "explain", "explained", "explaining", "explanation", "example", "tutorial", "overview", "introduction",
    "meaning", "mean", "describe", "described", "description",
})


def term_weights(terms: Sequence[str], lexicon: Lexicon | None) -> tuple[np.ndarray, np.ndarray]:
    """Each term's inverse chunk frequency in the build, log(1 + N / (df + 1)), so a term no chunk holds
    weighs the most and one in every chunk almost nothing; and whether no chunk holds it. Without a
    lexicon every term weighs the same and none is known to be absent."""
    if lexicon is None or not terms:
        return np.ones(len(terms)), np.zeros(len(terms), dtype=bool)
    from retrieval.format.lexicon import term_hashes  # with pyarrow's compute kernels: not for a tools/list

    pages, chunks = lexicon.frequencies(term_hashes(terms))
    if chunks is not None and lexicon.chunk_total:
        counts, total = chunks.astype(np.float64), lexicon.chunk_total
    else:
        counts, total = pages.astype(np.float64), max(lexicon.total, 1)
    return np.log1p(total / (counts + 1.0)), counts == 0


def _is_identifier(term: str) -> bool:
    return any(c in term for c in "._-")


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789+#")


@lru_cache(maxsize=1 << 14)
def _root_and_endings(term: str) -> tuple[str, frozenset[str]]:
    """A word counts as `term` when it is the term's stem followed by one of the endings `stem` strips
    (so "configure" meets "configuring"), or, for a stem in -y, the -ies plural."""
    root = stem(term)
    endings = {"", *_SUFFIXES}
    if root.endswith("y"):
        root, endings = root[:-1], {"y" + e for e in endings} | {"ies"}
    return root, frozenset(endings)


def _holds_word(text: str, root: str, endings: frozenset[str]) -> bool:
    """Whether `text` (lowered, `_` and `-` as spaces) has a word made of `root` and one of `endings`:
    found with str.find, which costs far less than splitting a long hit into words."""
    at = text.find(root)
    while at != -1:
        if at == 0 or text[at - 1] not in _WORD_CHARS:
            end = at + len(root)
            while end < len(text) and text[end] in _WORD_CHARS:
                end += 1
            if text[at + len(root):end] in endings:
                return True
        at = text.find(root, at + 1)
    return False


def lexical_shares(terms: Sequence[str], weights: np.ndarray,
                   texts: Iterable[str]) -> tuple[float, float, np.ndarray]:
    """The best and second-best texts' shares of the terms' weight, and which terms some text holds; an
    identifier (`client.list_users`) is looked up as it is written."""
    found = np.zeros(len(terms), dtype=bool)
    total = float(weights.sum())
    if total <= 0:
        return 0.0, 0.0, found
    wanted = [(term, _is_identifier(term), _root_and_endings(term)) for term in terms]
    shares = [0.0, 0.0]
    for text in texts:
        raw = text.lower()
        spaced = raw.replace("_", " ").replace("-", " ")
        held = np.array([term in raw if identifier else _holds_word(spaced, root, endings)
                         for term, identifier, (root, endings) in wanted])
        found |= held
        shares.append(float(weights[held].sum()) / total)
    best, runner_up = sorted(shares, reverse=True)[:2]
    return best, runner_up, found


def evidence(index: Index, query: str, positions: Sequence[int], query_vector: np.ndarray | None,
             texts: Sequence[str] | None = None) -> Evidence:
    """The evidence of the first COVERAGE_DEPTH of `positions` (the fused ranking, best first) for `query`.

    `query_vector` is the question's semantic embedding, None for a full-text or word-hash build; `texts`,
    those hits' texts when the caller has them already (a first page's hits, `hit_text`)."""
    terms = question_terms(query)
    top = list(positions[:COVERAGE_DEPTH])
    if not top:
        return Evidence(0.0, None, len(terms))
    lexical = runner_up = absent = 0.0
    if terms:
        if texts is None:
            rows = index.catalog().rows(top)
            texts = [hit_text(row["title"] or "", row["breadcrumb"] or "", row["heading"] or "", content)
                     for row, content in zip(rows, index.contents(top), strict=True)]
        weights, unknown = term_weights(terms, index.lexicon())
        lexical, runner_up, found = lexical_shares(terms, weights, texts)
        # unknown to the lexicon, which spells words as written, and in no hit under any ending
        absent = float(weights[unknown & ~found].sum() / weights.sum())
    cosine = None
    if query_vector is not None:
        cosine = float(index.vectors().dots(query_vector, np.asarray(top, dtype=np.int64)).max())
    return Evidence(round(lexical, 4), None if cosine is None else round(cosine, 4), len(terms),
                    round(runner_up, 4), round(absent, 4))


def assess(index: Index, query: str, positions: Sequence[int], query_vector: np.ndarray | None,
           thresholds: Thresholds | None = None, texts: Sequence[str] | None = None) -> Coverage:
    return coverage_of(evidence(index, query, positions, query_vector, texts), thresholds or DEFAULT_THRESHOLDS)


def hit_text(title: str, breadcrumb: str, heading: str, content: str) -> str:
    """What of a hit the question's terms are looked for in."""
    return f"{title}\n{breadcrumb}\n{heading}\n{content}"
