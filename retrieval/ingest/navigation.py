"""How much of a chunk is navigation: lines that point elsewhere rather than say something.

"What's next", "See also" and table-of-contents sections are lists of links. They share the
words of the pages they link to, so they match a question about those pages as well as the
pages do, while answering nothing. The measure is structural, never a list of heading words:
the share of the chunk's body lines that are mostly link text (a bulleted link with a few words
around it, or a line whose words are mostly inside links). The build stores it per chunk; the
search uses it as a prior (retrieval/search/priors.py).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# [text](target), [text][ref], and autolinks; images are links too for this purpose.
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|!?\[([^\]]*)\]\[[^\]]*\]|<(?:https?|mailto):[^>]+>")
_URL = re.compile(r"https?://\S+")
_WORD = re.compile(r"\w+")
# A bulleted line with a link and at most this many words outside it reads as a pointer
# ("- Learn more about [Secrets](/docs/secret/)").
LIST_ITEM_OTHER_WORDS = 8


def _is_navigation_line(line: str) -> bool:
    if not _LINK.search(line) and not _URL.search(line):
        return False
    linked = sum(len(_WORD.findall(m.group(1) or m.group(2) or "")) for m in _LINK.finditer(line))
    rest = _URL.sub(" ", _LINK.sub(" ", _LIST_ITEM.sub("", line)))
    other = len(_WORD.findall(rest))
    if _LIST_ITEM.match(line) and other <= LIST_ITEM_OTHER_WORDS:
        return True
    return linked >= other


def link_share(markdown: str) -> float:
    """Share (0..1) of the body's text lines that are navigation; headings, fences and blank lines
    do not count, nor do lines inside code blocks."""
    counted = navigation = 0
    in_fence = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or not line.strip() or _HEADING.match(line):
            continue
        counted += 1
        navigation += _is_navigation_line(line)
    return navigation / counted if counted else 0.0
