"""What the fused ranking does not know: a chunk's kind, its filter match and its page's evidence.

Reciprocal rank fusion (fusion.py) sees each chunk alone. Four facts about a candidate change
how useful it is to the person asking, and none is a word list or a corpus rule:

- Navigation (`link_share`, computed at build time by retrieval/ingest/navigation.py): a
  section made of links to other pages ("What's next", "See also", a table of contents) shares
  their words and answers nothing. Its score is scaled down in proportion to how much of it is
  links above `NAVIGATION_FLOOR`, so it still ranks when nothing else matches, or when the
  question matches it far better than anything else.
- Auto-included chunks: under a filter, the auto-include rule widens the search to global
  guides; a chunk that carries the filtered value is what the agent asked for, so the widened
  ones are scaled by `AUTO_INCLUDED_FACTOR` and rank below exact matches of similar relevance.
  They still fill the page when the exact matches are weak or absent.
- Page evidence: a page whose chunks, taken together, are near the question is about it. Each
  page's best candidate gains `PAGE_LEG_WEIGHT` times a reciprocal-rank term (k =
  `PAGE_RANK_K`, as in fusion) of its page's rank by similarity to the query (the mean cosine
  of the page's chunks nearest to it, over all its chunks: retrieval/search/index.py), so one
  strong keyword hit in an unrelated page does not beat the page that is about the question;
  the page's other chunks keep their score, so one page does not fill the result list. Only
  semantic vectors give it (the engine leaves it out for feature-hash vectors), and only
  unfiltered searches (the engine leaves it out under a filter, as it does page text).
- Page text: a BM25 search over whole pages (the documents table's full-text index) scores
  each page; its score relative to the best candidate page's multiplies the scores of the
  page's candidates by up to 1 + `PAGE_TEXT_WEIGHT`. A page that uses the question's words throughout, in its title,
  lead and several sections, is about it; a page with one section that repeats a rare word is
  not. BM25 over whole pages weighs that, and chunk-level fusion cannot: each chunk is ranked
  alone. A factor rather than a bonus, and a relative score rather than a rank: a chunk that
  barely matches stays low however well its page does, a page that shares one common word with
  the question gains little even when few pages match at all, and the chunks of one page keep
  their order, so the section asked for stays above its page's other sections.
- Links: among the `LINKED_PAGES` pages leading the list once the factors above are applied,
  a page the others link to is where their authors send readers for this topic, as task pages
  link to the concept page they apply (retrieval/ingest/links.py). Its best candidate gains up
  to `PAGE_LINK_WEIGHT` of the score range, in proportion to how many of those pages link to it
  against the most linked one. A bonus on the page's best section only, like page similarity,
  and among pages already leading only: a page the whole corpus links to (a glossary, an index)
  gains nothing unless it matches the question. Unfiltered searches only, like the other page
  evidence.

Everything here is a pure function of arrays, tested without an index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.format.linkgraph import PageLinks

NAVIGATION_FLOOR = 0.5
NAVIGATION_PENALTY = 0.5
AUTO_INCLUDED_FACTOR = 0.5
PAGE_LEG_WEIGHT = 0.5
PAGE_TEXT_WEIGHT = 0.5
PAGE_RANK_K = 5  # sharp: at 60 the tenth page by similarity got 0.87 of the first's bonus
PAGE_LINK_WEIGHT = 0.08
LINKED_PAGES = 20


@dataclass(frozen=True)
class Signals:
    """Per-candidate facts, aligned with the fused list (one entry per candidate)."""

    link_share: np.ndarray  # float, 0..1
    page: np.ndarray  # int, equal for chunks of the same file
    exact: np.ndarray | None = None  # bool, False for chunks only the auto-include rule let in
    page_similarity: np.ndarray | None = None  # float, the page's similarity to the query
    page_text: np.ndarray | None = None  # float, 0..1, the page's BM25 over whole pages relative to the best page's
    links: PageLinks | None = None  # the pages each page links to, indexed by `page`


def navigation_factor(link_share: np.ndarray) -> np.ndarray:
    """1 for content, down to 1 - NAVIGATION_PENALTY for a chunk made only of links."""
    excess = np.clip((np.asarray(link_share, dtype=np.float64) - NAVIGATION_FLOOR) / (1 - NAVIGATION_FLOOR), 0, 1)
    return 1.0 - NAVIGATION_PENALTY * excess


def _page_firsts(scores: np.ndarray, page: np.ndarray) -> np.ndarray:
    """Each page's best candidate (position in the list); ties go to the earlier candidate."""
    order = np.lexsort((-scores, page))
    sorted_pages = page[order]
    return order[np.r_[True, sorted_pages[1:] != sorted_pages[:-1]]]


