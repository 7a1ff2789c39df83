"""Which pages of the corpus a page links to.

Documentation sends its readers to the page that explains a topic: a task links to its
concept page, a troubleshooting guide to the page for each symptom, a "What's next" list to
the pages worth reading after this one. Among the pages that match a question, the ones the
others link to are the ones their authors consider the place to read about it; the search uses
that as a ranking prior (retrieval/search/priors.py).

The build stores each page's link targets as written, made relative to the corpus root (a
relative link is resolved against its page's folder); the search resolves them against the
build's pages when it first needs them, so a target is found whichever build added the page it
names. Sites publish pages under URLs that differ from their source paths (`/docs/concepts/pods/`
for `concepts/pods.md`, `guide/` for `guide/index.md`), so a target names the page whose path,
without its extension or index file name, is the longest tail of the target's path.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .parsing import ParsedDocument

# [text](target), from its "](" on: link text may wrap over lines. Images match too; they
# name files that are not pages, which resolve to nothing.
_INLINE = re.compile(r"\]\(\s*<?([^)\s>]+)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)")  # [label]: target
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")  # https:, mailto:, //host
_PAGE_EXTENSIONS = frozenset({".md", ".markdown", ".html", ".htm"})
_INDEX_NAMES = frozenset({"index", "_index", "readme"})
_CODE_BLOCKS = frozenset({"fence", "code"})


@dataclass(frozen=True)
class PageLinks:
    """Resolved links in compressed rows: page i links to `targets[starts[i]:starts[i + 1]]`
    (page numbers as in the list of pages resolved against, no page linking to itself)."""

    starts: np.ndarray  # int64, one more than there are pages
    targets: np.ndarray  # int64

    def of(self, page: int) -> np.ndarray:
        return self.targets[self.starts[page]:self.starts[page + 1]]


def page_key(path: str) -> str:
    """A page's path as a link names it: no extension, no index file name, no `.` or `..` part."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    if parts:
        stem, extension = posixpath.splitext(parts[-1])
        if extension.lower() in _PAGE_EXTENSIONS:
            parts[-1] = stem
        if parts[-1].lower() in _INDEX_NAMES:
            parts.pop()
    return "/".join(parts)


def _target(href: str, relpath: str) -> str | None:
    if _EXTERNAL.match(href):
        return None
    path = href.split("#", 1)[0].split("?", 1)[0]
    if not path:
        return None  # a link within the page
    if not path.startswith("/"):
        path = posixpath.join(posixpath.dirname(relpath), path)
    return page_key(posixpath.normpath(path)) or None


def link_targets(doc: ParsedDocument, relpath: str) -> list[str]:
    """The page's distinct link targets (as `page_key` spells them), in order of appearance;
    external links, links within the page and code blocks are left out."""
    code = {n for b in doc.blocks if b.kind in _CODE_BLOCKS for n in range(b.start, b.end)}
    found: dict[str, None] = {}
    for n, line in enumerate(doc.lines):
        if n in code or "](" not in line and "]:" not in line:
            continue
        hrefs = [m.group(1) for m in _INLINE.finditer(line)]
        reference = _REFERENCE.match(line)
        if reference:
            hrefs.append(reference.group(1))
        for href in hrefs:
            target = _target(href, relpath)
            if target:
                found.setdefault(target, None)
    return list(found)


def resolve_links(pages: Sequence[str], targets: Sequence[Sequence[str] | None]) -> PageLinks:
    """`targets[i]`, the stored link targets of `pages[i]`, as page numbers."""
    keys: dict[str, int] = {}  # a page's key -> the page; -1 when several pages share it
    for page, path in enumerate(pages):
        key = page_key(path)
        keys[key] = page if keys.get(key, page) == page else -1
    deepest = max((key.count("/") + 1 for key in keys), default=0)
    starts = np.zeros(len(pages) + 1, np.int64)
    found: list[int] = []
    for page, written in enumerate(targets):
        linked: dict[int, None] = {}
        for target in written or ():
            parts = target.split("/")
            if len(parts) > deepest:
                parts = parts[-deepest:]  # no page key is longer
            for start in range(len(parts)):
                hit = keys.get("/".join(parts[start:]))
                if hit is not None:  # the longest tail that is a page's key decides, even when ambiguous
                    if hit >= 0 and hit != page:
                        linked.setdefault(hit, None)
                    break
        found.extend(linked)
        starts[page + 1] = len(found)
    return PageLinks(starts, np.asarray(found, np.int64))
