"""Health checks: `GET /health/` for load balancers and seed 003's `GET /`."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from mcp_endpoint.protocol import LATEST_VERSION, SUPPORTED_VERSIONS

logger = logging.getLogger("docsmcp.mcp")


def _corpora() -> tuple[list[dict[str, Any]], bool]:
    """Each corpus and its active build, from the corpus app when it is there; (list, ok)."""
    try:
        from corpus.selectors import health_summary
    except ImportError:
        return [], True
    try:
        return list(health_summary()), True
    except Exception:
        logger.exception("health: corpus summary failed")
        return [], False


def _database_ok() -> bool:
    try:
        connection.ensure_connection()
        return True
    except Exception:
        logger.exception("health: database unreachable")
        return False


def health_payload() -> tuple[dict[str, Any], bool]:
    database = _database_ok()
    corpora, corpora_ok = _corpora() if database else ([], False)
    healthy = database and corpora_ok
    payload = {
        "status": "healthy" if healthy else "unhealthy",
        "service": "docsmcp",
        "version": settings.VERSION,
        "protocol": f"MCP {LATEST_VERSION}",
        "protocol_versions": list(SUPPORTED_VERSIONS),
        "checks": {"database": "ok" if database else "error", "corpora": "ok" if corpora_ok else "error"},
        "corpora": corpora,
    }
    return payload, healthy


@csrf_exempt  # read-only; lets a stray POST get 405 rather than a CSRF page
@require_safe
def health(request: HttpRequest) -> JsonResponse:
    """GET /health/ and GET /: 200 when the database answers, 503 otherwise."""
    payload, healthy = health_payload()
    return JsonResponse(payload, status=200 if healthy else 503)
