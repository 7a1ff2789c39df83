"""Fenced directives: MyST's ```` ```{note} ```` and `:::{note}`, Docusaurus's `:::note[Title]`.

The fences are found by markdown-it (backtick fences) and mdit-py-plugins' `colon_fence` plugin
(`:::`), with their source lines; a directive's body is opaque to the parser, so it is cleaned
again on its own, which reads directives nested inside it. A callout becomes a labelled
paragraph, a tab a sub-section, a code directive a code fence; a table of contents or an API
listing carries no prose and is dropped; an unknown directive keeps its body, with one finding.
"""

from __future__ import annotations

import re

from .includes import include
from .lines import Page, block_tokens

CALLOUTS = {"note", "tip", "hint", "important", "warning", "caution", "danger", "attention", "error", "info",
            "seealso", "see-also", "admonition", "success", "question", "failure", "bug", "example", "quote",
            "abstract", "todo", "versionadded", "versionchanged", "deprecated", "dropdown", "sidebar", "topic",
            "margin", "epigraph", "pull-quote", "card", "secondary", "experimental"}
TAB_ITEMS = {"tab-item", "tab", "tabbed", "tab-set-code"}
CODE = {"code-block", "code", "sourcecode", "code-cell"}
# Directives whose body is code of a fixed language: a diagram's source, a MyST example shown as written
# (mystmd's `{myst}` renders its body beside the source; the source is what a search should find).
CODE_OF = {"mermaid": "mermaid", "myst": "markdown", "myst-example": "markdown"}
# Directives whose body is the page's text; the markers alone go.
WRAPPERS = {"tab-set", "tabs", "grid", "grid-item", "grid-item-card", "div", "container", "only", "math",
            "eval-rst", "rst", "md", "glossary", "list-table", "csv-table", "table", "centered",
            "rubric", "figure", "details", "highlights", "hlist", "parsed-literal", "line-block", "rst-class",
            "cssclass", "class"}
DROPPED = {"toctree", "contents", "index", "include", "literalinclude", "image", "raw", "highlight",
           "bibliography", "tableofcontents", "autosummary", "automodule", "autoclass", "autofunction",
           "automethod", "autoattribute", "autodata", "autoexception", "currentmodule", "module", "program",
           "sectionauthor", "moduleauthor", "codeauthor", "meta", "youtube", "video", "iframe", "tags",
           "plot", "graphviz", "uml", "jupyter-execute", "exec", "toc"}
INCLUDES = {"include", "literalinclude"}
LABEL_NAMES = {"seealso": "See also", "see-also": "See also", "versionadded": "New in version",
               "versionchanged": "Changed in version", "deprecated": "Deprecated since version"}
# `{note}`, and mystmd's inline options: `{note .dropdown class=x}`
INFO = re.compile(r"^\{(?P<myst>[\w:.-]+)(?:[ \t]+[^{}]*)?\}[ \t]*(?P<myst_arg>.*)$|^(?P<name>[a-zA-Z][\w-]*)"
                  r"(?:\[(?P<title>[^\]]*)\]|[ \t]+(?P<arg>.*))?[ \t]*(?:\{[^}]*\})?[ \t]*$")
BACKTICK_FENCE = re.compile(r"^[ \t]*(`{3,})")
CAPTION = re.compile(r"^([ \t]*):(?:caption|alt):[ \t]+(.+)$")
OPTION = re.compile(r"^[ \t]*:[\w-]+:(?:[ \t].*)?$")


def clean(page: Page, *, docusaurus: bool) -> None:
    """MyST's directives are always `{name}`; Docusaurus's `:::name` admonitions only on its pages."""
    if not any(("```" in line or "~~~" in line or ":::" in line) for line in page.lines[page.body:]):
        return
    _directives(page, page.body, len(page.lines), docusaurus, depth=0)


