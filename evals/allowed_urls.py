"""Which URLs an eval run over HTTP may call: this server's own /mcp/ endpoints, and what the operator allows.

An HTTP run makes the worker open a connection to a URL a caller typed. Left open, that is a port
scanner inside the operator's network (the run's error would say which ports answer). So a target
must be this server as configured (MCP_SERVER_HOST/MCP_SERVER_PORT, loopback names when it binds a
wildcard or loopback address, path under /mcp; for a key limited to some corpora, /mcp/ or
/mcp/c/<corpus>/ serving one of them), or sit under a DOCSMCP_EVAL_ALLOWED_URLS entry (same scheme, host
and port; path prefix). URLs are compared normalised (retrieval/allowlist.py), so `/mcp/../api/`
or `%2e%2e` cannot reach another path. The check runs before any connection, and a refusal never
says anything about the target beyond its URL.
"""

from __future__ import annotations

from django.conf import settings

from corpus.access import limited
from corpus.errors import CorpusNotFound
from corpus.selectors import corpus_get, default_corpus
from retrieval.allowlist import NormalURL, normalise_url

from .errors import EvalError

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
HTTP_SCHEMES = ("http", "https")


def _parts(url: str) -> NormalURL | None:
    target = normalise_url(url)
    if target is None or target.scheme not in HTTP_SCHEMES or not target.host or target.user or target.password:
        return None
    return target


def _own_hosts() -> frozenset[str]:
    host = settings.MCP_SERVER_HOST.strip().lower().strip("[]")
    if host in WILDCARD_HOSTS or host in LOOPBACK_NAMES:
        return LOOPBACK_NAMES
    return frozenset({host})


def _is_own_endpoint(target: NormalURL) -> bool:
    return (target.scheme == "http" and target.host in _own_hosts() and target.port == settings.MCP_SERVER_PORT
            and (target.path == "/mcp" or target.path.startswith("/mcp/")))


def _endpoint_corpus(path: str) -> str | None:
    """The one corpus an own path serves ("" for the default corpus), or None for a path that serves
    no single corpus (another profile's, which answers for every corpus the caller may see)."""
    parts = path.strip("/").split("/")
    if parts in (["mcp"], ["mcp", "docs"]):
        return ""
    if len(parts) == 3 and parts[:2] == ["mcp", "c"] and parts[2]:
        return parts[2]
    return None


def is_own_endpoint(url: str) -> bool:
    """Whether `url` is one of this server's own /mcp/ endpoints (as configured)."""
    target = _parts(url)
    return target is not None and _is_own_endpoint(target)


def _under(target: NormalURL, allowed: str) -> bool:
    entry = _parts(allowed)
    return entry is not None and target.under(entry)


def _check_corpus(url: str, target: NormalURL) -> None:
    """A key limited to some corpora (corpus/access.py) may evaluate only an own path that serves one of
    them: the worker calls it without the key, so the endpoint would not apply the limit. A corpus
    that does not exist reads the same as one the key may not see."""
    if not limited():
        return
    name = _endpoint_corpus(target.path)
    if name is not None:
        try:
            corpus_get(name) if name else default_corpus()
            return
        except CorpusNotFound:
            pass
    which = f"corpus {name!r}" if name else "the default corpus" if name == "" else "more than one corpus"
    raise EvalError(f"eval target {url!r} serves {which}, and this API key is limited to other corpora; use "
                    f"http://127.0.0.1:{settings.MCP_SERVER_PORT}/mcp/c/<corpus>/ with a corpus the key may see")


def check_eval_url(url: str) -> None:
    """Raise EvalError unless an eval run may call `url`."""
    target = _parts(url)
    if target is None:
        raise EvalError(f"eval target {url!r} is not an http(s) URL with a host (and no user:password); "
                        "use e.g. http://127.0.0.1:8001/mcp/")
    allowed = settings.DOCSMCP_EVAL_ALLOWED_URLS
    if _is_own_endpoint(target):
        _check_corpus(url, target)
        return
    if any(_under(target, entry) for entry in allowed):
        return
    raise EvalError(f"eval target {url!r} is not allowed: HTTP runs may call this server's own /mcp/ endpoints "
                    f"(http://127.0.0.1:{settings.MCP_SERVER_PORT}/mcp/...) or URLs under "
                    "DOCSMCP_EVAL_ALLOWED_URLS, compared once `..`, `%2e` and default ports are resolved; ask the "
                    "operator to add it there")
