"""Hint heuristics: malformed hint comments repaired (or removed), orphaned and dangling ones removed."""

from __future__ import annotations

import json
import re

import yaml

from retrieval.errors import ConfigError
from retrieval.ingest.manifest import Strategy, parse_strategy
from retrieval.ingest.parsing import HINT_RE

from .base import Change, FixContext, ProposedFix, make_fix, strategy_dict
from .edits import remove_lines, replace_span

HINT_CODES = ("hint-malformed", "hint-orphan", "hint-dangling")


def hint_fixes(ctx: FixContext) -> list[ProposedFix]:
    fixes = []
    for relpath, result in sorted(ctx.results.items()):
        findings = [f for f in result.findings if f.code in HINT_CODES]
        if findings:
            fix = _fix_hints(ctx, relpath, findings)
            if fix is not None:
                fixes.append(fix)
    return fixes


def repair_hint(raw: str) -> Strategy | None:
    """Read a hint the way a person meant it: `{chunk_by: h3}`, `'h3'`, `h3`, trailing commas..."""
    for attempt in (raw, re.sub(r",\s*}", "}", raw)):
        try:
            data = yaml.safe_load(attempt)
        except yaml.YAMLError:
            continue
        if isinstance(data, dict):
            data = {str(k).strip(): (v.strip() if isinstance(v, str) else v) for k, v in data.items()}
            data = {k: v for k, v in data.items() if k in ("chunk_by", "max_chunk_size", "min_chunk_size")}
        if isinstance(data, str):
            data = data.strip().lower()
        try:
            return parse_strategy(data, "hint")
        except ConfigError:
            continue
    return None


def _fix_hints(ctx: FixContext, relpath: str, findings: list) -> ProposedFix | None:
    doc = ctx.doc(relpath)
    old, digest = ctx.read(relpath)
    if old is None:
        return None
    edits: list[tuple[int, str, object]] = []  # (line, description, edit function)
    notes = []
    by_line = {h.line + 1: h for h in doc.hints}
    heading_at = {b.start: n for n, b in enumerate(doc.blocks) if b.kind == "heading"}
    for finding in sorted(findings, key=lambda f: f.line or 0):
        if finding.code == "hint-dangling":
            index = heading_at.get(finding.line)
            hint = next((h for h in doc.hints if index is not None and h.block_index == index - 1), None)
        else:
            hint = by_line.get(finding.line)
        if hint is None and finding.code == "hint-orphan" and finding.line and finding.line - 1 in doc.stray_hint_lines:
            line = finding.line - 1
            match = HINT_RE.search(doc.lines[line])
            if match:
                edits.append((line, "", _strip_inline(line, match.group(0))))
                notes.append(f"line {finding.line}: removed a hint comment that sits inside other content")
            continue
        if hint is None or any(line == hint.line for line, _, _ in edits):
            continue
        block = doc.blocks[hint.block_index]
        comment = HINT_RE.search(block.text).group(0) if HINT_RE.search(block.text) else None
        if comment is None:
            continue
        section = hint.block_index + 1 < len(doc.blocks) and doc.blocks[hint.block_index + 1].kind == "heading"
        repaired = repair_hint(hint.raw) if finding.code == "hint-malformed" else None
        file_level = all(b.kind == "html" for b in doc.blocks[: hint.block_index])
        if repaired is not None and (section or file_level):
            value = {"chunk_by": repaired.chunk_by} if section else strategy_dict(repaired)
            new_raw = json.dumps(value)
            edits.append((hint.line, "", _replace_raw(block.start, block.end - 1, hint.raw, new_raw)))
            notes.append(f"line {hint.line + 1}: rewrote the hint as valid JSON {new_raw}")
        else:
            whole = block.text.strip() == comment.strip()
            edits.append((hint.line, "", _drop_block(block.start, block.end) if whole
                          else _replace_raw(block.start, block.end - 1, comment, "")))
            why = {"hint-malformed": "could not be read", "hint-orphan": "attaches to nothing",
                   "hint-dangling": "asks for a split level the section does not have"}[finding.code]
            notes.append(f"line {hint.line + 1}: removed a hint that {why}")
    if not edits:
        return None
    text = old
    for _line, _desc, edit in sorted(edits, key=lambda e: e[0], reverse=True):
        text = edit(text)
    change = Change(relpath, old, text, digest)
    rationale = "validate reports " + ", ".join(f"{f.code} at line {f.line}" for f in findings) + ". " + "; ".join(notes) + "."
    return make_fix(ctx, kind="hint-fix", relpath=relpath, change=change, rationale=rationale,
                    finding=findings[0].as_dict(),
                    expect=lambda after: len([f for f in after.findings if f.code in HINT_CODES]) < len(findings))


def _replace_raw(first: int, last: int, old: str, new: str):
    return lambda text: replace_span(text, first, last, old, new)


def _drop_block(start: int, end: int):
    return lambda text: remove_lines(text, start, end)


def _strip_inline(line: int, comment: str):
    def edit(text: str) -> str:
        lines = text.replace("\r\n", "\n").split("\n")
        if lines[line].strip() == comment.strip():
            return remove_lines(text, line, line + 1)
        return replace_span(text, line, line, comment, "")

    return edit