def _directives(page: Page, start: int, end: int, docusaurus: bool, depth: int) -> None:
    if depth > 8:  # nesting deeper than any real page: leave the rest as it is
        return
    text = "\n".join(page.lines[start:end])
    for token in block_tokens(text):
        if token.map is None or token.type not in ("fence", "colon_fence"):
            continue
        match = INFO.match(token.info.strip())
        if match is None:
            continue
        name = match.group("myst")
        arg = match.group("myst_arg") or ""
        if name is None:
            if token.type != "colon_fence" or not docusaurus:
                continue  # a code fence, or a `:::` of another kind
            name = match.group("name").lower()
            arg = match.group("title") if match.group("title") is not None else (match.group("arg") or "")
        first, last = start + token.map[0], start + token.map[1] - 1
        closed = last > first and page.lines[last].strip().startswith(token.markup[:3]) \
            and set(page.lines[last].strip()) <= set(token.markup[:1])
        body_end = last if closed else last + 1
        _directive(page, name.lower(), arg.strip(), first, body_end, closed, docusaurus, depth)


def _directive(page: Page, name: str, arg: str, first: int, body_end: int, closed: bool, docusaurus: bool,
               depth: int) -> None:
    body = _skip_options(page, first + 1, body_end)
    indent = page.lines[first][: len(page.lines[first]) - len(page.lines[first].lstrip())]
    if name in CODE or name in CODE_OF:
        language = CODE_OF.get(name) or (arg.split()[0] if arg else "")
        fence = _code_fence(page.lines[body:body_end])
        page.lines[first] = f"{indent}{fence}{language}"
        caption = next((n for n in range(first + 1, body) if page.lines[n].strip()), None)
        if caption is not None:  # the caption above the code, the fence on the options' last line
            page.lines[first] = f"{indent}{page.lines[caption].strip()}"
            page.lines[caption] = ""
            page.lines[body - 1] = f"{indent}{fence}{language}"
        if closed:
            page.lines[body_end] = f"{indent}{fence}"
        return
    if closed:
        page.lines[body_end] = ""
    if name in DROPPED:
        for n in range(first, body_end):
            page.lines[n] = ""
        if name == "include":
            page.lines[first] = include(page, arg, first, f"directive {name}", f"{{{name}}}")
        elif name in INCLUDES:
            page.notice(f"directive {name}", first, f"{{{name}}} of {arg!r} is not resolved: its text is left out "
                        "of the page's chunks", "copy the text into the page if agents should find it here")
        return
    if name in CALLOUTS:
        label = LABEL_NAMES.get(name, name.replace("-", " ").capitalize())
        if name == "admonition" and arg:
            label, arg = arg, ""
        page.lines[first] = f"{indent}{label}: {arg}".rstrip() if arg else f"{indent}{label}:"
    elif name in TAB_ITEMS:
        page.lines[first] = page.sub_heading(first, arg) if arg and not indent else (f"{indent}{arg}:" if arg else "")
    elif name in WRAPPERS:
        page.lines[first] = f"{indent}{arg}" if name in ("rubric", "table", "list-table", "csv-table") else ""
    else:
        page.notice(f"directive {name}", first, f"directive {{{name}}} is not one docsmcp knows: its markers are "
                    "dropped, its body kept", "see docs/generators.md for the directives docsmcp reads")
        page.lines[first] = ""
    if body < body_end:
        _directives(page, body, body_end, docusaurus, depth + 1)


def _code_fence(body: list[str]) -> str:
    """Backticks enough to fence `body`: one more than its longest fence (a ```` ````{code} ```` often shows
    a page with its own ``` fences)."""
    longest = max((len(m.group(1)) for line in body if (m := BACKTICK_FENCE.match(line))), default=0)
    return "`" * max(3, longest + 1)


def _skip_options(page: Page, start: int, end: int) -> int:
    """Blank a directive's options (`:class: x` lines, or a `---` YAML block); the first body line after them.
    A caption is text the page shows: its line keeps it."""
    n = start
    if n < end and page.lines[n].strip() == "---":
        close = next((k for k in range(n + 1, end) if page.lines[k].strip() == "---"), None)
        if close is not None:
            for k in range(n, close + 1):
                page.lines[k] = ""
            return close + 1
    while n < end and OPTION.match(page.lines[n]):
        caption = CAPTION.match(page.lines[n])
        page.lines[n] = f"{caption.group(1)}{caption.group(2).strip()}" if caption else ""
        n += 1
    return n
