"""The outside services the test suite may use, and nothing else.

- PostgreSQL: the server, role and database named by DATABASE_URL. Django creates its test
  database there (`test_<name>`, or DOCSMCP_TEST_DATABASE_NAME: tests/settings.py), and the few
  tests that need a database of their own create one named after it and drop it afterwards.
- Redis: only the database of DOCSMCP_TEST_REDIS_URL. Without it the tests that need Redis are
  skipped, saying so; there is no fallback to a well-known local address, which might be someone
  else's. What a test writes there it deletes (its own queue, its own rate-limit window).
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

REDIS_URL = os.environ.get("DOCSMCP_TEST_REDIS_URL", "")


def redis_unreachable_reason() -> str | None:
    """Why the Redis tests cannot run (None when they can)."""
    if not REDIS_URL:
        return "set DOCSMCP_TEST_REDIS_URL to a Redis database the tests may write to (scripts/test.sh sets one)"
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2).ping()
    except Exception as exc:  # any failure means: no Redis to test against
        return f"Redis {REDIS_URL} (DOCSMCP_TEST_REDIS_URL) is unreachable ({type(exc).__name__}: {exc})"
    return None


def redis_client():
    import redis

    return redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2)


def delete_redis_keys(*patterns: str) -> None:
    """Delete the keys matching `patterns` in the test Redis database: what a test wrote, nothing more."""
    client = redis_client()
    for pattern in patterns:
        keys = list(client.scan_iter(pattern, count=1000))
        if keys:
            client.delete(*keys)


def _unacked_of(client, queue: str) -> list[bytes]:
    tags = []
    for tag, raw in client.hscan_iter("unacked"):
        try:
            routing_key = json.loads(raw)[2]
        except (ValueError, IndexError, TypeError):
            continue
        if routing_key == queue:
            tags.append(tag)
    return tags


def queue_leftovers(queue: str) -> list[str]:
    """What Redis still holds for `queue`: its keys, and its unacknowledged messages as `unacked:<tag>`."""
    client = redis_client()
    keys = [key.decode() for key in client.scan_iter(f"*{queue}*", count=1000)]
    return sorted(keys + [f"unacked:{tag.decode()}" for tag in _unacked_of(client, queue)])


def delete_queue(queue: str) -> None:
    """Remove what a Celery worker and its callers left in Redis for `queue` (a name no other test uses):
    the queue and its bindings, messages delivered but never acknowledged (a worker killed mid-task),
    and the remote-control binding's expiry once no worker holds that binding."""
    client = redis_client()
    delete_redis_keys(f"*{queue}*")
    for tag in _unacked_of(client, queue):
        client.hdel("unacked", tag)
        client.zrem("unacked_index", tag)
    if not client.exists("_kombu.binding.celery.pidbox"):
        client.zrem("_kombu.binding_deadlines", "celery.pidbox")


def database_url(name: str | None = None) -> str:
    """A URL of the database this test process uses (pytest-django's test database), or of `name` on the
    same server with the same role."""
    from django.db import connection

    conf = connection.settings_dict
    user = quote(conf.get("USER") or "", safe="")
    password = f":{quote(conf['PASSWORD'], safe='')}" if conf.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user or password else ""
    host = conf.get("HOST") or "127.0.0.1"
    port = f":{conf['PORT']}" if conf.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{quote(name or conf['NAME'], safe='')}"
