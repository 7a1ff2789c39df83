"""Who may call the REST API: a bearer API key (the same keys as /mcp/), or a staff member's admin session.

Each operation names the scope it needs with `auth=READ`, `auth=BUILD` or `auth=ADMIN`:
read lists and reads corpora, builds and the index; build triggers, cancels and activates
builds, reviews fixes and starts eval runs; admin creates, updates and deletes corpora (an
admin key passes every check).

- A request with an Authorization header must carry a valid key (else 401, never anonymous),
  and that key must hold the scope (else 403; for an OAuth token, with an `insufficient_scope`
  challenge naming the scope), whatever MCP_AUTH_REQUIRED says. A key limited
  to some corpora sees only those (the corpus app's key check admits it to them).
- Without a key, a logged-in active staff user of the admin holds every scope; their unsafe
  requests must pass Django's CSRF check, so another site cannot ride their session.
- Otherwise the caller is anonymous: refused (401) when MCP_AUTH_REQUIRED is true, else served
  with the read scope only. Every write needs a key or a staff session.

Keys are checked by `corpus.apikeys.authenticate`, called here as the MCP endpoint, llms.txt and
/health/ call it: one path for every surface. Here in corpus, not in the floor's REST plumbing
(common.api), because a key and the corpora it may see are corpus access rules.

A key that cannot be checked (the database is down) raises AuthUnavailable, which the error
handlers (common.api.errors) answer with 503 database_unavailable.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import HttpBearer
from ninja.utils import check_csrf

from common.callers import ANONYMOUS_SCOPES, Principal
from common.errors import InsufficientScope, InvalidApiKey
from corpus.access import limit_to
from corpus.apikeys import authenticate

API_SCOPES = ("read", "build", "admin")
ANONYMOUS = Principal(name="anonymous", scopes=ANONYMOUS_SCOPES)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ApiKey(HttpBearer):
    """Bearer API key holding `scope` (OpenAPI: one `ApiKey` bearer security scheme)."""

    def __init__(self, scope: str):
        if scope not in API_SCOPES:
            raise ValueError(f"unknown API scope {scope!r}; use one of {', '.join(API_SCOPES)}")
        self.scope = scope
        super().__init__()

    def __call__(self, request: HttpRequest) -> Principal:
        principal = _principal(request)
        if not principal.has_scope(self.scope):
            held = ", ".join(sorted(principal.scopes)) or "none"
            if principal.token:
                raise InsufficientScope(f"this endpoint needs the {self.scope!r} scope; the token holds: {held}",
                                        self.scope)
            hint = " (anonymous callers may only read: send `Authorization: Bearer <key>`)" \
                if principal is ANONYMOUS else ""
            raise AuthorizationError(message=f"this endpoint needs the {self.scope!r} scope; the key "
                                             f"{principal.name!r} holds: {held}{hint}")
        limit_to(principal.corpora)  # the rest of the request sees only the corpora the key may see
        return principal

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:  # pragma: no cover
        return authenticate(request)  # __call__ does the work; HttpBearer requires it


def _principal(request: HttpRequest) -> Principal:
    try:
        principal = authenticate(request)
    except InvalidApiKey as exc:
        raise AuthenticationError(message=str(exc)) from None
    if principal is not None:
        return principal
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        if request.method not in SAFE_METHODS and check_csrf(request) is not None:
            raise AuthorizationError(message="CSRF check failed: a request made with an admin session must send "
                                             "the csrftoken cookie's value in the X-CSRFToken header")
        return Principal(name=f"staff:{user.get_username()}", scopes=frozenset(API_SCOPES))
    if settings.MCP_AUTH_REQUIRED:
        raise AuthenticationError(message="a valid API key is required: send `Authorization: Bearer <key>`")
    return ANONYMOUS


READ, BUILD, ADMIN = ApiKey("read"), ApiKey("build"), ApiKey("admin")


def caller(request: HttpRequest) -> str:
    """Who made the request, for `requested_by` fields."""
    principal = getattr(request, "auth", None)
    return f"api:{principal.name}" if isinstance(principal, Principal) else "api"


SCHEME_DESCRIPTION = ("An API key from the admin or `manage.py mcp_apikey` (or MCP_API_KEY), or an OAuth access "
                      "token for this API (/.well-known/oauth-protected-resource/api/v1/), sent as "
                      "`Authorization: Bearer <key>`. Each operation names the scope it needs in "
                      "`x-docsmcp-scope`: read, build or admin (admin implies every scope).")


def document_security(schema: dict[str, Any], scopes: dict[str, str]) -> dict[str, Any]:
    """Say in the OpenAPI schema which operations need a key, as this server is configured.

    `scopes` maps operationId to the scope the operation needs. Reads may go without a key unless
    MCP_AUTH_REQUIRED: their security lists the empty requirement `{}` first (anonymous is fine) and
    the key second, so a generated client does not insist on an Authorization header it need not send.
    """
    scheme = schema.get("components", {}).get("securitySchemes", {}).get("ApiKey")
    if scheme is not None:
        scheme["description"] = SCHEME_DESCRIPTION
    anonymous_reads = not settings.MCP_AUTH_REQUIRED
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            scope = scopes.get(operation.get("operationId", ""))
            if scope is None:
                continue
            operation["x-docsmcp-scope"] = scope
            if scope in ANONYMOUS.scopes and anonymous_reads:
                operation["security"] = [{}, {"ApiKey": []}]
                note = "No key needed (MCP_AUTH_REQUIRED is false); a key limited to some corpora sees only those."
            else:
                note = f"Needs a key with the `{scope}` scope, or an admin staff session."
            operation["description"] = f"{operation.get('description', '').rstrip()}\n\n{note}".lstrip()
    return schema
