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

from .terms import identifier_terms

SNIPPET_CHARS = 300
MAX_OCCURRENCES = 400  # enough to place a window; bounds the work on very long chunks
_WORD = re.compile(r"[\w$@]+")
_SPACE = re.compile(r"\s+")
_HEADING_LINE = re.compile(r"\A\s*#{1,6}\s+[^\n]*\n?")
_SUFFIXES = ("ing", "ies", "es", "ed", "s")
STOP_WORDS = frozenset("""a an and are as at be but by can do does for from how i if in into is it its
of on or so that the their then there these this to was what when where which who why will with you
your""".split())


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


def _body(content: str) -> str:
    stripped = _HEADING_LINE.sub("", content, count=1)
    text = stripped if stripped.strip() else content
    return _SPACE.sub(" ", text).strip()


def _occurrences(text: str, terms: list[str]) -> list[tuple[int, int, int]]:
    """(start, end, term number) of each term at a word start, in text order."""
    lowered = text.lower()
    found: list[tuple[int, int, int]] = []
    for number, term in enumerate(terms):
        for match in re.finditer(r"(?<![\w$@])" + re.escape(term), lowered):
            found.append((match.start(), match.end(), number))
    found.sort()
    return found


def make_snippet(content: str, query: str, max_chars: int = SNIPPET_CHARS) -> str:
    """At most `max_chars` characters, ellipses included."""
    text = _body(content)
    if len(text) <= max_chars:
        return text
    max_chars -= 2  # room for the ellipses
    hits = _occurrences(text, query_terms(query))[:MAX_OCCURRENCES]
    start = 0
    if hits:
        best, best_count = 0, -1
        for i, (first, _, _) in enumerate(hits):
            covered = {n for (s, e, n) in hits[i:] if e - first <= max_chars}
            if len(covered) > best_count:
                best, best_count = first, len(covered)
        # Lead in with a little context before the first matched term.
        start = max(0, best - max_chars // 6)
    end = min(len(text), start + max_chars)
    start = max(0, end - max_chars) if end == len(text) else start
    if start > 0:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < start + 30 else start
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + max_chars // 2 else end
    snippet = text[start:end].strip()
    return ("…" if start > 0 else "") + snippet + ("…" if end < len(text) else "")
