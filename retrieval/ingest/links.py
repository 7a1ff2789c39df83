"""Which pages of the corpus a page links to.

Documentation sends its readers to the page that explains a topic: a task links to its
concept page, a troubleshooting guide to the page for each symptom, a "What's next" list to
the pages worth reading after this one. Among the pages that match a question, the ones the
others link to are the ones their authors consider the place to read about it; the search uses
that as a ranking prior (retrieval/search/priors.py).

The build stores each page's link targets as written, made relative to the corpus root (a
relative link is resolved against its page's folder); the search resolves them against the
build's pages when it first needs them (linkgraph.py), so a target is found whichever build added the page it
names. Sites publish pages under URLs that differ from their source paths (`/docs/concepts/pods/`
for `concepts/pods.md`, `guide/` for `guide/index.md`), so a target names the page whose path,
without its extension or index file name, is the longest tail of the target's path.
"""

from __future__ import annotations

import posixpath
import re

from retrieval.format.linkgraph import page_key

from .parsing import ParsedDocument

# [text](target), from its "](" on: link text may wrap over lines. Images match too; they
# name files that are not pages, which resolve to nothing.
_INLINE = re.compile(r"\]\(\s*<?([^)\s>]+)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)")  # [label]: target
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")  # https:, mailto:, //host
_CODE_BLOCKS = frozenset({"fence", "code"})


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
