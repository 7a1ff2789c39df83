"""Bearer API keys: which keys are valid, with which scopes, on which corpora.

`authenticate(request)` is the one entry point, called by every surface: the MCP endpoint, llms.txt,
/health/ and the REST API (corpus/api/auth.py). A key is valid if it equals `MCP_API_KEY` (compared in constant time) or hashes to an unrevoked
`ApiKey` row. Keys are looked up by SHA-256, never stored in clear. A bearer token may instead be an
OAuth access token (corpus.oauth), told from a key by its form before any lookup. A request that sends an
Authorization header but no valid key or token raises `InvalidApiKey` (every surface answers 401), so a
garbled key can never fall back to the anonymous caller. Database keys are
cached briefly (KEY_CACHE_SECONDS) so reads keep working through a short database outage.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from common.callers import Principal, bearer_token
from common.errors import AuthUnavailable, InvalidApiKey

from .models import SCOPES, ApiKey
from .oauth import is_access_token, principal_for_jwt, principal_for_token

if TYPE_CHECKING:
    from django.http import HttpRequest

logger = logging.getLogger("docsmcp.auth")

# last_used_at is a hint for the admin, not an audit log: one write per key per minute at most.
_LAST_USED_RESOLUTION = timedelta(seconds=60)
# A database key that checked out is trusted for KEY_CACHE_SECONDS without asking the database again
# (so revoking a key takes up to that long to bite), and for up to KEY_GRACE_SECONDS while the
# database cannot be reached, so agents holding keys keep reading during a short outage.
KEY_CACHE_SECONDS = 30.0
KEY_GRACE_SECONDS = 600.0
_key_cache: dict[str, tuple[float, Principal]] = {}
_key_cache_lock = threading.Lock()
_last_outage_warning = 0.0


def generate_key() -> str:
    """A new random key (43 URL-safe characters, 256 bits). Never one starting with "-": operators type
    its first 8 characters as an argument of `mcp_apikey`, where a leading "-" reads as an option."""
    while (key := secrets.token_urlsafe(32)).startswith("-"):
        pass
    return key


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def authenticate(request: HttpRequest) -> Principal | None:
    """The principal behind the request's bearer key; None when it sends no Authorization header.

    Raises InvalidApiKey when the header is there but holds no valid key, and AuthUnavailable when
    the database cannot check a key this process has not seen recently.
    """
    if not request.headers.get("Authorization", "").strip():
        return None
    token = bearer_token(request)
    if token is None:
        raise InvalidApiKey("the Authorization header is malformed; send `Authorization: Bearer <key>`")
    env_key = settings.MCP_API_KEY
    if env_key and hmac.compare_digest(token.encode("utf-8"), env_key.encode("utf-8")):
        return Principal(name="env", scopes=frozenset(SCOPES))
    jwt_principal = principal_for_jwt(request, token)  # API keys hold no dots; a JWT needs no database
    if jwt_principal is not None:
        return jwt_principal
    if is_access_token(token):
        return _token_principal(request, token)
    digest = hash_key(token)
    cached = _key_cache.get(digest)
    age = time.monotonic() - cached[0] if cached else None
    if cached and age < KEY_CACHE_SECONDS:
        return cached[1]
    try:
        principal = _principal_from_database(digest)
    except DatabaseError as exc:
        if cached and age < KEY_GRACE_SECONDS:  # a key that checked out before the outage: a revocation waits
            _outage_warning(f"database unavailable ({exc}); API keys checked in the last {KEY_GRACE_SECONDS:.0f} "
                            f"s are accepted without a check (key {cached[1].name!r}, {age:.0f} s ago)")
            return cached[1]
        raise AuthUnavailable("the database is unavailable, so this API key cannot be checked") from exc
    with _key_cache_lock:
        if principal is None:
            _key_cache.pop(digest, None)
        else:
            if len(_key_cache) > 10_000:
                _key_cache.clear()
            _key_cache[digest] = (time.monotonic(), principal)
    if principal is None:
        raise InvalidApiKey("the API key is not valid (unknown or revoked); create a key in the admin under API "
                            "keys or with `manage.py mcp_apikey create`")
    return principal


def _outage_warning(message: str) -> None:
    """Logs at most once a minute: every request with a key asks during an outage."""
    global _last_outage_warning
    now = time.monotonic()
    if now - _last_outage_warning > 60:
        _last_outage_warning = now
        logger.warning(message)


def _token_principal(request: HttpRequest, token: str) -> Principal:
    try:
        principal = principal_for_token(request, token)
    except DatabaseError as exc:
        raise AuthUnavailable("the database is unavailable, so this access token cannot be checked") from exc
    if principal is None:
        raise InvalidApiKey("the access token is not valid (unknown, revoked or replaced by a refresh); the "
                            "client should refresh it or sign in again")
    return principal


def _principal_from_database(digest: str) -> Principal | None:
    row = (
        ApiKey.objects.filter(key_hash=digest, revoked_at__isnull=True)
        .only("id", "name", "scopes", "corpora", "last_used_at")
        .first()
    )
    if row is None:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > _LAST_USED_RESOLUTION:
        try:
            _touch(row.pk, now)
        except DatabaseError as exc:  # the key checked out: a hint that cannot be written refuses no one
            _outage_warning(f"API key {row.name!r}: last_used_at not written ({exc})")
    scopes = frozenset(s for s in (row.scopes or []) if isinstance(s, str))
    corpora = frozenset(c for c in (row.corpora or []) if isinstance(c, str))
    return Principal(name=row.name, scopes=scopes, key_id=row.pk, corpora=corpora)


def _touch(pk: int, now: datetime) -> None:
    """Writes the admin's last-used hint of a key: apart from the check (in a savepoint of its own, so a
    failed write leaves a caller's transaction usable), so a failed write is told from a failed check."""
    with transaction.atomic():
        ApiKey.objects.filter(pk=pk).update(last_used_at=now)


def forget_cached_keys() -> None:
    """Drop every cached key check (after revoking keys, and in tests)."""
    with _key_cache_lock:
        _key_cache.clear()


def create_api_key(name: str, scopes: list[str] | None = None,
                   corpora: list[str] | None = None) -> tuple[ApiKey, str]:
    """Create a key row and return it with the clear key, which is not recoverable afterwards.

    `corpora` limits the key to those corpus names (None or empty: every corpus).
    """
    chosen = list(scopes) if scopes is not None else ["read"]
    unknown = sorted(set(chosen) - set(SCOPES))
    if unknown:
        raise ValueError(f"Unknown scope(s): {', '.join(unknown)}. Allowed: {', '.join(SCOPES)}")
    key = generate_key()
    row = ApiKey.objects.create(name=name, prefix=key[:8], key_hash=hash_key(key), scopes=chosen,
                                corpora=sorted(set(corpora or [])))
    return row, key


def revoke_api_keys(queryset) -> int:
    """Revoke every still-active key in `queryset`; returns how many were revoked.

    This process forgets its cached checks at once; other workers within KEY_CACHE_SECONDS.
    """
    revoked = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
    forget_cached_keys()
    return revoked
