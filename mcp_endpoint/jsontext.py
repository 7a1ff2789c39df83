"""JSON text for the wire: orjson where it can, the standard library where it cannot.

A search reply is encoded twice: the indented text block a model reads, then the compact
JSON-RPC envelope that carries it. The standard library's indented encoder is pure Python
(0.13 ms for a page of ten Kubernetes hits, and 0.11 ms for its envelope); orjson takes 0.01 ms
for each, with the same bytes except that a number in exponent form is written `1e-7`, not
`1e-07` (the same value to any JSON reader). What orjson refuses (a lone surrogate echoed from somewhere,
integers past 64 bits, keys that are not strings) goes through the standard library.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def compact(value: Any) -> bytes:
    """UTF-8 JSON without spaces; text that UTF-8 cannot carry goes out escaped."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is one
        pass
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def indented(value: Any) -> str:
    """JSON indented by two spaces, non-ASCII text as is: what a tool's text block holds."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, indent=2)
