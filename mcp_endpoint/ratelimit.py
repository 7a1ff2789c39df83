"""Per-caller request limits: a fixed one-minute window, counted in Redis when configured.

With `MCP_RATE_LIMIT_REDIS_URL` every worker shares one counter per caller (INCR + EXPIRE);
without it each process counts on its own, which is right for a single machine. A Redis that
cannot be reached fails open (the request is served, a warning is logged): a broken limiter
must not take the documentation offline.

The transport counts every JSON-RPC message; a tool that does the work of several searches in one
call (documents_search_batch) charges the rest with `charge_extra`, so a batch costs what its
queries cost.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from mcp_endpoint.errors import RateLimited

if TYPE_CHECKING:
    from django.http import HttpRequest

    from common.callers import Principal

logger = logging.getLogger("docsmcp.mcp.ratelimit")

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    retry_after: int  # seconds until the window resets; 0 when allowed


_memory_lock = threading.Lock()
_memory_counts: dict[tuple[str, int], int] = {}
_redis_clients: dict[str, object] = {}
_last_redis_warning = 0.0


def _now() -> float:
    return time.time()


def reset() -> None:
    """Forget all in-memory counts (tests, and settings changes at run time)."""
    with _memory_lock:
        _memory_counts.clear()


def _memory_hit(identity: str, window: int, cost: int) -> int:
    with _memory_lock:
        if len(_memory_counts) > 10_000:
            for key in [k for k in _memory_counts if k[1] < window]:
                del _memory_counts[key]
        count = _memory_counts.get((identity, window), 0) + cost
        _memory_counts[(identity, window)] = count
        return count


def _redis_client(url: str):
    client = _redis_clients.get(url)
    if client is None:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        _redis_clients[url] = client
    return client


def _redis_hit(url: str, identity: str, window: int, cost: int) -> int | None:
    global _last_redis_warning
    key = f"docsmcp:ratelimit:{identity}:{window}"
    try:
        pipe = _redis_client(url).pipeline()
        pipe.incrby(key, cost)
        pipe.expire(key, WINDOW_SECONDS + 1, nx=True)
        count, _ = pipe.execute()
        return int(count)
    except Exception as exc:  # any Redis failure: serve the request, say so in the log
        now = time.monotonic()
        if now - _last_redis_warning > 60:
            _last_redis_warning = now
            logger.warning("rate limiter: Redis unavailable (%s); requests are not being limited", exc)
        return None


def hit(identity: str, limit: int | None = None, cost: int = 1) -> Decision:
    """Count `cost` requests (a batch's calls) for `identity`; say whether it is within the per-minute limit."""
    if limit is None:
        limit = settings.MCP_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return Decision(True, 0, 0, 0)
    now = _now()
    window = int(now // WINDOW_SECONDS)
    url = settings.MCP_RATE_LIMIT_REDIS_URL
    count = _redis_hit(url, identity, window, cost) if url else _memory_hit(identity, window, cost)
    if count is None:
        return Decision(True, limit, limit, 0)
    if count <= limit:
        return Decision(True, limit, limit - count, 0)
    retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
    return Decision(False, limit, 0, retry_after)


def _database_hit(identity: str, window: int, cost: int) -> int | None:
    """Count in the database (one row per caller and minute): the row lock of the UPDATE orders workers that
    count at once. A database that cannot be reached fails open, as Redis does."""
    from django.db import DatabaseError, IntegrityError, transaction
    from django.db.models import F

    from mcp_endpoint.models import RateCount

    global _last_redis_warning
    identity = identity[:300]
    rows = RateCount.objects.filter(identity=identity, window=window)
    try:
        with transaction.atomic():
            if not rows.update(count=F("count") + cost):
                try:
                    with transaction.atomic():
                        RateCount.objects.create(identity=identity, window=window, count=cost)
                    RateCount.objects.filter(window__lt=window - 1).delete()  # once per caller and minute
                except IntegrityError:  # another worker created it first
                    rows.update(count=F("count") + cost)
            return rows.values_list("count", flat=True).first()
    except DatabaseError as exc:
        now = time.monotonic()
        if now - _last_redis_warning > 60:
            _last_redis_warning = now
            logger.warning("rate limiter: database unavailable (%s); feedback is not being limited", exc)
        return None


def shared_hit(identity: str, limit: int, cost: int = 1) -> Decision:
    """`hit` for a limit that must hold across every worker and host even without Redis (the feedback tools':
    each worker counting alone multiplies the limit by the number of workers): counted in Redis when
    MCP_RATE_LIMIT_REDIS_URL is set, else in the database."""
    if limit <= 0:
        return Decision(True, 0, 0, 0)
    if settings.MCP_RATE_LIMIT_REDIS_URL:
        return hit(identity, limit, cost)
    now = _now()
    window = int(now // WINDOW_SECONDS)
    count = _database_hit(identity, window, cost)
    if count is None:
        return Decision(True, limit, limit, 0)
    if count <= limit:
        return Decision(True, limit, limit - count, 0)
    return Decision(False, limit, 0, max(1, math.ceil((window + 1) * WINDOW_SECONDS - now)))


def identity(request: HttpRequest, principal: Principal | None) -> str:
    """Whom a request is counted against: its key, or its address when it has none."""
    from mcp_endpoint.security import client_ip

    return principal.rate_limit_identity if principal is not None else f"ip:{client_ip(request)}"


def charge_extra(request: HttpRequest | None, principal: Principal | None, calls: int, what: str) -> None:
    """Count `calls` more requests for the caller (the message itself was counted already); raise
    RateLimited past the limit. Calls without an HTTP request (stdio, in-process evals) are not limited."""
    if request is None or calls <= 0:
        return
    decision = hit(identity(request, principal), cost=calls)
    if not decision.allowed:
        raise RateLimited(decision, what)
