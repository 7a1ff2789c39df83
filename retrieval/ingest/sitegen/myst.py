"""MyST (Sphinx, Jupyter Book): directives, roles, targets, comments and block breaks.

Directives are read in `directives`. The line syntax here is that of mdit-py-plugins' `myst_blocks`
and `myst_role` (`(label)=` targets, `%` comments, `+++` breaks, `` {role}`text` ``); their
grammar is one line each, so it is matched here directly rather than through a second parse.
"""

from __future__ import annotations

import re

from .directives import clean as read_directives
from .lines import Page, drop_heading_attrs, drop_html_comments

TARGET = re.compile(r"^[ \t]{0,3}\([^()\s]+\)=[ \t]*$")
COMMENT = re.compile(r"^[ \t]{0,3}%")
BREAK = re.compile(r"^[ \t]{0,3}\+\+\+")
# A role's text is one code span, inside one paragraph; `{py:func}` and `{myst:directive}` name a domain.
ROLE = re.compile(r"\{(?P<role>[\w.:+-]+)\}`(?P<text>(?:[^`\n]|\n(?![ \t]*\n))*)`")


def clean(page: Page) -> None:
    read_directives(page, docusaurus=False)
    code = page.code_lines()
    for n in range(page.body, len(page.lines)):
        if n in code:
            continue
        line = page.lines[n]
        if TARGET.match(line) or COMMENT.match(line) or BREAK.match(line):
            page.lines[n] = ""
    page.substitute(ROLE, lambda m, _line: role_text(m.group("text")), skip=code, spans=True)
    drop_html_comments(page, code)
    drop_heading_attrs(page, code)


def role_text(text: str) -> str:
    """`` {ref}`Title <target>` `` reads `Title`; `` {doc}`path` `` reads `path`."""
    match = re.fullmatch(r"\s*(.*?)\s*<[^<>]+>\s*", text, re.DOTALL)
    return (match.group(1) if match and match.group(1) else text).lstrip("~!")
