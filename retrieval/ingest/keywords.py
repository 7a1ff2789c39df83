"""Front matter `keywords`: the words readers search a page by that its text does not use.

Authors list them by hand, or approve them from a content fix proposal made of the questions agents
could not answer (retrieval/fixes/content.py). Every chunk of the page carries them in its
`keywords` column, full-text indexed like the heading and boosted as much (retrieval/search/legs.py);
identifier-like keywords (`max_connections`) also join the chunk's `ident` column; the page's first
chunk embeds them. The page's text, its chunks' boundaries and IDs do not change, and a page
without keywords is indexed exactly as before.

`keywords` is a common front matter key of static site generators (a YAML list, or one
comma-separated string for HTML meta tags), so a value docsmcp cannot use is a warning and is
ignored, never an error that would stop a build that worked before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.format.terms import identifier_text

from .chunking import Chunk

KEY = "keywords"
MAX_KEYWORDS = 20  # more would describe a different page in every chunk of this one
MAX_KEYWORD_CHARS = 60  # a term or a short phrase, not a sentence
_SPACE = re.compile(r"\s+")
_KEY_LINE = re.compile(rf"^{KEY}\s*:")


@dataclass(frozen=True)
class Keywords:
    terms: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # what was ignored, and why, for a validate warning
    line: int | None = None  # 1-based line of `keywords:` in the file


def page_keywords(frontmatter: dict, lines: list[str], frontmatter_end: int) -> Keywords:
    """The page's keywords in their order, duplicates (ignoring case) dropped."""
    if KEY not in frontmatter or frontmatter[KEY] is None:
        return Keywords()
    line = next((n + 1 for n in range(min(frontmatter_end, len(lines))) if _KEY_LINE.match(lines[n])), None)
    value = frontmatter[KEY]
    problems: list[str] = []
    if isinstance(value, str):
        items: list[object] = value.split(",")
    elif isinstance(value, list):
        items = value
    else:
        return Keywords((), (f"keywords is a {_type(value)}; write a list of short strings, "
                             "e.g. keywords: [rate limit, 429]",), line)
    terms: dict[str, str] = {}
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            problems.append(f"keyword {item!r} is a {_type(item)}, not a string")
            continue
        term = _SPACE.sub(" ", str(item)).strip()
        if not term:
            continue
        if len(term) > MAX_KEYWORD_CHARS:
            problems.append(f"keyword {term[:40]!r}... is longer than {MAX_KEYWORD_CHARS} characters")
            continue
        terms.setdefault(term.casefold(), term)
    kept = list(terms.values())
    if len(kept) > MAX_KEYWORDS:
        problems.append(f"{len(kept)} keywords; only the first {MAX_KEYWORDS} are used")
        kept = kept[:MAX_KEYWORDS]
    return Keywords(tuple(kept), tuple(problems), line)


def _type(value: object) -> str:
    return {dict: "mapping", list: "list", type(None): "null"}.get(type(value), type(value).__name__)


def add_keywords(chunks: list[Chunk], terms: tuple[str, ...]) -> None:
    """Gives every chunk of the page its keywords (see the module docstring for where they count)."""
    if not terms:
        return
    text = ", ".join(terms)
    extra = identifier_text(*terms).split()
    for chunk in chunks:
        chunk.keywords = text
        if extra:
            chunk.ident = " ".join(dict.fromkeys([*chunk.ident.split(), *extra]))
