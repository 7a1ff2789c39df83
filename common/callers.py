"""Who is calling: the principal every surface (REST, MCP, llms.txt, health) authenticates.

What a caller is, and how a bearer key is read from a request, is shared; which keys are valid is
the corpus app's (corpus.apikeys), since a key's limits are limits on corpus access.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import InsufficientScope

if TYPE_CHECKING:
    from django.http import HttpRequest

# What a caller without a key may do, and only while MCP_AUTH_REQUIRED is false.
ANONYMOUS_SCOPES = frozenset({"read"})


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. `name` is the key's name ('env' for MCP_API_KEY).

    `corpora` limits the key to those corpus names; empty means every corpus. `token` is true for an
    OAuth access token: its holder can sign in again for more scopes, so a refusal says which it needs
    (a 403 insufficient_scope challenge) where a static key's refusal keeps its own shape.
    """

    name: str
    scopes: frozenset[str]
    key_id: int | None = None
    corpora: frozenset[str] = frozenset()
    token: bool = False

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    @property
    def rate_limit_identity(self) -> str:
        return f"key:{self.key_id}" if self.key_id is not None else f"key:{self.name}"


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def allows(principal: Principal | None, scope: str) -> bool:
    """Whether the caller holds `scope`; None is the anonymous caller (read only)."""
    return principal.has_scope(scope) if principal is not None else scope in ANONYMOUS_SCOPES


PROTECTED_RESOURCE_METADATA = "/.well-known/oauth-protected-resource"


def resource_metadata_url(request: HttpRequest) -> str:
    """Where this request's resource describes itself (RFC 9728): the path-suffixed form for /mcp/... and
    /api/v1/, so a client finds the authorization server and scopes from a 401 alone."""
    path = request.path
    if path.startswith("/api/v1/") or path == "/api/v1":
        suffix = "/api/v1/"
    elif path.startswith("/mcp"):
        suffix = path if path.endswith("/") else path + "/"
    else:
        suffix = ""
    return request.build_absolute_uri(PROTECTED_RESOURCE_METADATA + suffix.rstrip("/") + ("/" if suffix else ""))


def _own_name(scope: str) -> str | None:
    return scope


_scope_name: Callable[[str], str | None] = _own_name


def use_scope_names(name: Callable[[str], str | None]) -> None:
    """How a challenge names a scope to the client: the app that knows who issues tokens (corpus) installs
    it, since a client signing in at an external issuer must ask for the issuer's names, not docsmcp's.
    `name` returns None when the client cannot be told any name that grants the scope."""
    global _scope_name
    _scope_name = name


def bearer_challenge(request: HttpRequest, error: str | None = None, scope: str = "read",
                     description: str | None = None) -> str:
    """A `WWW-Authenticate` value for a 401 or 403: realm, the error, the scope to ask for and where the
    resource's metadata is. A 401 names `read`, what reading any of the server's resources needs, so a client
    signs in for the least at first (the MCP authorization specification's scope selection) and asks for
    more when a call needs it (`scope_challenge`)."""
    params = ['realm="docsmcp"']
    if error:
        params.append(f'error="{error}"')
    named = _scope_name(scope)
    if named:
        params.append(f'scope="{named}"')
    params.append(f'resource_metadata="{resource_metadata_url(request)}"')
    if description:
        params.append('error_description="{}"'.format(description.replace("\\", "").replace('"', "'")))
    return "Bearer " + ", ".join(params)


def scope_challenge(request: HttpRequest, exc: InsufficientScope) -> str:
    return bearer_challenge(request, "insufficient_scope", exc.scope, str(exc))
