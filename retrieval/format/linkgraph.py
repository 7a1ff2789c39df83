"""How a build's stored link targets name its pages: part of what describes a build.

The build stores each page's link targets (retrieval/ingest/links.py finds them in the markdown);
the search resolves them against the build's pages when it first needs them, for a ranking prior
(retrieval/search/priors.py). Both sides must spell a page the same way (`page_key`), so the
spelling lives here, beside the other modules the search may read a build through (`layout`,
`metadata`, `terms`, `slugs`), rather than in the markdown scanning the search never runs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_PAGE_EXTENSIONS = frozenset({".md", ".markdown", ".html", ".htm"})
_INDEX_NAMES = frozenset({"index", "_index", "readme"})


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
