"""OAuth 2.1 access tokens as callers: the built-in authorization server's tokens and an external issuer's.

corpus.apikeys asks here when a bearer token is no API key. A token becomes the same Principal a key
does, so every surface (MCP, REST, llms.txt) treats both alike. What a token allows is the scopes the
user consented to, narrowed to what the user may hold now (so taking a user out of a group, or
deactivating them, bites at the next request), and the user's corpora. Tokens are looked up by
SHA-256 on every request, never cached: a revoked token stops at once.

What a Django user may hold (docs/security.md#what-a-token-allows): every active user `read`; staff
`read`, `write`, `build`; a superuser every scope; a group named `docsmcp-<scope>` adds that scope, and
groups named `docsmcp-corpus-<name>` limit the user's tokens to those corpora.
"""

from __future__ import annotations

import hashlib
import posixpath
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from common.callers import InvalidApiKey, Principal

from .models import SCOPES

if TYPE_CHECKING:
    from django.http import HttpRequest

SCOPE_GROUP_PREFIX = "docsmcp-"
CORPUS_GROUP_PREFIX = "docsmcp-corpus-"
STAFF_SCOPES = frozenset({"read", "write", "build"})
JWT_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


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


def _builtin(request: HttpRequest, token: str) -> Principal | None:
    from oauth2_provider.models import get_access_token_model

    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    row = (get_access_token_model().objects.select_related("user", "application")
           .filter(token_checksum=checksum).first())
    if row is None:
        return None
    if row.expires <= timezone.now():
        raise InvalidApiKey("the access token has expired; the client should refresh it (or sign in again)")
    if row.user is None or not row.user.is_active:
        raise InvalidApiKey("the access token's user is no longer active")
    here = request_resource(request)
    if row.resource and not any(resource_covers(r, here) for r in row.resource):
        raise InvalidApiKey(f"the access token was issued for {', '.join(row.resource)}, not for {here}; "
                            "sign in again for this server")
    groups = [] if row.user.is_superuser else _group_names(row.user)  # one query for both
    scopes = frozenset(row.scope.split()) & user_scopes(row.user, groups)
    client = row.application.name if row.application is not None else "client"
    return Principal(name=f"oauth:{row.user.get_username()}:{client}", scopes=scopes,
                     corpora=user_corpora(row.user, groups))


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
    return Principal(name=f"oauth:{claims.get('sub', 'unknown')}", scopes=scopes)
