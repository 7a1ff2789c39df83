"""Stateless pagination cursors: `base64url(payload) + "." + base64url(HMAC-SHA256(key, payload))`.

The payload holds the page position (offset, limit, candidate depth), the build ID, and a
digest of the query and filters. Any worker holding the server secret can continue any
search; none needs session state. The public TypeScript implementation signs with an unkeyed
hash that anyone can recompute; this one is keyed, so a cursor cannot be forged or edited.

Rules a cursor enforces (errors are InvalidCursor with what to do next):
- The signature must verify (compare_digest), else: invalid or tampered.
- The build ID must be the index's: after a rebuild, offsets into the old ranking mean nothing.
- The query and filters must equal the ones of the search that issued it.
- The page size may change between pages: pages are cut by offset, so a new limit neither
  skips nor repeats results. A request without a limit continues with the cursor's.
- The candidate depth travels in the cursor so every page slices the same fused ranking.

The key is derived from the caller's secret (the Django SECRET_KEY, in the site) with a
fixed label, so the raw secret never signs anything and other uses of it cannot collide.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from retrieval.errors import InvalidArgument, InvalidCursor

CURSOR_VERSION = 1
MAX_CURSOR_LENGTH = 1024
_KEY_LABEL = b"docsmcp/retrieval/search-cursor/v1"
_B64URL = re.compile(r"[A-Za-z0-9_-]+")

TAMPERED = "Cursor is invalid or was tampered with; repeat the search without a cursor."
MALFORMED = ("Cursor is malformed or truncated; pass next_cursor exactly as it was returned, "
             "or repeat the search without a cursor.")
STALE = ("Cursor belongs to an older index build (the docs were rebuilt); "
         "repeat the search without a cursor.")
OTHER_SEARCH = ("Cursor belongs to a different query or filters; send the same query and filters as the "
                "search that returned it, or omit the cursor to start a new search.")


@dataclass(frozen=True)
class CursorState:
    """Where the next page starts, as signed into a cursor."""

    offset: int
    limit: int
    depth: int


def _key(secret: bytes) -> bytes:
    if not secret:
        raise InvalidArgument("a non-empty cursor secret is required to sign search cursors")
    return hmac.new(secret, _KEY_LABEL, hashlib.sha256).digest()


def search_digest(query: str, filters: Mapping[str, str]) -> str:
    """Binds a cursor to its search without copying the query text into the token."""
    canonical = json.dumps([query, dict(sorted(filters.items()))], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    if not _B64URL.fullmatch(text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(secret: bytes, *, query: str, filters: Mapping[str, str], build_id: str,
                  state: CursorState) -> str:
    payload = json.dumps({
        "v": CURSOR_VERSION, "s": search_digest(query, filters), "b": build_id,
        "o": state.offset, "l": state.limit, "d": state.depth,
    }, separators=(",", ":"), sort_keys=True).encode()
    signature = hmac.new(_key(secret), payload, hashlib.sha256).digest()
    return f"{_b64encode(payload)}.{_b64encode(signature)}"


def decode_cursor(secret: bytes, token: str, *, query: str, filters: Mapping[str, str],
                  build_id: str) -> CursorState:
    """Verifies `token` for this search and build; raises InvalidCursor saying what to do."""
    if not isinstance(token, str) or not token or len(token) > MAX_CURSOR_LENGTH or token.count(".") != 1:
        raise InvalidCursor(MALFORMED)
    body, _, sig = token.partition(".")
    try:
        payload, signature = _b64decode(body), _b64decode(sig)
    except ValueError:
        raise InvalidCursor(MALFORMED) from None
    expected = hmac.new(_key(secret), payload, hashlib.sha256).digest()
    if not hmac.compare_digest(signature, expected):
        raise InvalidCursor(TAMPERED)
    try:
        data = json.loads(payload)
        state = CursorState(offset=data["o"], limit=data["l"], depth=data["d"])
        version, digest, cursor_build = data["v"], data["s"], data["b"]
    except (ValueError, KeyError, TypeError):
        raise InvalidCursor(MALFORMED) from None
    numbers = (state.offset, state.limit, state.depth)
    if version != CURSOR_VERSION or not all(isinstance(n, int) and n >= 0 for n in numbers) or state.limit < 1:
        raise InvalidCursor(MALFORMED)
    if cursor_build != build_id:
        raise InvalidCursor(STALE)
    if digest != search_digest(query, filters):
        raise InvalidCursor(OTHER_SEARCH)
    return state
