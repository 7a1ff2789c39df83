"""Minimal, format-preserving edits of manifests, front matter and hint comments, and their diffs.

A fix proposal is reviewed as a unified diff, so an edit should touch only what it changes: a new
override is inserted into the existing `overrides` array with the file's own indentation, not by
re-serialising the whole manifest. Every edit is checked by parsing the result and comparing it
with the intended data; when a hand-formatted file defeats the surgical edit, we fall back to a
full re-serialisation (a larger but still correct diff).
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
from collections.abc import Callable
from json.decoder import scanstring

import yaml

ABSENT_HASH = ""  # base_hash of a target that did not exist when the fix was proposed
_WS = " \t\r\n"


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


# --- JSON ------------------------------------------------------------------------------------------


def format_json(value: object, indent: str = "", step: str = "  ", width: int = 100) -> str:
    """Objects and arrays of scalars that fit on a line stay on one line; anything nested breaks."""
    inline = json.dumps(value, ensure_ascii=False)
    nested = isinstance(value, dict | list) and any(
        isinstance(item, dict | list) for item in (value.values() if isinstance(value, dict) else value))
    if not isinstance(value, dict | list) or (not nested and len(indent) + len(inline) <= width) or not value:
        return inline
    inner = indent + step
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {format_json(v, inner, step, width)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    items = [f"{inner}{format_json(v, inner, step, width)}" for v in value]
    return "[\n" + ",\n".join(items) + f"\n{indent}]"


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _members(text: str, start: int) -> tuple[list[tuple[str, int, int]], int]:
    """(key, value_start, value_end) of each member of the object opening at `start`, and its `}` index."""
    decoder = json.JSONDecoder()
    i = _skip(text, start + 1)
    members: list[tuple[str, int, int]] = []
    if text[i] == "}":
        return members, i
    while True:
        if text[i] != '"':
            raise ValueError(f"expected a key at offset {i}")
        key, i = scanstring(text, i + 1)
        i = _skip(text, i)
        if text[i] != ":":
            raise ValueError(f"expected ':' at offset {i}")
        value_start = _skip(text, i + 1)
        _, value_end = decoder.raw_decode(text, value_start)
        members.append((key, value_start, value_end))
        i = _skip(text, value_end)
        if text[i] == ",":
            i = _skip(text, i + 1)
            continue
        if text[i] == "}":
            return members, i
        raise ValueError(f"expected ',' or '}}' at offset {i}")


def _items(text: str, start: int) -> tuple[list[tuple[int, int]], int]:
    """(start, end) of each element of the array opening at `start`, and its `]` index."""
    decoder = json.JSONDecoder()
    i = _skip(text, start + 1)
    items: list[tuple[int, int]] = []
    if text[i] == "]":
        return items, i
    while True:
        _, end = decoder.raw_decode(text, i)
        items.append((i, end))
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)
            continue
        if text[i] == "]":
            return items, i
        raise ValueError(f"expected ',' or ']' at offset {i}")


def _line_indent(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_step(text: str) -> str:
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def _insert_member(text: str, open_at: int, key: str, value: object, step: str) -> str:
    members, close = _members(text, open_at)
    if members and "\n" not in text[open_at:close]:  # a one-line object stays on one line
        end = members[-1][2]
        return f"{text[:end]}, {json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}{text[end:]}"
    if members:
        last_value_end = members[-1][2]
        indent = _line_indent(text, members[-1][1]) or _line_indent(text, open_at) + step
        member = f'{json.dumps(key, ensure_ascii=False)}: {format_json(value, indent, step)}'
        return f"{text[:last_value_end]},\n{indent}{member}{text[last_value_end:]}"
    indent = _line_indent(text, open_at)
    body = format_json({key: value}, indent, step)
    return text[:open_at] + body + text[close + 1:]


def json_set(text: str, path: list[str | int], value: object) -> str:
    """Set the value at `path` (object keys, array indexes), creating missing object members."""
    def edit(body: str) -> str:
        step = _indent_step(body)
        start = _skip(body, 0)
        for depth, part in enumerate(path):
            last = depth == len(path) - 1
            if isinstance(part, int):
                items, _close = _items(body, start)
                item_start, item_end = items[part]
                if last:
                    rendered = format_json(value, _line_indent(body, item_start), step)
                    return body[:item_start] + rendered + body[item_end:]
                start = item_start
                continue
            members, _close = _members(body, start)
            found = [m for m in members if m[0] == part]
            if not found:
                rest: object = value
                for key in reversed(path[depth + 1:]):
                    rest = {key: rest}
                return _insert_member(body, start, part, rest, step)
            _key, value_start, value_end = found[-1]
            if last:
                rendered = format_json(value, _line_indent(body, value_start), step)
                return body[:value_start] + rendered + body[value_end:]
            start = value_start
        raise ValueError("empty path")

    expected = json.loads(text.lstrip("\ufeff"))
    target = expected
    for part in path[:-1]:
        target = target.setdefault(part, {}) if isinstance(part, str) else target[part]
    target[path[-1]] = copy.deepcopy(value)
    return _checked(text, edit, expected)


def json_append(text: str, path: list[str | int], value: object) -> str:
    """Append to the array at `path`, creating it (as a member of its parent object) when missing."""
    def edit(body: str) -> str:
        step = _indent_step(body)
        start = _skip(body, 0)
        for depth, part in enumerate(path):
            if isinstance(part, int):
                items, _ = _items(body, start)
                start = items[part][0]
                continue
            members, _ = _members(body, start)
            found = [m for m in members if m[0] == part]
            if not found:
                rest: object = [value]
                for key in reversed(path[depth + 1:]):
                    rest = {key: rest}
                return _insert_member(body, start, part, rest, step)
            start = found[-1][1]
        items, close = _items(body, start)
        if not items:
            rendered = format_json([value], _line_indent(body, start), step)
            return body[:start] + rendered + body[close + 1:]
        last_start, last_end = items[-1]
        if "\n" in body[start:close]:
            indent = _line_indent(body, last_start)
            inline = json.dumps(value, ensure_ascii=False)
            one_line = "\n" not in body[last_start:last_end] and len(indent) + len(inline) <= 100
            rendered = inline if one_line else format_json(value, indent, step)
            return f"{body[:last_end]},\n{indent}{rendered}{body[last_end:]}"
        return f"{body[:last_end]}, {json.dumps(value, ensure_ascii=False)}{body[last_end:]}"

    expected = json.loads(text.lstrip("\ufeff"))
    target = expected
    for part in path[:-1]:
        target = target.setdefault(part, {}) if isinstance(part, str) else target[part]
    target.setdefault(path[-1], []).append(copy.deepcopy(value))
    return _checked(text, edit, expected)


def _checked(text: str, edit: Callable[[str], str], expected: object) -> str:
    try:
        result = preserving_newlines(text, edit)
        if json.loads(result.lstrip("\ufeff")) == expected:
            return result
    except (ValueError, IndexError, KeyError):
        pass
    return preserving_newlines(text, lambda body: format_json(expected, "", _indent_step(body)) + "\n")


# --- YAML front matter -----------------------------------------------------------------------------

_FM_OPEN = re.compile(r"\A---[ \t]*\n")
_FM_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$", re.MULTILINE)


def yaml_scalar(value: object) -> str:
    return yaml.safe_dump([value], default_flow_style=True, allow_unicode=True, width=10_000).strip()[1:-1]


def yaml_flow(value: dict) -> str:
    return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, sort_keys=False,
                          width=10_000).strip()


def split_frontmatter(body: str) -> tuple[list[str], str] | None:
    """(YAML lines, rest of the document) of LF text, or None without a front matter block."""
    opening = _FM_OPEN.match(body)
    if not opening:
        return None
    closing = _FM_CLOSE.search(body, opening.end())
    if not closing:
        return None
    yaml_text = body[opening.end():closing.start()]
    rest = body[closing.end():]
    return yaml_text.split("\n")[:-1] if yaml_text else [], rest


def _load_yaml(lines: list[str]) -> dict:
    data = yaml.safe_load("\n".join(lines)) if any(line.strip() for line in lines) else {}
    return data if isinstance(data, dict) else {}


def _block_end(lines: list[str], start: int) -> int:
    """Index after the indented (or blank) lines that follow the top-level key on line `start`."""
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t")):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _top_key_line(lines: list[str], key: str) -> int | None:
    pattern = re.compile(rf"^{re.escape(key)}\s*:(.*)$")
    for n, line in enumerate(lines):
        if pattern.match(line):
            return n
    return None


def frontmatter_set(text: str, key: str, value: object, *, subkey: str | None = None) -> str:
    """Set front matter `key` (or `key.subkey` inside a mapping), adding a front matter block if needed."""
    def edit(body: str) -> str:
        parts = split_frontmatter(body)
        lines, rest = parts if parts else ([], body if body.startswith("\n") else "\n" + body)
        lines = _edit_yaml_lines(lines, key, value, subkey)
        return "---\n" + "\n".join(lines) + "\n---" + rest

    def fallback(body: str) -> str:
        parts = split_frontmatter(body)
        lines, rest = parts if parts else ([], "\n" + body)
        data = _load_yaml(lines)
        _apply(data, key, value, subkey)
        dumped = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000).rstrip("\n")
        return "---\n" + dumped + "\n---" + rest

    parts = split_frontmatter(text.lstrip("\ufeff").replace("\r\n", "\n"))
    expected = _load_yaml(parts[0]) if parts else {}
    _apply(expected, key, value, subkey)
    try:
        result = preserving_newlines(text, edit)
        got = split_frontmatter(result.lstrip("\ufeff").replace("\r\n", "\n"))
        if got and _load_yaml(got[0]) == expected:
            return result
    except (yaml.YAMLError, ValueError):
        pass
    return preserving_newlines(text, fallback)


def frontmatter_extend(text: str, key: str, items: list[str]) -> str:
    """Add `items` to the list, or the comma-separated string, at front matter `key` (created when
    missing). A block list gains `- item` lines in its own indentation and nothing else moves; a flow
    list or a string is rewritten on its own line."""
    parts = split_frontmatter(text.lstrip("\ufeff").replace("\r\n", "\n"))
    current = _load_yaml(parts[0]).get(key) if parts else None
    if current is None:
        return frontmatter_set(text, key, list(items))
    if isinstance(current, str):
        head = current.strip().rstrip(",").strip()
        expected: object = ", ".join([head, *items]) if head else ", ".join(items)

        def edit(body: str) -> str:  # `keywords: a, b` stays a plain one-line string
            lines, rest = split_frontmatter(body)
            at = _top_key_line(lines, key)
            if _block_end(lines, at) != at + 1:
                raise ValueError("not a one-line string")
            return "---\n" + "\n".join([*lines[:at], f"{key}: {expected}", *lines[at + 1:]]) + "\n---" + rest
    elif isinstance(current, list):
        expected = [*current, *items]

        def edit(body: str) -> str:  # a block list gains `- item` lines; nothing else moves
            lines, rest = split_frontmatter(body)
            at = _top_key_line(lines, key)
            end = _block_end(lines, at)
            entries = [n for n in range(at + 1, end) if re.match(r"[ \t]*- ", lines[n])]
            if lines[at].split(":", 1)[1].split(" #")[0].strip() or not entries:
                raise ValueError("not a block list")
            indent = re.match(r"[ \t]*- ", lines[entries[0]]).group(0)
            added = [f"{indent}{yaml_scalar(item)}" for item in items]
            return "---\n" + "\n".join([*lines[:end], *added, *lines[end:]]) + "\n---" + rest
    else:
        raise ValueError(f"front matter {key} is neither a list nor a string")

    try:
        result = preserving_newlines(text, edit)
        got = split_frontmatter(result.lstrip("\ufeff").replace("\r\n", "\n"))
        if got and _load_yaml(got[0]).get(key) == expected:
            return result
    except (yaml.YAMLError, ValueError, TypeError, AttributeError):
        pass
    return frontmatter_set(text, key, expected)


def _apply(data: dict, key: str, value: object, subkey: str | None) -> None:
    if subkey is None:
        data[key] = value
    else:
        if not isinstance(data.get(key), dict):
            data[key] = {}
        data[key][subkey] = value


def _edit_yaml_lines(lines: list[str], key: str, value: object, subkey: str | None) -> list[str]:
    lines = list(lines)
    at = _top_key_line(lines, key)
    if subkey is None:
        rendered = f"{key}: {yaml_flow(value) if isinstance(value, dict) else yaml_scalar(value)}"
        if at is None:
            return [*lines, rendered]
        return [*lines[:at], rendered, *lines[_block_end(lines, at):]]
    entry = f"{subkey}: {yaml_scalar(value)}"
    if at is None:
        return [*lines, f"{key}:", f"  {entry}"]
    inline = lines[at].split(":", 1)[1].split(" #")[0].strip()
    if inline:  # flow mapping `{a: b}` (or a scalar we replace with a mapping)
        data = _load_yaml([lines[at]]).get(key)
        mapping = dict(data) if isinstance(data, dict) else {}
        mapping[subkey] = value
        return [*lines[:at], f"{key}: {yaml_flow(mapping)}", *lines[at + 1:]]
    end = _block_end(lines, at)
    children = [n for n in range(at + 1, end) if lines[n].strip()]
    child_indent = re.match(r"[ \t]*", lines[children[0]]).group(0) if children else "  "
    child = re.compile(rf"^{re.escape(child_indent)}{re.escape(subkey)}\s*:")
    for n in children:
        if child.match(lines[n]):
            return [*lines[:n], f"{child_indent}{entry}", *lines[n + 1:]]
    return [*lines[:end], f"{child_indent}{entry}", *lines[end:]]


# --- HTML comment hints ----------------------------------------------------------------------------


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
