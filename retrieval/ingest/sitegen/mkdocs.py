"""MkDocs and Material for MkDocs: admonitions, content tabs, snippets, attribute lists.

Admonitions (`!!! note "Title"`, collapsible `???` and `???+`) are found by mdit-py-plugins'
`admon` plugin, which implements Python-Markdown's admonition grammar with source line maps: each
becomes a labelled paragraph, its indented body dedented so it reads as prose, not as an indented
code block. Content tabs (`=== "Tab"`, pymdownx.tabbed) have no markdown-it plugin: a tab becomes a
sub-section whose heading is its title, its body dedented the same way.

markdown-include's `{!docs/operator-manual/argocd-cm.yaml!}` (Argo CD's reference pages are one in a
code block) takes the text of the file it names when the scan found it inside the corpus root
(includes.py): a page's text on the include's line, another file's lines in place of that line, so
the lines after it move down by the file's lines less one (the page is served and chunked so).
"""

from __future__ import annotations

import re

from .includes import MARKDOWN_INCLUDE, MAX_INCLUDED_FILE_BYTES, include, markdown_include_key
from .lines import Page, block_tokens, drop_heading_attrs, drop_html_comments

TAB = re.compile(r'^(?P<indent>[ \t]*)===\+?[ \t]+"(?P<title>[^"]*)"[ \t]*$')
ADMONITION = re.compile(r'^[ \t]*(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+)(?:[ \t]+(?P<classes>[^"]*?))?'
                        r'(?:[ \t]*"(?P<title>[^"]*)")?[ \t]*$')
SNIPPET = re.compile(r'^[ \t]*-{1,2}8<-{1,2}[ \t]+"?(?P<path>[^"]*)"?[ \t]*$')


def clean(page: Page) -> None:
    # tabs first: an admonition inside a tab is only an admonition once the tab's body is dedented
    if any("===" in line for line in page.lines[page.body:]):
        tabs(page)
    if any(line.lstrip().startswith(("!!!", "???")) for line in page.lines[page.body:]):
        admonitions(page)
    code = page.code_lines()
    for n in range(page.body, len(page.lines)):
        if n not in code and "8<" in page.lines[n] and SNIPPET.match(page.lines[n]):
            page.lines[n] = include(page, SNIPPET.match(page.lines[n]).group("path"), n, "mkdocs snippet", "snippet")
    placed = {}  # line -> a file's lines, placed last: the passes below count on one line per line
    for n in range(page.body, len(page.lines)):  # code lines too: the include is the block's whole text
        if "{!" in page.lines[n] and (match := MARKDOWN_INCLUDE.match(page.lines[n])):
            page.lines[n], lines = _markdown_include(page, match.group("path"), n)
            if lines is not None:
                placed[n] = lines
    drop_html_comments(page, code)
    drop_heading_attrs(page, code)
    for n, text in placed.items():
        page.lines[n] = text


def _markdown_include(page: Page, path: str, line: int) -> tuple[str, str | None]:
    """(the include's line, the lines that replace it last): a page's text on one line, another
    file's text indented as the include is, or nothing with a finding when the scan did not find it
    inside the corpus root."""
    text = page.files.get(markdown_include_key(path))
    if text is None:
        page.notice("mkdocs markdown-include", line, f"markdown-include of {path.strip()!r} is not resolved (not a "
                    f"file inside the corpus folder, or over {MAX_INCLUDED_FILE_BYTES // 1000} KB): its text is left "
                    "out of the page's chunks",
                    "copy the text into the page, or serve the folder that holds both")
        return "", None
    if path.strip().endswith((".md", ".markdown", ".mdx")):
        return text, None
    indent = page.lines[line][:len(page.lines[line]) - len(page.lines[line].lstrip())]
    return "", "\n".join(indent + row if row.strip() else row.rstrip() for row in text.split("\n"))


def label(kind: str, title: str | None) -> str:
    name = kind.replace("-", " ").replace("_", " ").capitalize()
    if title is None:
        return f"{name}:"
    return f"{name}: {title}" if title.strip() else ""


def admonitions(page: Page) -> None:
    for token in block_tokens(page.text):
        if token.type != "admonition_open" or token.map is None:
            continue
        start, end = token.map
        if start < page.body:
            continue
        match = ADMONITION.match(page.lines[start])
        if match is None:
            continue
        page.lines[start] = label(match.group("kind"), match.group("title"))
        _dedent(page, start + 1, end, 4)


def tabs(page: Page) -> None:
    code = page.code_lines()
    n = page.body
    while n < len(page.lines):
        match = TAB.match(page.lines[n]) if n not in code else None
        if match is None:
            n += 1
            continue
        indent = len(match.group("indent").expandtabs(4))
        title = match.group("title")
        page.lines[n] = page.sub_heading(n, title) if indent == 0 else f"{' ' * indent}{title}:"
        end = n + 1
        while end < len(page.lines):
            line = page.lines[end]
            if line.strip() and len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) < indent + 4:
                break
            end += 1
        _dedent(page, n + 1, end, 4)
        n += 1


def _dedent(page: Page, start: int, end: int, width: int) -> None:
    for n in range(start, min(end, len(page.lines))):
        line = page.lines[n].expandtabs(4) if page.lines[n].startswith("\t") else page.lines[n]
        strip = len(line) - len(line.lstrip(" "))
        page.lines[n] = line[min(strip, width):]
