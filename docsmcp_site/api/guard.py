"""Middleware: what a request to /api/v1/ must show before the API reads it.

- An Origin header, when sent, must be allowed by MCP_ALLOWED_ORIGINS (the same rule as /mcp/):
  otherwise 403, so a web page on another site can neither read answers nor write.
- A POST, PUT or PATCH that carries a body or a Content-Type must declare
  `Content-Type: application/json` (else 415); a bare POST (cancel, activate) needs neither.
  Browsers send text/plain, form and multipart bodies cross-origin without a CORS preflight;
  JSON they do not, so no page can make a "simple" request that writes.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from common.api.errors import API_PREFIX, error_response
from mcp_endpoint.security import is_json_content_type, origin_allowed

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Push webhooks are signed by their sender (corpus.webhooks) and come from git hosts, not browsers,
# in the body format the host chooses.
SIGNED_PREFIX = f"{API_PREFIX}hooks/git/"


def api_guard(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX) or request.path.startswith(SIGNED_PREFIX):
            return get_response(request)
        origin = request.headers.get("Origin")
        if not origin_allowed(origin):
            return error_response(403, "origin_not_allowed",
                                  f"Origin {origin!r} is not allowed; the server's MCP_ALLOWED_ORIGINS setting lists "
                                  "the web origins that may call this API")
        if request.method in BODY_METHODS and _has_body(request) and not is_json_content_type(request):
            sent = request.content_type or "none"
            return error_response(415, "unsupported_media_type",
                                  f"send the body as JSON with `Content-Type: application/json` (got {sent})")
        return get_response(request)

    return middleware


def _has_body(request: HttpRequest) -> bool:
    meta = request.META
    return bool(meta.get("CONTENT_TYPE") or meta.get("CONTENT_LENGTH", "0") not in ("", "0")
                or meta.get("HTTP_TRANSFER_ENCODING"))
