"""Hugo: shortcodes read for the text they put on the page, HTML comments and heading anchors dropped.

Hugo expands shortcodes everywhere in a page, code blocks included (`{{</* x */>}}` is how an
author shows one literally), so they are read everywhere too. A shortcode that carries text keeps
it (a glossary tooltip its text, a heading its words, a figure its caption); a note becomes a
labelled paragraph; a tab a sub-section; one that carries none (a version parameter, a button) is
dropped. No Python implementation of Hugo's shortcode grammar exists; the pattern below follows
https://gohugo.io/content-management/shortcodes/ (`{{< name args >}}`, `{{% name args %}}`,
closing `{{< /name >}}`, self-closing `{{< name />}}`, escaped `{{</* name */>}}`).
"""

from __future__ import annotations

import re

from .includes import include
from .lines import Page, args_of, drop_heading_attrs, drop_html_comments, humanize

SHORTCODE = re.compile(
    r"\{\{(?P<delim>[<%])(?P<esc>/\*)?\s*(?P<close>/)?\s*(?P<name>[A-Za-z0-9_][\w./-]*)"
    r"(?P<args>(?:\"(?:[^\"\\]|\\.)*\"|`[^`]*`|[^\"`])*?)\s*(?P<escend>\*/)?\s*/?\s*[>%]\}\}",
    re.DOTALL)

# The paired shortcodes that are callouts (Hugo's docs themes: Docsy, Kubernetes, Hextra, Book).
LABELS = {"note": "Note", "caution": "Caution", "warning": "Warning", "tip": "Tip", "info": "Info",
          "important": "Important", "danger": "Danger", "hint": "Hint", "callout": "Note", "alert": "Note",
          "admonition": "Note", "pageinfo": "Note", "thirdparty-content": "Note"}
TABS = {"tabs", "tabpane", "tabpanes", "tab-set"}
TAB = {"tab", "tab-item"}
# Pairs whose tags carry nothing and whose inner text is the page's: the tags go, the text stays.
WRAPPERS = {"table", "example", "details", "expand", "blocks/section", "cardpane", "card", "columns",
            "column", "center", "mermaid", "highlight", "code", "markdown", "md", "steps", "callout-list",
            "release-toc", "collapse"}
HIDDEN = {"comment"}  # the inner text is not on the page
# Text-less shortcodes: site parameters, version numbers, buttons, embedded widgets.
DROPPED = {"param", "skew", "latest-version", "latest-semver", "latest-release-notes", "release-branch",
           "version-check", "kat-button", "katacoda-tutorial", "cve-feed", "cncf-landscape", "api-reference",
           "dockershim-removal", "toc", "youtube", "vimeo", "tweet", "gist", "instagram", "x", "asciinema",
           "blocks/cover", "blocks/lead", "feature-state", "codenew", "code_sample", "readfile", "imgproc",
           "pageinfo-end", "swaggerui", "redoc", "iframe", "video", "button", "icon", "fa", "badge",
           "include", "include-md", "children", "childpages", "sectionfiles", "whatsnext"}
# `{{% heading "prerequisites" %}}`: the i18n keys of the Kubernetes and Docsy themes' section headings.
HEADINGS = {"prerequisites": "Before you begin", "whatsnext": "What's next", "objectives": "Objectives",
            "cleanup": "Cleaning up", "synopsis": "Synopsis", "options": "Options", "seealso": "See Also",
            "envvars": "Environment variables", "options-from-parent": "Options inherited from parent commands"}
INCLUDES = {"include", "include-md", "readfile", "codenew", "code_sample"}


def clean(page: Page) -> None:
    code = page.code_lines()
    if not any("{{" in line for line in page.lines[page.body:]):
        drop_html_comments(page, code)
        drop_heading_attrs(page, code)
        return
    pairs = _paired(page)
    page.substitute(SHORTCODE, lambda m, line: _replace(page, m, line, pairs))
    if "comment" in pairs:
        _drop_hidden(page)
    drop_html_comments(page, code)
    drop_heading_attrs(page, code)


def _paired(page: Page) -> set[str]:
    """Names that have a closing tag somewhere in the page: only those enclose text."""
    return {m.group("name") for m in SHORTCODE.finditer(page.text) if m.group("close") and not m.group("esc")}


def _replace(page: Page, match: re.Match, line: int, pairs: set[str]) -> str:
    if match.group("esc"):  # `{{</* note */>}}` shows `{{< note >}}`, as Hugo renders it
        inner = match.group(0).replace("/*", "", 1)
        end = inner.rfind("*/")
        return inner if end < 0 else inner[:end] + inner[end + 2:]
    name, closing = match.group("name"), bool(match.group("close"))
    positional, named = args_of(match.group("args"))
    whole_line = page.lines[line].strip() == match.group(0).strip() and "\n" not in match.group(0)
    if name in HIDDEN:
        return f"\0hidden-{'end' if closing else 'start'}\0" if name in pairs else ""
    if closing:
        return ""
    if name in ("glossary_tooltip", "glossary_definition", "term"):
        text = named.get("text") or humanize(named.get("term_id") or (positional[0] if positional else ""))
        if name == "glossary_definition" and named.get("prepend"):
            return f"{named['prepend']} {text}"
        return text
    if name == "heading":
        key = positional[0] if positional else named.get("name", "")
        return HEADINGS.get(key, humanize(key).capitalize())
    if name == "api-reference":
        return named.get("text") or ""
    if name in ("ref", "relref", "link"):
        return positional[0] if positional else named.get("path", "")
    if name in ("figure", "img", "image"):
        return named.get("caption") or named.get("title") or named.get("alt") or ""
    if name in TAB:
        title = named.get("name") or named.get("header") or named.get("title") or (positional[0] if positional else "")
        if whole_line and not page.lines[line].startswith((" ", "\t")):
            return page.sub_heading(line, title)
        return f"{title}:" if title else ""
    if name in LABELS and name in pairs:
        title = named.get("title") or (positional[0] if positional else "")
        label = LABELS[name] if name != "alert" or not title else title
        return f"{label}: {title}" if title and label != title else f"{label}:"
    if name in TABS or name in WRAPPERS or name in LABELS:
        if name == "table" and named.get("caption"):
            return named["caption"]
        return ""
    if name in DROPPED:
        if name in INCLUDES:
            target = named.get("file") or (positional[0] if positional else "")
            return include(page, target, line, f"hugo include {name}", f"{{{{< {name} >}}}}")
        return ""
    kind = "paired" if name in pairs else "inline"
    page.notice(f"hugo shortcode {name}", line,
                f"Hugo shortcode {{{{< {name} >}}}} is not one docsmcp knows: its tags are dropped"
                + (", its inner text kept" if kind == "paired" else ""),
                "if it carries text agents should read, ask for it to be supported; see docs/generators.md")
    return ""


_HIDDEN_SPAN = re.compile(r"\x00hidden-start\x00.*?\x00hidden-end\x00", re.DOTALL)


def _drop_hidden(page: Page) -> None:
    """`{{< comment >}}...{{< /comment >}}`: Hugo renders nothing of it."""
    page.substitute(_HIDDEN_SPAN, lambda m, _line: "")
    page.substitute(re.compile(r"\x00hidden-(?:start|end)\x00"), lambda m, _line: "")
