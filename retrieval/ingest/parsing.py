"""Markdown -> top-level blocks with source lines, via markdown-it-py's block parser.

Only the block grammar runs (inline parsing is skipped) because chunk content is an exact
slice of the source: we need block boundaries and heading text, not rendered HTML. That
keeps parsing about twice as fast, which matters at 100k chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter import front_matter_plugin

HINT_RE = re.compile(r"<!--\s*mcp_chunking_hint\s*:\s*(.*?)\s*-->", re.DOTALL)
HINT_MARKER = "mcp_chunking_hint"


@dataclass(frozen=True)
class Block:
    """One top-level markdown block. Lines are 0-based, end exclusive (markdown-it's map)."""

    kind: str  # heading | paragraph | fence | code | list | table | html | hr | blockquote | other
    start: int
    end: int
    level: int = 0  # heading level 1-6
    text: str = ""  # heading plain text, or raw html for html blocks


@dataclass(frozen=True)
class InlineHint:
    line: int  # 0-based line of the comment
    raw: str  # text after "mcp_chunking_hint:"
    block_index: int  # index of the html block in ParsedDocument.blocks


@dataclass
class ParsedDocument:
    lines: list[str]
    blocks: list[Block]
    frontmatter: dict = field(default_factory=dict)
    frontmatter_error: str | None = None
    frontmatter_end: int = 0  # first line after the front matter block
    hints: list[InlineHint] = field(default_factory=list)
    stray_hint_lines: list[int] = field(default_factory=list)  # hint markers not in an html block

    @property
    def title(self) -> str:
        """Front matter `title` (the author's name for the page), else the first H1."""
        fm_title = self.frontmatter.get("title") if isinstance(self.frontmatter, dict) else None
        if fm_title:
            return str(fm_title)
        for block in self.blocks:
            if block.kind == "heading" and block.level == 1:
                return block.text
        return ""

    def source(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start:end]).strip("\n")


@lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin).disable("inline")


@lru_cache(maxsize=1)
def _inline_parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


_KIND_BY_OPEN = {
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "blockquote_open": "blockquote",
}


def inline_text(source: str) -> str:
    """Plain text of an inline markdown fragment: `getToken()` Method -> getToken() Method."""
    if not any(ch in source for ch in "`*_[]<>&\\!"):
        return source.strip()
    tokens = _inline_parser().parseInline(source)
    parts: list[str] = []
    for token in tokens:
        for child in token.children or []:
            if child.type in ("text", "code_inline", "html_inline"):
                parts.append(child.content if child.type != "html_inline" else "")
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif child.type == "image":
                parts.append(child.content)
    return " ".join("".join(parts).split())


def parse_markdown(text: str) -> ParsedDocument:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    tokens = _block_parser().parse(text)
    doc = ParsedDocument(lines=lines, blocks=[])
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.level != 0 or token.map is None:
            i += 1
            continue
        start, end = token.map
        if token.type == "front_matter":
            doc.frontmatter_end = end
            _load_frontmatter(doc, token.content)
        elif token.type == "heading_open":
            content = tokens[i + 1].content if i + 1 < len(tokens) else ""
            doc.blocks.append(Block("heading", start, end, int(token.tag[1]), inline_text(content)))
        elif token.type == "fence":
            doc.blocks.append(Block("fence", start, end))
        elif token.type == "code_block":
            doc.blocks.append(Block("code", start, end))
        elif token.type == "html_block":
            doc.blocks.append(Block("html", start, end, text=token.content))
            for match in HINT_RE.finditer(token.content):
                offset = token.content[: match.start()].count("\n")
                doc.hints.append(InlineHint(start + offset, match.group(1), len(doc.blocks) - 1))
        elif token.type == "hr":
            doc.blocks.append(Block("hr", start, end))
        elif token.type.endswith("_open"):
            doc.blocks.append(Block(_KIND_BY_OPEN.get(token.type, "other"), start, end))
        i += 1
    doc.stray_hint_lines = _stray_hints(doc)
    return doc


def _load_frontmatter(doc: ParsedDocument, content: str) -> None:
    try:
        data = yaml.safe_load(content) if content.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        doc.frontmatter_error = f"invalid YAML front matter{where}: {getattr(exc, 'problem', exc)}"
        return
    if data is None:
        data = {}
    if not isinstance(data, dict):
        doc.frontmatter_error = "front matter must be a YAML mapping (key: value lines)"
        return
    doc.frontmatter = data


def _stray_hints(doc: ParsedDocument) -> list[int]:
    """Lines mentioning a hint that is not a recognised top-level HTML comment (and not in code)."""
    if not any(HINT_MARKER in line for line in doc.lines):
        return []
    covered: set[int] = set()
    for block in doc.blocks:
        if block.kind in ("fence", "code", "html"):
            covered.update(range(block.start, block.end))
    covered.update(range(doc.frontmatter_end))
    return [n for n, line in enumerate(doc.lines) if HINT_MARKER in line and n not in covered]
