"""The agents' questions read for what a page lacks: the words it does not hold, the heading their
intent names.
"""

from __future__ import annotations

import re

from retrieval.format.terms import identifier_terms
from retrieval.ingest.keywords import MAX_KEYWORD_CHARS

from .content import MAX_HEADING_CHARS

MAX_TERMS = 6  # the question words the page lacks, shown to the model

_STOP_TEXT = """
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each else ever every
few for from further get gets getting got had hadn has hasn have haven having he her here hers herself him himself
his how i if in into is isn it its itself just let like make makes me might more most much must my myself need
needs no nor not now of off on once one only or other ought our ours ourselves out over own per please possible
same shall she should shouldn so some such than that the their theirs them themselves then there these they this
those through to too under until up upon us use used uses using via want wants was wasn way ways we were weren
what when where whether which while who whom whose why will with within without won would wouldn yes yet you
your yours yourself yourselves anyone anything someone something thing things doc docs documentation page pages
example examples know tell show find work works working
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())  # English function words and the words of any question about docs
_TOKEN = re.compile(r"[A-Za-z0-9_$@][\w$@]*(?:(?:\.|::|->|-)[A-Za-z0-9_$@][\w$@]*)*")
WORD = re.compile(r"\w+")
_SUFFIXES = (("ies", "y"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""), ("s", ""))


def clean_texts(texts: list[str], *, limit: int, max_chars: int) -> list[str]:
    """Questions or feedback comments: whitespace collapsed, empty ones and repeats dropped, bounded."""
    out: dict[str, str] = {}
    for text in texts:
        cleaned = " ".join(str(text).split())[:max_chars]
        if cleaned:
            out.setdefault(cleaned.casefold(), cleaned)
    return list(out.values())[:limit]


def _variants(word: str) -> set[str]:
    """The word and its forms without a plural or verb ending: `retries` also counts as `retry`."""
    out = {word}
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.add(word[: -len(suffix)] + replacement)
    return out


def _page_forms(text: str) -> tuple[set[str], str]:
    lowered = text.casefold()
    forms: set[str] = set()
    for word in WORD.findall(lowered):
        forms |= _variants(word)
    return forms, lowered


def _question_terms(question: str) -> list[str]:
    """Identifiers whole (`max_connections`, `kubectl-apply`), other words one by one."""
    identifiers = set(identifier_terms(question))
    out: list[str] = []
    for token in _TOKEN.findall(question):
        token = token.strip(".-")
        if token.casefold() in identifiers:
            out.append(token)
        else:
            out.extend(WORD.findall(token))
    return out


def _is_candidate(term: str) -> bool:
    folded = term.casefold()
    if folded in STOP_WORDS or len(term) > MAX_KEYWORD_CHARS:
        return False
    if folded.isdigit():
        return len(folded) >= 3  # a status code or a port, not a list number
    return len(folded) >= 3 and not folded.replace("_", "").isdigit()


def _present(term: str, forms: set[str], lowered: str) -> bool:
    folded = term.casefold()
    if not WORD.fullmatch(folded):  # an identifier: present when the page spells it out
        return re.search(rf"(?<![\w.-]){re.escape(folded)}(?![\w-])", lowered) is not None
    return bool(_variants(folded) & forms)


def missing_terms(questions: list[str], page_text: str, *, limit: int = MAX_TERMS) -> list[str]:
    """The questions' terms the page (front matter included) does not contain, most asked first,
    then in the order they were asked: the same questions and page always give the same terms."""
    forms, lowered = _page_forms(page_text)
    counts: dict[str, int] = {}
    spelled: dict[str, str] = {}
    for question in questions:
        seen: set[str] = set()
        for term in _question_terms(question):
            folded = term.casefold()
            if folded in seen or not _is_candidate(term) or _present(term, forms, lowered):
                continue
            seen.add(folded)
            spelled.setdefault(folded, term)
            counts[folded] = counts.get(folded, 0) + 1
    order = {folded: n for n, folded in enumerate(spelled)}
    ranked = sorted(spelled, key=lambda f: (-counts[f], order[f]))
    return [spelled[f] for f in ranked[:limit]]


def intent_heading(questions: list[str]) -> str:
    """A heading named after what the group asks about: the run of informative words (two or three, else
    one) that the most questions share, in the spelling first asked ("Apple Pay", "rate limit"); the
    first question when they share none."""
    counts: dict[tuple[str, ...], int] = {}
    spelled: dict[tuple[str, ...], str] = {}
    for question in questions:
        words = WORD.findall(question)
        stems = [min(_variants(w.casefold()), key=lambda v: (len(v), v)) for w in words]  # "limiting" meets "limit"
        ends = [_is_candidate(w) for w in words]  # a run may not start or end on a stop word
        seen: set[tuple[str, ...]] = set()
        for size in (3, 2, 1):
            for start in range(len(words) - size + 1):
                run = words[start:start + size]
                if not (ends[start] and ends[start + size - 1]) or run[0].isdigit():
                    continue
                key = tuple(stems[start:start + size])
                if key in seen:
                    continue
                seen.add(key)
                counts[key] = counts.get(key, 0) + 1
                spelled.setdefault(key, " ".join(run))
    if not counts:
        return " ".join(questions[0].split())[:MAX_HEADING_CHARS].rstrip("?") if questions else "Answer"
    best = max(counts.values())
    order = {k: n for n, k in enumerate(counts)}
    shared = [k for k in counts if counts[k] == best]
    key = max(shared, key=lambda k: (len(k) if best > 1 else 0, -order[k]))
    text = spelled[key]
    return (text[0].upper() + text[1:])[:MAX_HEADING_CHARS]
