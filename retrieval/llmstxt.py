"""A corpus as agents that read the web expect it (llmstxt.org): `llms.txt`, an index of every page
with a one-line description under one H2 per top folder, and `llms-full.txt`, every page's markdown in
the same order. Plain text in, plain text out: the serving side chooses the URLs and caches the result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

DESCRIPTION_CHARS = 160
SCAN_CHARS = 20_000  # a page's first paragraph of prose is near its top; a long page is not read to its end
ROOT_SECTION = "Overview"  # pages at the top of the docs tree
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_DESCRIPTION_KEY = re.compile(r"^(?:description|summary)[ \t]*:[ \t]*(.+?)[ \t]*$", re.MULTILINE | re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)][.!?])\s+(?=[A-Z])")
_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|`+|<[^>]+>|(?<!\w)[*_]+|[*_]+(?!\w)")  # not snake_case


@dataclass(frozen=True)
class Page:
    """One document as llms.txt lists it."""

    path: str  # the document's path in the corpus, e.g. "guides/retries.md"
    title: str
    description: str
    url: str


def page_order(paths: Iterable[str]) -> list[str]:
    """The order of both files: pages at the top of the tree first, then each top folder's pages, by path."""
    return sorted(paths, key=lambda p: ("/" in p, p))


def section_of(path: str) -> str:
    """The H2 a page is listed under: its top folder as words ("api-reference" -> "Api reference")."""
    if "/" not in path:
        return ROOT_SECTION
    words = re.sub(r"[-_]+", " ", path.split("/", 1)[0]).strip()
    return words[:1].upper() + words[1:] if words else ROOT_SECTION


def page_description(markdown: str) -> str:
    """One line about a page: its front matter `description` (or `summary`), else the first sentence of its
    first paragraph of prose; without markup, cut at DESCRIPTION_CHARS."""
    front = _FRONT_MATTER.match(markdown)
    if front:
        found = _DESCRIPTION_KEY.search(front.group(1))
        if found:
            return _one_line(found.group(1).strip("'\""))
        markdown = markdown[front.end():]
    in_fence = False
    paragraph: list[str] = []
    for line in markdown[:SCAN_CHARS].splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            if paragraph:
                break
            continue
        if in_fence:
            continue
        if not stripped:
            if paragraph:
                break
            continue
        if stripped.startswith(("#", "|", "<!--", ">", "- ", "* ", "1.")) or stripped in ("---", "***"):
            if paragraph:
                break
            continue
        paragraph.append(stripped)
    return _one_line(" ".join(paragraph))


def _one_line(text: str) -> str:
    text = " ".join(_MARKUP.sub(lambda m: m.group(1) or "", text).split())
    text = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(text) <= DESCRIPTION_CHARS:
        return text
    return text[: DESCRIPTION_CHARS - 1].rstrip() + "…"


def _link_text(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split())


def render_index(title: str, summary: str, pages: Iterable[Page], details: str = "") -> str:
    """llms.txt: `# title`, `> summary`, optional details, then `## Section` and `- [title](url): description`."""
    lines = [f"# {' '.join(title.split())}", ""]
    if summary.strip():
        lines += [f"> {' '.join(summary.split())}", ""]
    if details.strip():
        lines += [details.strip(), ""]
    section = None
    for page in pages:
        heading = section_of(page.path)
        if heading != section:
            if section is not None:
                lines.append("")
            lines += [f"## {heading}", ""]
            section = heading
        link = f"- [{_link_text(page.title or page.path)}]({page.url})"
        lines.append(f"{link}: {page.description}" if page.description else link)
    return "\n".join(lines).rstrip() + "\n"


def render_full(title: str, summary: str, pages: Iterable[tuple[Page, str]]) -> Iterator[str]:
    """llms-full.txt, piece by piece (a large corpus is never held whole): the same header, then each
    page's markdown under a line naming its source."""
    head = f"# {' '.join(title.split())}\n\n"
    if summary.strip():
        head += f"> {' '.join(summary.split())}\n\n"
    yield head
    for page, markdown in pages:
        yield f"---\n\nSource: {page.url}\n\n{markdown.rstrip()}\n\n"


def pages_of(rows: Iterable[tuple[str, str, str]], url: Callable[[str], str]) -> list[Page]:
    """Pages from (path, title, markdown) rows in page order, each linked at `url(path)`."""
    by_path = {path: (title, markdown) for path, title, markdown in rows}
    return [Page(path, by_path[path][0], page_description(by_path[path][1]), url(path))
            for path in page_order(by_path)]
