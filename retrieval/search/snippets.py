"""Snippets: the part of a chunk where the query's terms are, bounded in length.

An agent decides from the snippet whether to fetch the chunk, so it should show the matched
terms in context rather than the chunk's first lines. The window of at most `max_chars`
covering the most distinct query terms wins (ties: the earliest); it is widened to word
boundaries and marked with an ellipsis where text was cut. Whitespace runs collapse to one
space and the chunk's own heading line is dropped (hits carry the heading separately).

Matching is deliberately simple and forgiving: case-insensitive, at word starts, with a crude
suffix strip so `retries` finds `retry` and `retrying`. It only chooses a window; ranking
never depends on it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from retrieval.format.terms import identifier_terms

SNIPPET_CHARS = 300
MAX_OCCURRENCES = 50  # per term: enough to place a window; bounds the work on very long chunks
_WORD = re.compile(r"[\w$@]+")
_SPACE = re.compile(r"\s+")
_HEADING_LINE = re.compile(r"\A\s*#{1,6}\s+[^\n]*\n?")
_SUFFIXES = ("ing", "ies", "es", "ed", "s")
STOP_WORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for", "from",
    "how", "i", "if", "in", "into", "is", "it", "its", "of", "on", "or", "so", "that", "the",
    "their", "then", "there", "these", "this", "to", "was", "what", "when", "where", "which",
    "who", "why", "will", "with", "you", "your",
])


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def query_terms(query: str) -> list[str]:
    """Distinct lowercase matching stems: identifiers whole, then plain words without stop words."""
    terms: dict[str, None] = {}
    for ident in identifier_terms(query):
        terms.setdefault(ident, None)
    for word in _WORD.findall(query.lower()):
        if len(word) >= 2 and word not in STOP_WORDS:
            terms.setdefault(_stem(word), None)
    return list(terms)


@lru_cache(maxsize=256)
def _cached_terms(query: str) -> tuple[str, ...]:
    """Every hit of a page is snipped for the same query: its terms are found once."""
    return tuple(query_terms(query))


def _body(content: str) -> str:
    """The chunk without its heading line (unless that is all there is)."""
    match = _HEADING_LINE.match(content)
    if match and content[match.end():].strip():
        return content[match.end():]
    return content


def _occurrences(text: str, terms: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """(start, end, term) of each term at a word start, in text order.

    `str.find` per term rather than one regex alternation: on a 150k-character chunk the
    regex took 17 ms, the finds well under one. Each term contributes at most
    MAX_OCCURRENCES places and the same number of rejected in-word finds.
    """
    lowered = text.lower()
    found = []
    for term in terms:
        kept = tried = 0
        at = lowered.find(term)
        while at >= 0 and kept < MAX_OCCURRENCES and tried < 2 * MAX_OCCURRENCES:
            tried += 1
            before = lowered[at - 1] if at else " "
            if not (before.isalnum() or before in "_$@"):
                found.append((at, at + len(term), term))
                kept += 1
            at = lowered.find(term, at + 1)
    found.sort()
    return found


def _best_window_start(hits: list[tuple[int, int, str]], budget: int) -> int:
    """Start of the first window of `budget` characters covering the most distinct terms.

    Two pointers over the occurrences, so long chunks with many matches stay linear.
    """
    best, best_count = hits[0][0], 0
    counts: dict[str, int] = {}
    j = 0
    for first, _, term in hits:
        while j < len(hits) and hits[j][1] - first <= budget:
            counts[hits[j][2]] = counts.get(hits[j][2], 0) + 1
            j += 1
        if len(counts) > best_count:
            best, best_count = first, len(counts)
        if term in counts:
            counts[term] -= 1
            if not counts[term]:
                del counts[term]
    return best


def make_snippet(content: str, query: str, max_chars: int = SNIPPET_CHARS) -> str:
    """At most `max_chars` characters, ellipses included, whitespace runs collapsed.

    The window is chosen on the raw text (collapsing whitespace only ever shortens it), so a
    20k-character chunk costs one lowercase pass and one regex scan, not a rewrite.
    """
    body = _body(content)
    if len(body) <= 2 * max_chars:
        flat = _SPACE.sub(" ", body).strip()
        if len(flat) <= max_chars:
            return flat
    budget = max_chars - 2  # room for the ellipses
    hits = _occurrences(body, _cached_terms(query))
    start = 0
    if hits:
        # Lead in with a little context before the first matched term.
        start = max(0, _best_window_start(hits, budget) - budget // 6)
    while start < len(body) and body[start].isspace():
        start += 1
    end = min(len(body), start + budget)
    if end == len(body):
        start = max(0, end - budget)
    if start > 0 and not body[start - 1].isspace():
        space = _SPACE.search(body, start, min(len(body), start + 30))
        start = space.end() if space else start
    if end < len(body) and not body[end].isspace():
        cut = max(body.rfind(" ", start, end), body.rfind("\n", start, end))
        end = cut if cut > start + budget // 2 else end
    snippet = _SPACE.sub(" ", body[start:end]).strip()
    return ("…" if start > 0 else "") + snippet + ("…" if end < len(body) else "")
