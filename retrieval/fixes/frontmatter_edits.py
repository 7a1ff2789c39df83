"""Front matter edits: a key set or a list extended in a page's YAML block, touching only its lines."""

from __future__ import annotations

import re

import yaml

from .edits import preserving_newlines

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
