"""Who may talk to /mcp/: Origin and Host checks (DNS rebinding), media types, client address.

Django already refuses a Host outside ALLOWED_HOSTS; `host_guard` makes that refusal a 403
with a JSON-RPC-shaped body on MCP paths instead of an HTML page, before any other middleware
asks for the host. The Origin check follows the Streamable HTTP spec: a browser request whose
Origin is not allowed gets 403.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, JsonResponse

from mcp_endpoint.jsonrpc import INVALID_REQUEST, error_body

MCP_PATH_PREFIX = "/mcp"

# Headers a browser client may send cross-origin (plus whatever Mcp-Param-* it asks for).
CORS_ALLOW_HEADERS = (
    "Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, "
    "Mcp-Session-Id, Last-Event-ID"
)
CORS_EXPOSE_HEADERS = "WWW-Authenticate, Retry-After"


def _default_port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme)


def _normalize_origin(value: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower(), port if port is not None else _default_port(scheme)


def _origin_matches(entry: str, candidate: tuple[str, str, int | None]) -> bool:
    """`entry` is an origin, or an origin ending in ':*' (any port)."""
    entry = entry.strip()
    if entry.endswith(":*"):
        allowed = _normalize_origin(entry[:-2])
        return allowed is not None and allowed[:2] == candidate[:2]
    return _normalize_origin(entry) == candidate


def origin_allowed(origin: str | None) -> bool:
    """True when the request may proceed: no Origin (not a browser), '*' configured, or a match.

    A match compares scheme, host and port (default ports filled in), so
    `https://app.example.com` also matches `https://app.example.com:443`; an entry ending in
    ':*' matches any port. The default allows loopback origins only.
    """
    if origin is None:
        return True
    allowed = settings.MCP_ALLOWED_ORIGINS
    if "*" in allowed:
        return True
    candidate = _normalize_origin(origin)
    if candidate is None:
        return False
    return any(_origin_matches(entry, candidate) for entry in allowed)


def cors_headers(request: HttpRequest) -> dict[str, str]:
    """Response headers that let an allowed browser origin read the answer."""
    origin = request.headers.get("Origin")
    if origin is None or not origin_allowed(origin):
        return {}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS,
        "Vary": "Origin",
    }


def preflight(request: HttpRequest) -> HttpResponse:
    """Answer a CORS preflight (OPTIONS) for the MCP endpoint."""
    origin = request.headers.get("Origin")
    if origin is not None and not origin_allowed(origin):
        return forbidden_origin()
    response = HttpResponse(status=204)
    response["Allow"] = "POST"
    if origin is not None:
        requested = request.headers.get("Access-Control-Request-Headers", "")
        allow_headers = CORS_ALLOW_HEADERS + (f", {requested}" if requested else "")
        for name, value in cors_headers(request).items():
            response[name] = value
        response["Access-Control-Allow-Methods"] = "POST, OPTIONS"
        response["Access-Control-Allow-Headers"] = allow_headers
        response["Access-Control-Max-Age"] = "600"
    return response


def forbidden_origin() -> JsonResponse:
    return JsonResponse(error_body(INVALID_REQUEST, "Forbidden: Origin not allowed"), status=403)


def is_json_content_type(request: HttpRequest) -> bool:
    media_type = (request.content_type or "").split(";")[0].strip().lower()
    return media_type == "application/json"


def accepts_json(request: HttpRequest) -> bool:
    """False only when the client sent an Accept header that rules JSON out."""
    accept = request.headers.get("Accept")
    if not accept:
        return True
    ranges = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(ranges & {"application/json", "application/*", "*/*"})


def client_ip(request: HttpRequest) -> str:
    """The caller's address for per-IP limits; X-Forwarded-For only when MCP_TRUST_X_FORWARDED_FOR."""
    if settings.MCP_TRUST_X_FORWARDED_FOR:
        forwarded = request.headers.get("X-Forwarded-For", "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-1]  # the address our own proxy saw, not one the client wrote
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def host_guard(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: refuse a Host outside ALLOWED_HOSTS on MCP paths with 403 and a JSON-RPC body.

    Must come first in MIDDLEWARE, before anything calls `request.get_host()`. Other paths keep
    Django's own 400.
    """

    def middleware(request: HttpRequest) -> HttpResponse:
        if request.path.startswith(MCP_PATH_PREFIX):
            try:
                request.get_host()
            except DisallowedHost:
                return JsonResponse(error_body(INVALID_REQUEST, "Forbidden: Host not allowed"), status=403)
        return get_response(request)

    return middleware
