"""OAuth 2.1 access tokens as callers: the built-in authorization server's tokens and an external issuer's.

corpus.apikeys asks here when a bearer token is a JWT or has the built-in server's form. A token becomes
the same Principal a key does, so every surface (MCP, REST, llms.txt) treats both alike. What a token
allows is the scopes the user consented to, narrowed to what the user may hold, and the user's corpora.

The built-in server's tokens carry a prefix (`docsmcp_at.`) that no API key or JWT has, so a token goes
straight to its own check. A worker trusts a token it checked for TOKEN_CACHE_SECONDS (its expiry and
resource are checked on every request): revoking it, deactivating its user or changing their groups
bites at once in the worker that made the change (corpus.apps) and within TOKEN_CACHE_SECONDS in others.

What a Django user may hold (docs/security.md#signing-in-with-oauth): every active user `read`; staff
`read`, `write`, `build`; a superuser every scope; a group named `docsmcp-<scope>` adds that scope, and
groups named `docsmcp-corpus-<name>` limit the user's tokens to those corpora.
"""

from __future__ import annotations

import hashlib
import posixpath
import secrets
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from common.callers import Principal
from common.errors import InvalidApiKey

from .models import SCOPES

if TYPE_CHECKING:
    from django.http import HttpRequest

SCOPE_GROUP_PREFIX = "docsmcp-"
CORPUS_GROUP_PREFIX = "docsmcp-corpus-"
STAFF_SCOPES = frozenset({"read", "write", "build"})
# Access and refresh tokens of the built-in server: a prefix with a dot, which API keys never hold and
# JWTs hold twice, then 256 random bits.
ACCESS_TOKEN_PREFIX = "docsmcp_at."
REFRESH_TOKEN_PREFIX = "docsmcp_rt."
# How long a worker trusts a token it checked: the most a revocation made through another worker, a
# deactivated user or a changed group waits to bite (docs/security.md#signing-in-with-oauth).
TOKEN_CACHE_SECONDS = 30.0
JWT_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


def generate_access_token(request: Any = None, refresh_token: bool = False) -> str:
    """ACCESS_TOKEN_GENERATOR: a token recognisable by its form, before any lookup."""
    return ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32)


def generate_refresh_token(request: Any = None) -> str:
    return REFRESH_TOKEN_PREFIX + secrets.token_urlsafe(32)


def is_access_token(token: str) -> bool:
    return token.startswith(ACCESS_TOKEN_PREFIX)


def _group_names(user: Any) -> list[str]:
    return list(user.groups.filter(name__startswith=SCOPE_GROUP_PREFIX).values_list("name", flat=True))


def user_scopes(user: Any, groups: list[str] | None = None) -> frozenset[str]:
    """The scopes a user's tokens may carry at most, from their account and groups."""
    if not user.is_active:
        return frozenset()
    if user.is_superuser:
        return frozenset(SCOPES)
    scopes = {"read"} | (STAFF_SCOPES if user.is_staff else set())
    for name in _group_names(user) if groups is None else groups:
        if name[len(SCOPE_GROUP_PREFIX):] in SCOPES:
            scopes.add(name[len(SCOPE_GROUP_PREFIX):])
    return frozenset(scopes)


def user_corpora(user: Any, groups: list[str] | None = None) -> frozenset[str]:
    """The corpora a user's tokens are limited to; empty means every corpus."""
    if user.is_superuser:
        return frozenset()
    names = _group_names(user) if groups is None else groups
    return frozenset(name[len(CORPUS_GROUP_PREFIX):] for name in names if name.startswith(CORPUS_GROUP_PREFIX))


