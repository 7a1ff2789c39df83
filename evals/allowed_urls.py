"""Which URLs an eval run over HTTP may call: this server's own /mcp/ endpoints, and what the operator allows.

An HTTP run makes the worker open a connection to a URL a caller typed. Left open, that is a port
scanner inside the operator's network (the run's error would say which ports answer). So a target
must be this server as configured (MCP_SERVER_HOST/MCP_SERVER_PORT, loopback names when it binds a
wildcard or loopback address, path under /mcp) or sit under a DOCSMCP_EVAL_ALLOWED_URLS entry
(same scheme, host and port; path prefix). The check runs before any connection, and a refusal
never says anything about the target beyond its URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

from .errors import EvalError

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
DEFAULT_PORTS = {"http": 80, "https": 443}


def _parts(url: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.username or parts.password:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else DEFAULT_PORTS[scheme], parts.path or "/"


def _own_hosts() -> frozenset[str]:
    host = str(settings.MCP_SERVER_HOST).strip().lower().strip("[]")
    if host in WILDCARD_HOSTS or host in LOOPBACK_NAMES:
        return LOOPBACK_NAMES
    return frozenset({host})


def _is_own_endpoint(target: tuple[str, str, int | None, str]) -> bool:
    scheme, host, port, path = target
    return (scheme == "http" and host in _own_hosts() and port == int(settings.MCP_SERVER_PORT)
            and (path == "/mcp" or path.startswith("/mcp/")))


def _under(target: tuple[str, str, int | None, str], allowed: str) -> bool:
    entry = _parts(allowed)
    if entry is None:
        return False
    prefix = entry[3] if entry[3].endswith("/") else entry[3] + "/"
    return target[:3] == entry[:3] and (target[3] == entry[3] or target[3].startswith(prefix))


def check_eval_url(url: str) -> None:
    """Raise EvalError unless an eval run may call `url`."""
    target = _parts(url)
    if target is None:
        raise EvalError(f"eval target {url!r} is not an http(s) URL with a host (and no user:password); "
                        "use e.g. http://127.0.0.1:8001/mcp/")
    allowed = list(getattr(settings, "DOCSMCP_EVAL_ALLOWED_URLS", []))
    if _is_own_endpoint(target) or any(_under(target, entry) for entry in allowed):
        return
    raise EvalError(f"eval target {url!r} is not allowed: HTTP runs may call this server's own /mcp/ endpoints "
                    f"(http://127.0.0.1:{settings.MCP_SERVER_PORT}/mcp/...) or URLs under "
                    "DOCSMCP_EVAL_ALLOWED_URLS; ask the operator to add it there")
