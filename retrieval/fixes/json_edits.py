"""Manifest edits: a value set or an item appended in a JSON text with the file's own layout, checked
by parsing the result, falling back to a full re-serialisation when hand formatting defeats it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from json.decoder import scanstring

from .edits import preserving_newlines

_WS = " \t\r\n"


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
