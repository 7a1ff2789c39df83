"""A page's lines as a cleaner rewrites them: the same number of lines in and out, always.

Every cleaner keeps line N of the cleaned text standing for line N of the source, so a chunk's
start and end lines, a finding's line and the outline's lines still point into the file the author
edits. A construct that carries no text becomes blank lines; one that carries text keeps it on
its own lines (a tag alone on its line gives its text that line).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate

from markdown_it import MarkdownIt
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)")
HEADING_ATTRS = re.compile(r"^( {0,3}#{1,6}[ \t].*?)[ \t]*\{[ \t]*[#.][^{}]*\}[ \t]*$")
# A fence may open a list item or a quote line (`- ```yaml`): its body is code all the same.
FENCE = re.compile(r"^[ \t]*(?:(?:[-*+]|\d{1,9}[.)]|>)[ \t]+)*(`{3,}|~{3,})(.*)$")
# An inline code span (CommonMark: a backtick run closed by the next run of the same length, inside
# one paragraph). Markup written inside one is code the reader sees as written.
CODE_SPAN = r"(?P<code_span>(?<!`)(?P<code_ticks>`+)(?!`)(?:[^`\n]|`+|\n(?![ \t]*\n))+?(?<!`)(?P=code_ticks)(?!`))"
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
HINT_MARKER = "mcp_chunking_hint"


@dataclass(frozen=True)
class Notice:
    """Something a cleaner could not read for its meaning; one per kind and page is reported."""

    kind: str  # e.g. "hugo shortcode 'foo'": the unit the report counts
    line: int  # 1-based
    message: str
    suggestion: str = ""


@dataclass
class Page:
    lines: list[str]
    body: int  # first line after the front matter
    notices: list[Notice] = field(default_factory=list)
    included: dict[str, str] = field(default_factory=dict)  # corpus page -> its text on one line (includes.py)
    files: dict[str, str] = field(default_factory=dict)  # `{!path!}` -> the text of the file it names (mkdocs.py)
    relpath: str = ""
    _kinds: set[str] = field(default_factory=set)
    _source: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._source = tuple(self.lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def notice(self, kind: str, line: int, message: str, suggestion: str = "") -> None:
        if kind not in self._kinds:
            self._kinds.add(kind)
            self.notices.append(Notice(kind, line + 1, message, suggestion))

    def code_lines(self) -> set[int]:
        """Lines of code fences, the fence lines included: text there is code, not markup to read.
        A fence whose info is a `{directive}` is MyST markup, not code. Found by CommonMark's fence
        rule line by line (a full parse of every page would double the time a build spends parsing);
        a fence inside a list item is indented, so any indentation opens one."""
        out: set[int] = set()
        fence = ""
        opened = 0
        for n in range(self.body, len(self.lines)):
            line = self.lines[n]
            if "`" not in line and "~" not in line:
                continue
            match = FENCE.match(line)
            if match is None:
                continue
            marks, info = match.group(1), match.group(2)
            if not fence:
                if not (marks[0] == "`" and "`" in info) and not info.strip().startswith("{"):
                    fence, opened = marks, n
            elif marks[0] == fence[0] and len(marks) >= len(fence) and not info.strip():
                out.update(range(opened, n + 1))
                fence = ""
        if fence:
            out.update(range(opened, len(self.lines)))
        return out

    def heading_level_at(self, line: int) -> int:
        """The level of the last heading the author wrote above `line` (0 before the first); the
        headings tabs became do not count, so sibling tabs get the same level."""
        level = 0
        for n in range(self.body, min(line, len(self._source))):
            match = ATX_HEADING.match(self._source[n])
            if match:
                level = len(match.group(1))
        return level

    def sub_heading(self, line: int, title: str) -> str:
        """A tab's title as a heading one level below its section (h3 at the least, so it never
        starts a chunk of the default h2 split on its own)."""
        level = min(6, max(3, self.heading_level_at(line) + 1))
        return f"{'#' * level} {title.strip()}"

    def substitute(self, pattern: re.Pattern, replace: Callable[[re.Match, int], str], *,
                   skip: set[int] | frozenset[int] = frozenset(), spans: bool = False) -> None:
        """Replace every match in the body that does not start on a `skip` line, keeping the line
        count: a match over several lines gives its replacement on its first line and blanks after.
        With `spans`, a match inside an inline code span is left as written (MDX and MyST read code
        spans literally; Hugo and Liquid do not, they expand before markdown is read)."""
        text = "\n".join(self.lines[self.body:])
        if not pattern.search(text):
            return
        # The code-span-aware pattern costs a third more: only a page with a match on a line that
        # holds a backtick needs it.
        spans = spans and any("`" in line and pattern.search(line) for line in self.lines[self.body:])
        if spans:
            pattern = _with_spans(pattern)
        starts = list(accumulate((len(line) + 1 for line in self.lines[self.body:-1]), initial=0))

        def one(match: re.Match) -> str:
            line = self.body + bisect.bisect_right(starts, match.start()) - 1
            if line in skip or (spans and match.group("code_span") is not None):
                return match.group(0)
            value = replace(match, line).replace("\n", " ")
            return value + "\n" * match.group(0).count("\n")

        self.lines[self.body:] = pattern.sub(one, text).split("\n")


@lru_cache(maxsize=64)
def _with_spans(pattern: re.Pattern) -> re.Pattern:
    """`pattern`, or a code span where one starts first: the span is matched whole, and kept."""
    return re.compile(f"{CODE_SPAN}|(?:{pattern.pattern})", pattern.flags)


def split_page(text: str) -> Page:
    """The page's lines and where its YAML (`---`) or TOML (`+++`) front matter ends; cleaners never touch it."""
    lines = text.split("\n")
    body = 0
    if lines and lines[0].rstrip() in ("---", "+++"):
        fence = lines[0].rstrip()
        for n in range(1, len(lines)):
            if lines[n].rstrip() == fence:
                body = n + 1
                break
    return Page(lines, body)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return (MarkdownIt("commonmark").use(front_matter_plugin).use(admon_plugin).use(colon_fence_plugin)
            .disable("inline"))


