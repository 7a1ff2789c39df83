"""Who may call the REST API: the MCP endpoint's bearer keys, checked per scope.

Each operation names the scope it needs with `auth=READ`, `auth=BUILD` or `auth=ADMIN`:
read lists and reads corpora, builds and the index; build triggers, cancels and activates
builds; admin creates, updates and deletes corpora (an admin key passes every check).

- A request with an `Authorization: Bearer` header must carry a valid key (else 401), and
  that key must hold the scope (else 403), whatever MCP_AUTH_REQUIRED says.
- A request without a key is refused (401) when MCP_AUTH_REQUIRED is true; when it is false
  (the single-machine default) it is served as the anonymous principal, which holds every
  scope. Turn MCP_AUTH_REQUIRED on wherever the site is reachable by anyone else.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import HttpBearer

from mcp_endpoint.apikeys import Principal, authenticate, bearer_token

API_SCOPES = ("read", "build", "admin")
ANONYMOUS = Principal(name="anonymous", scopes=frozenset(API_SCOPES))


class ApiKey(HttpBearer):
    """Bearer API key holding `scope` (OpenAPI: one `ApiKey` bearer security scheme)."""

    def __init__(self, scope: str):
        if scope not in API_SCOPES:
            raise ValueError(f"unknown API scope {scope!r}; use one of {', '.join(API_SCOPES)}")
        self.scope = scope
        super().__init__()

    def __call__(self, request: HttpRequest) -> Principal:
        principal = authenticate(request)
        if principal is None:
            if bearer_token(request) is not None:
                raise AuthenticationError(message="the API key is not valid (unknown or revoked); "
                                                  "create one in the admin under API keys")
            if settings.MCP_AUTH_REQUIRED:
                raise AuthenticationError(message="a valid API key is required: send "
                                                  "`Authorization: Bearer <key>`")
            principal = ANONYMOUS
        if not principal.has_scope(self.scope):
            held = ", ".join(sorted(principal.scopes)) or "none"
            raise AuthorizationError(message=f"this endpoint needs the {self.scope!r} scope; the key "
                                             f"{principal.name!r} holds: {held}")
        return principal

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:  # pragma: no cover
        return authenticate(request)  # __call__ does the work; HttpBearer requires the method


READ, BUILD, ADMIN = ApiKey("read"), ApiKey("build"), ApiKey("admin")


def caller(request: HttpRequest) -> str:
    """Who made the request, for `requested_by` fields."""
    principal = getattr(request, "auth", None)
    return f"api:{principal.name}" if isinstance(principal, Principal) else "api"