def page_leg(scores: np.ndarray, page: np.ndarray, similarity: np.ndarray) -> np.ndarray:
    """The pages ranked by their similarity to the query, as a reciprocal-rank term (scaled so
    rank 1 gives 1) on each page's best candidate; 0 for every other candidate."""
    out = np.zeros(len(scores))
    if not len(scores):
        return out
    firsts = _page_firsts(scores, page)
    ranks = np.empty(len(firsts), np.int64)
    ranks[np.lexsort((page[firsts], -similarity[firsts]))] = np.arange(1, len(firsts) + 1)
    out[firsts] = (PAGE_RANK_K + 1) / (PAGE_RANK_K + ranks)
    return out


def page_text_factor(page_text: np.ndarray) -> np.ndarray:
    """1 + PAGE_TEXT_WEIGHT x the page's relative BM25, for every candidate of the page."""
    return 1.0 + PAGE_TEXT_WEIGHT * np.clip(np.asarray(page_text, dtype=np.float64), 0, 1)


def link_votes(scores: np.ndarray, page: np.ndarray, links: PageLinks) -> np.ndarray:
    """Per candidate: on each of the LINKED_PAGES leading pages' best candidate, how many of the
    other leading pages link to its page; 0 elsewhere."""
    firsts = _page_firsts(scores, page)
    leading = firsts[np.lexsort((firsts, -np.round(scores[firsts], 12)))][:LINKED_PAGES]
    at = {int(page[i]): i for i in leading}
    votes = np.zeros(len(scores))
    for source in at:
        for target in links.of(source).tolist():
            if target in at:
                votes[at[target]] += 1
    return votes


def rescore(items: Sequence[tuple[int, float]], signals: Signals) -> list[tuple[int, float]]:
    """`items` (position, fused score, in fusion's order) re-scored by the priors above and
    re-sorted; scores stay in [0, 1] and equal scores keep fusion's order, which is deterministic
    (fusion breaks its ties by chunk ID)."""
    if not items:
        return []
    scores = np.array([s for _, s in items], dtype=np.float64)
    scores *= navigation_factor(signals.link_share)
    page = np.asarray(signals.page)
    if signals.page_similarity is not None and PAGE_LEG_WEIGHT:
        scores = scores + PAGE_LEG_WEIGHT * page_leg(scores, page, np.asarray(signals.page_similarity))
    if signals.page_text is not None and PAGE_TEXT_WEIGHT:
        scores = scores * page_text_factor(signals.page_text)
    # Last, so that page evidence does not give part of the demotion back: a guide is often the
    # page most about the question, which is why the rule lets it in.
    if signals.exact is not None:
        scores = np.where(signals.exact, scores, scores * AUTO_INCLUDED_FACTOR)
    scores = np.minimum(scores / max_score(signals.page_similarity is not None, signals.page_text is not None), 1.0)
    if signals.links is not None and PAGE_LINK_WEIGHT:
        votes = link_votes(scores, page, signals.links)
        scores = (scores + PAGE_LINK_WEIGHT * votes / max(votes.max(), 1.0)) / (1.0 + PAGE_LINK_WEIGHT)
    # Rounding makes sums of the same terms in a different order tie exactly (as in fusion.py).
    ranked = np.argsort(-np.round(scores, 12), kind="stable")
    return [(items[i][0], float(scores[i])) for i in ranked]


def max_score(page_similarity: bool = True, page_text: bool = False) -> float:
    """The largest re-scored value (fused 1.0, no penalty, every bonus at its most), so that
    dividing by it keeps scores in [0, 1] without flattening the top of the list."""
    return (1.0 + (PAGE_LEG_WEIGHT if page_similarity else 0.0)) * (1.0 + (PAGE_TEXT_WEIGHT if page_text else 0.0))