def block_tokens(text: str) -> list:
    """Block tokens with MkDocs admonitions (mdit-py-plugins `admon`) and `:::` fences (`colon_fence`)."""
    return _parser().parse(text)


def drop_html_comments(page: Page, code: set[int]) -> None:
    """HTML comments render as nothing (`<!-- overview -->`, `<!--more-->`); chunking hints stay."""
    page.substitute(HTML_COMMENT, lambda m, _line: m.group(0) if HINT_MARKER in m.group(0) else "", skip=code,
                    spans=True)


def drop_heading_attrs(page: Page, code: set[int]) -> None:
    """`## Title {#custom-id}` (Hugo, MkDocs attr_list, Docusaurus, kramdown): the anchor is not text."""
    for n in range(page.body, len(page.lines)):
        if n not in code and "{" in page.lines[n]:
            page.lines[n] = HEADING_ATTRS.sub(r"\1", page.lines[n])


ARG = re.compile(r"(?:(?P<key>[\w-]+)\s*=\s*)?(?:\"(?P<dq>(?:[^\"\\]|\\.)*)\"|`(?P<bq>[^`]*)`|(?P<bare>[^\s\"`=]+))")


def args_of(text: str) -> tuple[list[str], dict[str, str]]:
    """Positional and `key="value"` arguments of a shortcode or a JSX tag."""
    positional, named = [], {}
    for match in ARG.finditer(text):
        value = next((g for g in (match.group("dq"), match.group("bq"), match.group("bare")) if g is not None), "")
        value = value.replace('\\"', '"')
        if match.group("key"):
            named[match.group("key")] = value
        else:
            positional.append(value)
    return positional, named


def humanize(name: str) -> str:
    """`container-runtime` -> `container runtime`, the words a term ID stands for."""
    return re.sub(r"[-_]+", " ", name).strip()
