"""Minimal, format-preserving edits of manifests, front matter and hint comments, and their diffs.

This module holds the line edits (hint comments), hashes and diffs; manifests are edited by
`json_edits`, front matter by `frontmatter_edits`.

A fix proposal is reviewed as a unified diff, so an edit should touch only what it changes: a new
override is inserted into the existing `overrides` array with the file's own indentation, not by
re-serialising the whole manifest. Every edit is checked by parsing the result and comparing it
with the intended data; when a hand-formatted file defeats the surgical edit, we fall back to a
full re-serialisation (a larger but still correct diff).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable

ABSENT_HASH = ""  # base_hash of a target that did not exist when the fix was proposed


def content_hash(raw: bytes | None) -> str:
    """sha256 of a file's bytes; ABSENT_HASH when the file does not exist."""
    return ABSENT_HASH if raw is None else hashlib.sha256(raw).hexdigest()


def unified_diff(path: str, old: str | None, new: str) -> str:
    """`git diff`-style text; a missing old file shows as /dev/null."""
    def lines(text: str) -> list[str]:
        out = text.splitlines(keepends=True)
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    fromfile = f"a/{path}" if old is not None else "/dev/null"
    return "".join(difflib.unified_diff(lines(old or ""), lines(new), fromfile=fromfile, tofile=f"b/{path}"))


def preserving_newlines(text: str, edit: Callable[[str], str]) -> str:
    """Run `edit` on LF text without a BOM, then restore the file's BOM and CRLF line endings."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    crlf = "\r\n" in text
    body = text[len(bom):].replace("\r\n", "\n")
    result = edit(body)
    if crlf:
        result = result.replace("\n", "\r\n")
    return bom + result


def replace_span(text: str, first_line: int, last_line: int, old: str, new: str) -> str:
    """Replace `old` with `new` once inside lines first_line..last_line (0-based, inclusive)."""
    def edit(body: str) -> str:
        lines = body.split("\n")
        segment = "\n".join(lines[first_line:last_line + 1])
        if old not in segment:
            raise ValueError(f"{old!r} not found on lines {first_line + 1}-{last_line + 1}")
        lines[first_line:last_line + 1] = segment.replace(old, new, 1).split("\n")
        return "\n".join(lines)

    return preserving_newlines(text, edit)


def remove_lines(text: str, first_line: int, end_line: int) -> str:
    """Delete lines first_line..end_line-1 (0-based) and one blank line, so no double gap is left."""
    def edit(body: str) -> str:
        lines = body.split("\n")
        start, end = first_line, end_line
        before_blank = start == 0 or not lines[start - 1].strip()
        if before_blank and end < len(lines) and not lines[end].strip() and end < len(lines) - 1:
            end += 1
        del lines[start:end]
        return "\n".join(lines)

    return preserving_newlines(text, edit)
