"""A POST body for /mcp/, read up to a limit: a body over it is refused without reading past it, so a
client cannot make a worker hold more than the limit in memory, whether it declares a length or sends chunks."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from mcp_endpoint import profiles
from mcp_endpoint.errors import BodyTooLarge


def body_limit(profile: profiles.Profile) -> int:
    """MCP_MAX_BODY_BYTES, unless the profile takes larger bodies (citeloom's store_chunks batches)."""
    limit = profile.max_body_bytes()
    return int(limit) if limit is not None else settings.MCP_MAX_BODY_BYTES


def read_body(request: HttpRequest, limit: int) -> bytes:
    """The body, refusing more than `limit` bytes without reading past it."""
    declared = request.META.get("CONTENT_LENGTH")
    if declared:
        try:
            if int(declared) > limit:
                raise BodyTooLarge
        except ValueError:
            pass
    if not declared and _chunked(request):
        # Django reads no body without a Content-Length; a server that decoded the chunks and marks
        # the stream's end (wsgi.input_terminated) lets us read it to that end.
        data = _read_to_end(request.META["wsgi.input"], limit + 1)
    else:
        data = request.read(limit + 1)
    if len(data) > limit:
        raise BodyTooLarge
    return data


def _chunked(request: HttpRequest) -> bool:
    coding = request.META.get("HTTP_TRANSFER_ENCODING", "").strip().lower()
    return coding == "chunked" and bool(request.META.get("wsgi.input_terminated"))


def _read_to_end(stream: Any, most: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size < most:
        part = stream.read(min(most - size, 65536))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)
