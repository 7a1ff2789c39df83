"""Who is calling: the principal every surface (REST, MCP, llms.txt, health) authenticates.

What a caller is, and how a bearer key is read from a request, is shared; which keys are valid is
the corpus app's (corpus.apikeys), since a key's limits are limits on corpus access.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.http import HttpRequest

# What a caller without a key may do, and only while MCP_AUTH_REQUIRED is false.
ANONYMOUS_SCOPES = frozenset({"read"})


class InvalidApiKey(Exception):
    """An Authorization header that carries no valid key (unknown, revoked or malformed)."""


class AuthUnavailable(Exception):
    """A database key could not be checked: the database is unreachable and the key is not cached."""


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. `name` is the key's name ('env' for MCP_API_KEY).

    `corpora` limits the key to those corpus names; empty means every corpus.
    """

    name: str
    scopes: frozenset[str]
    key_id: int | None = None
    corpora: frozenset[str] = frozenset()

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
