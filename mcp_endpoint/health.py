"""Health checks: `GET /health/` for load balancers and the techdoc contract's `GET /`.

Three things can fail independently: the database (registrations, keys, builds), the broker (queued
builds and evals) and each corpus's active index (what search and get_doc read). Serving needs only
the indexes, and keeps its last known active builds while the database is down, so `health` is:

- `ok` (200): everything checked answers;
- `degraded` (200): serving works, but something else is down: a load balancer keeps sending
  traffic, a monitor should page;
- `unhealthy` (503): no corpus can be served (every registered index unreadable, or the database
  down with no active build known to this process).

`status` stays the techdoc contract's two words: "healthy" for ok and degraded, "unhealthy" otherwise.

`ready` says whether this process has warmed what it serves (corpus/warming.py): a server started
by `manage.py serve` answers only once its active builds are loaded; while it is still warming,
`health` is `starting` (503). A process that opens indexes on first use (runserver) is ready.

With MCP_AUTH_REQUIRED, corpus names and build IDs are not for strangers: an anonymous caller (or
one whose key does not check out) gets the status words and the checks, not `corpora`; a valid
key sees the corpora it may read, a staff session sees them all. A health check never answers
401: a load balancer has no key, and an invalid one still learns only what anonymous callers do.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from common.errors import AuthUnavailable, InvalidApiKey
from corpus.access import limited_to, visible
from corpus.apikeys import authenticate
from corpus.selectors import health_summary
from corpus.serving import known_active_paths
from corpus.warming import WARMING, warm_state
from mcp_endpoint.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from retrieval.errors import IndexUnavailable
from retrieval.search.index import check_index

logger = logging.getLogger("docsmcp.mcp")

OK, DEGRADED, UNHEALTHY, STARTING = "ok", "degraded", "unhealthy", "starting"
PROBE_TIMEOUT = 0.5  # seconds; a health check must answer before the load balancer gives up on it


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception as exc:
        logger.warning("health: database unreachable: %s", exc)
        connection.close_if_unusable_or_obsolete()
        return False


def _broker() -> str:
    """'ok', 'error' or 'not configured' (tasks run inline)."""
    url = settings.CELERY_BROKER_URL
    if not url:
        return "not configured"
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis

            redis.Redis.from_url(url, socket_timeout=PROBE_TIMEOUT, socket_connect_timeout=PROBE_TIMEOUT).ping()
            return "ok"
        except Exception as exc:
            logger.warning("health: broker unreachable: %s", exc)
            return "error"
    if url.startswith("filesystem://"):
        options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
        folders = [options.get(k) for k in ("data_folder_in", "data_folder_out") if options.get(k)]
        writable = all(Path(f).is_dir() and os.access(f, os.W_OK) for f in folders)
        return "ok" if folders and writable else "error"
    return "ok"  # a transport this check does not know how to probe


def _index_state(path: str) -> str:
    if "://" in path:
        return "ok"  # object stores are not probed per health check
    try:
        check_index(Path(path))
        return "ok"
    except IndexUnavailable as exc:
        logger.warning("health: %s", exc)
        return "unreadable"


def _corpora(database: bool) -> tuple[list[dict[str, Any]], bool]:
    """Each corpus with its active build and index state; (list, whether the list could be read).

    With the database down, the builds this process serves from memory are listed instead.
    """
    if database:
        try:
            corpora = list(health_summary())
        except Exception:
            logger.exception("health: corpus summary failed")
            return [], False
    else:
        corpora = [{"corpus": name, "index_path": path, "source": "last known"}
                   for name, path in sorted(known_active_paths().items())]
    for entry in corpora:
        path = entry.pop("index_path", None)
        entry["index"] = _index_state(path) if path else "no active build"
    return corpora, database


def health_payload() -> tuple[dict[str, Any], str]:
    database = _database_ok()
    broker = _broker()
    corpora, listed = _corpora(database)
    served = [c for c in corpora if c["index"] == "ok"]
    built = [c for c in corpora if c["index"] != "no active build"]
    if (built and not served) or (not database and not served):
        status = UNHEALTHY
    elif not database or broker == "error" or not listed or len(served) < len(built):
        status = DEGRADED
    else:
        status = OK
    indexes = "ok" if len(served) == len(built) else ("error" if not served else "partial")
    warming = warm_state()
    if warming["state"] == WARMING and status != UNHEALTHY:
        status = STARTING
    payload = {
        # the techdoc contract's field, word for word: "healthy" while the documentation can be served
        "status": "unhealthy" if status in (UNHEALTHY, STARTING) else "healthy",
        "health": status,
        "ready": status not in (UNHEALTHY, STARTING),
        "service": "docsmcp",
        "version": settings.VERSION,
        "protocol": f"MCP {LATEST_VERSION}",
        "protocol_versions": list(SUPPORTED_VERSIONS),
        "checks": {"database": "ok" if database else "error", "broker": broker, "indexes": indexes,
                   "warm": warming["state"]},
        "corpora": corpora,
    }
    return payload, status


EVERY_CORPUS: frozenset[str] = frozenset()


def _corpora_shown(request: HttpRequest) -> frozenset[str] | None:
    """The corpora this caller may see named: EVERY_CORPUS, those its key is limited to, or None."""
    if not settings.MCP_AUTH_REQUIRED:
        return EVERY_CORPUS  # anyone may list the corpora already (GET /api/v1/corpora)
    try:
        principal = authenticate(request)
    except (InvalidApiKey, AuthUnavailable):
        return None
    if principal is not None:
        return principal.corpora if principal.has_scope("read") else None
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return EVERY_CORPUS
    return None


@csrf_exempt  # read-only; lets a stray POST get 405 rather than a CSRF page
@require_safe
def health(request: HttpRequest) -> JsonResponse:
    """GET /health/ and GET /: 200 while the documentation can be served (ok or degraded), 503 otherwise
    (unhealthy, or starting: still warming)."""
    shown = _corpora_shown(request)
    payload, status = health_payload()
    if shown is None:
        del payload["corpora"]
    elif shown:
        with limited_to(shown):
            payload["corpora"] = [c for c in payload["corpora"] if visible(c["corpus"])]
    return JsonResponse(payload, status=503 if status in (UNHEALTHY, STARTING) else 200)
