"""Opaque, signed cursors for the MCP list methods (tools/list, resources/list, prompts/list, ...).

Stateless like the rest of the transport: the cursor carries the offset, signed with the
server secret and bound to the list it came from, so any worker can continue a listing and a
forged or foreign cursor is refused (-32602) instead of silently restarting the list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.core import signing

from mcp_endpoint.jsonrpc import InvalidParams

T = TypeVar("T")
_SALT = "docsmcp.mcp.list-cursor"


def page_size() -> int:
    return max(1, settings.MCP_LIST_PAGE_SIZE)


def paginate(items: Sequence[T], cursor: Any, scope: str) -> tuple[list[T], str | None]:
    """One page of `items` starting at `cursor`, and the cursor of the next page (None at the end).

    `scope` names the listing (method, profile, corpus) so a cursor cannot be replayed elsewhere.
    """
    offset = 0
    if cursor is not None:
        if not isinstance(cursor, str):
            raise InvalidParams("Invalid params: cursor must be a string")
        try:
            payload = signing.loads(cursor, salt=_SALT)
        except signing.BadSignature:
            raise InvalidParams("Invalid cursor: it is malformed or was not issued by this server") from None
        if (
            not isinstance(payload, dict)
            or payload.get("s") != scope
            or not isinstance(payload.get("o"), int)
        ):
            raise InvalidParams("Invalid cursor: it belongs to a different listing")
        offset = max(0, payload["o"])
    size = page_size()
    page = list(items[offset : offset + size])
    next_offset = offset + size
    next_cursor = (
        signing.dumps({"o": next_offset, "s": scope}, salt=_SALT) if next_offset < len(items) else None
    )
    return page, next_cursor