def _url_parts(url: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    port = port if port is not None else {"http": 80, "https": 443}.get(scheme)
    path = posixpath.normpath(parts.path or "/")
    return scheme, parts.hostname.lower(), port, path


def resource_covers(resource: str, url: str) -> bool:
    """Whether a token bound to `resource` may be used at `url`: same origin, and `url` at or below its path."""
    audience, target = _url_parts(resource), _url_parts(url)
    if audience is None or target is None or audience[:3] != target[:3]:
        return False
    base = audience[3].rstrip("/")
    return target[3] == base or target[3].startswith(base + "/") or base == ""


RESOURCE_PATHS = ("/mcp", "/api/v1")


def is_own_resource(resource: str, origin: str) -> bool:
    """Whether `resource` names this server (at `origin`) or one of its endpoints: the server itself,
    /mcp/ and what is under it (/mcp/c/<corpus>/, a profile), or /api/v1/. Tokens are issued for these
    only (RFC 8707 invalid_target for any other), so no token of ours is good at another server."""
    target, here = _url_parts(resource), _url_parts(origin)
    if target is None or here is None or target[:3] != here[:3]:
        return False
    path = target[3]
    return path == "/" or any(path == base or path.startswith(base + "/") for base in RESOURCE_PATHS)


def request_resource(request: HttpRequest) -> str:
    """This request's URL as a resource indicator (no query)."""
    return request.build_absolute_uri(request.path)


def principal_for_token(request: HttpRequest, token: str) -> Principal | None:
    """The caller behind a built-in server's access token, None when the token is none it issued.

    Raises InvalidApiKey for a token that is known but may not be used here (expired, for another
    resource, its user deactivated).
    """
    return _builtin(request, token) if settings.DOCSMCP_OAUTH_SERVER else None


def principal_for_jwt(request: HttpRequest, token: str) -> Principal | None:
    """The caller behind an external issuer's JWT, checked without the database (its JWKS is cached);
    None when no external issuer is configured or the token is no JWT."""
    if settings.DOCSMCP_OAUTH_ISSUER and token.count(".") == 2:
        return _external(request, token)
    return None


@dataclass(frozen=True)
class _Checked:
    """What a worker remembers of a token that checked out: all but the request-dependent resource check."""

    at: float
    expires: float
    resources: tuple[str, ...]
    principal: Principal


_token_cache: dict[str, _Checked] = {}
_token_cache_lock = threading.Lock()


def _builtin(request: HttpRequest, token: str) -> Principal | None:
    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    checked = _token_cache.get(checksum)
    if checked is None or time.monotonic() - checked.at >= TOKEN_CACHE_SECONDS:
        checked = _check(checksum)
        if checked is None:
            return None
    if checked.expires <= time.time():
        forget_token(checksum)
        raise InvalidApiKey("the access token has expired; the client should refresh it (or sign in again)")
    here = request_resource(request)
    if checked.resources and not any(resource_covers(r, here) for r in checked.resources):
        raise InvalidApiKey(f"the access token was issued for {', '.join(checked.resources)}, not for {here}; "
                            "sign in again for this server")
    return checked.principal


def _check(checksum: str) -> _Checked | None:
    from oauth2_provider.models import get_access_token_model

    row = (get_access_token_model().objects.select_related("user", "application")
           .filter(token_checksum=checksum).first())
    if row is None:
        return None
    if row.expires <= timezone.now():
        raise InvalidApiKey("the access token has expired; the client should refresh it (or sign in again)")
    if row.user is None or not row.user.is_active:
        raise InvalidApiKey("the access token's user is no longer active")
    groups = [] if row.user.is_superuser else _group_names(row.user)  # one query for both
    scopes = frozenset(row.scope.split()) & user_scopes(row.user, groups)
    client = row.application.name if row.application is not None else "client"
    principal = Principal(name=f"oauth:{row.user.get_username()}:{client}", scopes=scopes,
                          corpora=user_corpora(row.user, groups), token=True)
    checked = _Checked(at=time.monotonic(), expires=row.expires.timestamp(), resources=tuple(row.resource or ()),
                       principal=principal)
    with _token_cache_lock:
        if len(_token_cache) > 10_000:
            _token_cache.clear()
        _token_cache[checksum] = checked
    return checked


def forget_token(checksum: str) -> None:
    """Drop one token from this worker's cache (its row was deleted: revoked, rotated away, or its client's)."""
    with _token_cache_lock:
        _token_cache.pop(checksum, None)


def forget_cached_tokens() -> None:
    with _token_cache_lock:
        _token_cache.clear()


_jwks_clients: dict[str, Any] = {}
_jwks_lock = threading.Lock()


def _jwks_client(url: str) -> Any:
    import jwt

    with _jwks_lock:
        client = _jwks_clients.get(url)
        if client is None:
            client = _jwks_clients[url] = jwt.PyJWKClient(url, cache_keys=True, lifespan=300, timeout=5)
        return client


def jwks_url() -> str:
    return settings.DOCSMCP_OAUTH_JWKS_URL or settings.DOCSMCP_OAUTH_ISSUER.rstrip("/") + "/.well-known/jwks.json"


def scope_map() -> dict[str, str]:
    """DOCSMCP_OAUTH_SCOPE_MAP as {issuer's scope: docsmcp scope}; without a map the names are docsmcp's own."""
    pairs = (entry.partition("=") for entry in settings.DOCSMCP_OAUTH_SCOPE_MAP)
    mapped = {theirs.strip(): ours.strip() for theirs, _, ours in pairs if theirs.strip() and ours.strip() in SCOPES}
    return mapped or {scope: scope for scope in SCOPES}


def external_issuer_only() -> bool:
    """Whether clients sign in at the external issuer alone, and so must be told the issuer's scope names."""
    return bool(settings.DOCSMCP_OAUTH_ISSUER) and not settings.DOCSMCP_OAUTH_SERVER


def scope_to_ask(scope: str) -> str | None:
    """The scope a challenge tells a client to ask for so that it holds docsmcp's `scope`: the name itself
    beside the built-in server; with an external issuer alone, the first of the issuer's scopes that the map
    turns into it, or into `admin` (which holds every scope), and None when the map names neither.

    One name, never each that maps: a challenge's scopes are asked for together, so naming two would have
    the client ask for more than the call needs, and be refused if the user may hold only one of them."""
    if not external_issuer_only():
        return scope
    mapping = scope_map()
    for wanted in (scope, "admin"):
        for theirs, ours in mapping.items():
            if ours == wanted:
                return theirs
    return None


def issuer_scopes() -> list[str]:
    """The external issuer's scope names that count here, every one of them (the resource metadata's
    scopes_supported, where a client picks from a list)."""
    return sorted(scope_map())


def _external(request: HttpRequest, token: str) -> Principal | None:
    import jwt

    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        return None
    audience = settings.DOCSMCP_OAUTH_AUDIENCE or request.build_absolute_uri("/")
    try:
        key = _jwks_client(jwks_url()).get_signing_key(header.get("kid"))
        claims = jwt.decode(token, key.key, algorithms=JWT_ALGORITHMS, audience=audience,
                            issuer=settings.DOCSMCP_OAUTH_ISSUER, options={"require": ["exp", "iss", "aud"]},
                            leeway=30)
    except jwt.ExpiredSignatureError:
        raise InvalidApiKey("the access token has expired; the client should refresh it") from None
    except jwt.InvalidAudienceError:
        raise InvalidApiKey(f"the access token is not for this server (its audience is not {audience})") from None
    except jwt.InvalidIssuerError:
        raise InvalidApiKey("the access token is from another issuer") from None
    except jwt.PyJWKClientError as exc:
        raise InvalidApiKey(f"the access token's signing key could not be found at the issuer's JWKS ({exc})") from None
    except jwt.PyJWTError as exc:
        raise InvalidApiKey(f"the access token is not valid ({exc})") from None
    granted = claims.get("scope", "")
    theirs = granted.split() if isinstance(granted, str) else []
    if isinstance(claims.get("scp"), list):
        theirs += [s for s in claims["scp"] if isinstance(s, str)]
    mapping = scope_map()
    scopes = frozenset(mapping[s] for s in theirs if s in mapping)
    return Principal(name=f"oauth:{claims.get('sub', 'unknown')}", scopes=scopes, token=True)
