"""The MCP endpoint: one Django view speaking stateless Streamable HTTP for every protocol era.

A POST carries one JSON-RPC message (or, at 2025-03-26 only, a batch). Requests get one JSON
response; notifications and client responses get 202 with no body. No session is kept or
minted, so any worker can answer any request. GET/DELETE (the session stream and session
teardown of the handshake era) answer 405.

Order of checks, cheapest refusal first: HTTP method, profile, Origin (403), API key (401),
rate limit (429), Content-Type (415), Accept (406), body size (413), then JSON-RPC. A tools/call whose
OAuth token lacks the tool's scope is answered 403 with an `insufficient_scope` challenge. Every
typed error raised below is put on the wire here, once; anything unexpected is logged with
its traceback and answered -32603 without one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from common.callers import Principal, bearer_challenge, scope_challenge
from common.errors import InsufficientScope, InvalidApiKey
from corpus.access import limited_to
from corpus.apikeys import authenticate
from mcp_endpoint import answers, jsonrpc, profiles, protocol, ratelimit, security, versions
from mcp_endpoint import headers as mcp_headers
from mcp_endpoint.calls import answer, client_info
from mcp_endpoint.errors import BodyTooLarge
from mcp_endpoint.jsonrpc import (
    INVALID_REQUEST,
    SERVER_ERROR,
    InvalidRequest,
    JsonRpcError,
    Notification,
    Response,
)
from mcp_endpoint.jsontext import compact
from mcp_endpoint.profiles import registry
from mcp_endpoint.request_body import body_limit, read_body

logger = logging.getLogger("docsmcp.mcp")

# 2026-07-28: the HTTP status that goes with each JSON-RPC error code (spec: 400 for envelope,
# header and version failures, 404 for an unknown method).
MODERN_ERROR_STATUS = {
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.INVALID_PARAMS: 400,
    jsonrpc.HEADER_MISMATCH: 400,
    jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
    jsonrpc.INTERNAL_ERROR: 500,
}
# Handshake era: JSON-RPC errors ride on 200, except a body that is not a usable message at all.
LEGACY_ERROR_STATUS = {jsonrpc.PARSE_ERROR: 400, jsonrpc.INVALID_REQUEST: 400}




@dataclass(frozen=True)
class Endpoint:
    """Who is asking which profile for what: the part of a request every message shares."""

    request: HttpRequest
    profile_name: str
    profile: profiles.Profile
    corpus: str | None
    principal: Principal | None
    rate_identity: str = ""

    def context(self, version: str | None, client_info: dict[str, Any] | None = None) -> profiles.Context:
        return profiles.Context(
            request=self.request,
            profile=self.profile_name,
            corpus=self.corpus,
            principal=self.principal,
            protocol_version=version,
            client_info=client_info,
        )


def _json(payload: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(compact(payload), status=status, content_type="application/json")


def _accepted() -> HttpResponse:
    return HttpResponse(status=202)


@csrf_exempt
def mcp_view(request: HttpRequest, profile: str | None = None, corpus: str | None = None) -> HttpResponse:
    if profile is None:
        # /mcp and /mcp/ serve DOCSMCP_DEFAULT_PROFILE; /mcp/c/<corpus>/ is always the docs profile.
        profile = profiles.DEFAULT_PROFILE if corpus else settings.DOCSMCP_DEFAULT_PROFILE
    try:
        response = _serve(request, profile, corpus)
    except Exception as exc:  # answers.request_failure logs it: a 503 database outage, else a 500 fault
        status, error = answers.request_failure(exc)
        response = _json(jsonrpc.error_body(error.code, error.message), status=status)
        if status == 503:
            response["Retry-After"] = "5"
    for name, value in security.cors_headers(request).items():
        response[name] = value
    return response


def _serve(request: HttpRequest, profile_name: str, corpus: str | None) -> HttpResponse:
    if request.method == "OPTIONS":
        return security.preflight(request)
    if request.method != "POST":
        response = _json(
            jsonrpc.error_body(INVALID_REQUEST, "Method Not Allowed: send JSON-RPC messages with POST"), 405
        )
        response["Allow"] = "POST"
        return response
    if corpus is not None and jsonrpc.find_bad_text(corpus, "corpus") is not None:
        return _json(jsonrpc.error_body(INVALID_REQUEST, "Unknown corpus: the name in the URL holds a NUL "
                                        "or invalid character"), 404)
    try:
        profile = registry.get_profile(profile_name)
    except profiles.UnknownProfile:
        names = ", ".join(registry.profile_names())
        return JsonResponse(
            {"detail": f"Unknown MCP profile '{profile_name}'. Available: {names}."}, status=404
        )
    if not security.origin_allowed(request.headers.get("Origin")):
        return security.forbidden_origin()

    try:
        principal = authenticate(request)
    except InvalidApiKey as exc:  # a garbled key never falls back to the anonymous caller
        return _unauthorized(profile_name, f"Unauthorized: {exc}", bearer_challenge(request, "invalid_token"))
    if principal is None and settings.MCP_AUTH_REQUIRED:
        return _unauthorized(profile_name, NO_KEY, bearer_challenge(request))

    identity = principal.rate_limit_identity if principal else f"ip:{security.client_ip(request)}"
    refusal = _rate_limited(identity, 1)
    if refusal is not None:
        return refusal

    if not security.is_json_content_type(request):
        return _json(
            jsonrpc.error_body(
                INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"
            ),
            415,
        )
    if not security.accepts_json(request):
        return _json(
            jsonrpc.error_body(
                INVALID_REQUEST, "Not Acceptable: the Accept header must allow application/json"
            ),
            406,
        )
    limit = body_limit(profile)
    if principal is None:  # larger bodies (citeloom's store_chunks) are for keys that may write them
        limit = min(limit, settings.MCP_MAX_BODY_BYTES)
    try:
        raw = read_body(request, limit)
    except BodyTooLarge:
        return _json(
            jsonrpc.error_body(INVALID_REQUEST, f"Payload Too Large: the body exceeds {limit} bytes"), 413
        )

    endpoint = Endpoint(request, profile_name, profile, corpus, principal, identity)
    try:
        with limited_to(principal.corpora if principal else None):
            profile.check_context(endpoint.context(None))
            return _handle_payload(endpoint, raw)
    except profiles.UnknownCorpus as exc:
        return _json(jsonrpc.error_body(INVALID_REQUEST, str(exc) or f"Unknown corpus '{corpus}'"), 404)
    except InsufficientScope as exc:  # MCP authorization: step-up, so the client can ask for the scope
        response = _json(jsonrpc.error_body(SERVER_ERROR, f"Forbidden: {exc}; sign in again for it"), 403)
        response["WWW-Authenticate"] = scope_challenge(request, exc)
        return response


# Profiles whose contract fixes the body of a 401 (docs/contracts/techdoc-tools.md); the others answer
# in the protocol's error shape, saying what is missing or wrong.
DETAIL_401_PROFILES = frozenset({"techdoc"})
NO_KEY = ("Unauthorized: this server requires an API key; send the header `Authorization: Bearer <key>` "
          "(create a key with `manage.py mcp_apikey create NAME` or in the admin under API keys)")


def _unauthorized(profile_name: str, message: str, challenge: str) -> HttpResponse:
    if profile_name in DETAIL_401_PROFILES:
        response = JsonResponse({"detail": "Invalid API key"}, status=401)
    else:
        response = _json(jsonrpc.error_body(SERVER_ERROR, message), 401)
    response["WWW-Authenticate"] = challenge
    return response


def _rate_limited(identity: str, calls: int) -> HttpResponse | None:
    """Count `calls` requests for `identity`; a 429 response when that goes past the limit."""
    decision = ratelimit.hit(identity, cost=calls)
    if decision.allowed:
        return None
    message = (
        f"Rate limit exceeded: {decision.limit} requests per minute (each call in a batch counts). "
        f"Retry after {decision.retry_after} seconds."
    )
    response = _json(jsonrpc.error_body(SERVER_ERROR, message, {"retryAfter": decision.retry_after}), 429)
    response["Retry-After"] = str(decision.retry_after)
    return response


def _handle_payload(endpoint: Endpoint, raw: bytes) -> HttpResponse:
    version_header = mcp_headers.header(endpoint.request.headers, mcp_headers.PROTOCOL_VERSION_HEADER)
    try:
        body = jsonrpc.parse_body(raw)
    except JsonRpcError as exc:
        return _json(jsonrpc.failure(None, exc), 400)

    if version_header in versions.HANDSHAKE_VERSIONS:
        return _handle_legacy(endpoint, body, version_header)
    if version_header in versions.MODERN_VERSIONS or mcp_headers.has_modern_meta(body):
        return _handle_modern(endpoint, body, version_header)
    if version_header is not None:
        # Neither era's version: tell the client every version it could use instead.
        error = mcp_headers.unsupported(version_header, versions.SUPPORTED_VERSIONS)
        return _json(jsonrpc.failure(_request_id(body), error), 400)
    return _handle_legacy(endpoint, body, None)


# --- handshake era (2025-03-26 .. 2025-11-25) ------------------------------------------------


def _request_id(body: Any) -> jsonrpc.RequestId | None:
    raw = body.get("id") if isinstance(body, dict) else None
    return raw if isinstance(raw, str) or (isinstance(raw, int) and not isinstance(raw, bool)) else None


def _handle_legacy(endpoint: Endpoint, body: Any, version_header: str | None) -> HttpResponse:
    version = version_header or versions.DEFAULT_VERSION
    if isinstance(body, list):
        if version not in versions.BATCH_VERSIONS:
            error = InvalidRequest(
                f"Invalid Request: JSON-RPC batches are not supported in protocol version {version}"
            )
            return _json(jsonrpc.failure(None, error), 400)
        if not body:
            return _json(jsonrpc.failure(None, InvalidRequest("Invalid Request: empty batch")), 400)
        return _handle_batch(endpoint, body, version)
    reply = _legacy_message(endpoint, body, version, batch=False)
    if reply is None:
        return _accepted()
    status = LEGACY_ERROR_STATUS.get(reply["error"]["code"], 200) if "error" in reply else 200
    return _json(reply, status)


def _handle_batch(endpoint: Endpoint, body: list[Any], version: str) -> HttpResponse:
    """A 2025-03-26 batch: at most MCP_MAX_BATCH messages, each counted by the rate limit, and
    replies bounded by MCP_MAX_BATCH_RESPONSE_BYTES (calls past it get an error, never silence)."""
    limit = settings.MCP_MAX_BATCH
    if len(body) > limit:
        error = InvalidRequest(
            f"Invalid Request: the batch holds {len(body)} messages; at most {limit} are accepted "
            "(MCP_MAX_BATCH). Send fewer messages per batch.",
            data={"maxBatch": limit, "received": len(body)},
        )
        return _json(jsonrpc.failure(None, error), 400)
    if len(body) > 1:
        refusal = _rate_limited(endpoint.rate_identity, len(body) - 1)  # the request itself counted one
        if refusal is not None:
            return refusal
    budget = settings.MCP_MAX_BATCH_RESPONSE_BYTES
    used, exhausted = 0, False
    replies: list[bytes] = []
    for item in body:
        if exhausted:
            reply = _budget_exhausted(item, budget, ran=False)
        else:
            reply = _legacy_message(endpoint, item, version, batch=True)
        if reply is None:
            continue
        encoded = compact(reply)
        if not exhausted and replies and used + len(encoded) > budget:
            encoded, exhausted = compact(_budget_exhausted(item, budget, ran=True)), True
        used += len(encoded)
        exhausted = exhausted or used >= budget
        replies.append(encoded)
    if not replies:
        return _accepted()
    return HttpResponse(b"[" + b",".join(replies) + b"]", content_type="application/json")


def _budget_exhausted(item: Any, budget: int, ran: bool) -> dict[str, Any] | None:
    """The reply for a batch call that the response budget left no room for (None for a notification).

    Says whether the call ran (its reply was dropped) or was skipped, so a client does not repeat a write.
    """
    if isinstance(item, dict) and "id" not in item:
        return None
    outcome = "it ran, but its reply was dropped" if ran else "it was not run"
    error = jsonrpc.ServerError(
        f"Response budget exhausted: this batch's replies reached {budget} bytes "
        f"(MCP_MAX_BATCH_RESPONSE_BYTES) before this call's reply fit; {outcome}. "
        "Send fewer calls per batch, or send this one again on its own.",
        data={"budgetBytes": budget, "ran": ran},
    )
    return jsonrpc.failure(_request_id(item), error)


def _legacy_message(endpoint: Endpoint, obj: Any, version: str, batch: bool) -> dict[str, Any] | None:
    try:
        message = jsonrpc.classify(obj)
    except JsonRpcError as exc:
        return jsonrpc.failure(exc.request_id, exc)
    if isinstance(message, Notification | Response):
        return None
    if batch and message.method == "initialize":
        return jsonrpc.failure(
            message.id, InvalidRequest("Invalid Request: initialize must not be part of a batch")
        )
    call = protocol.Call(
        method=message.method,
        params=dict(message.params or {}),
        context=endpoint.context(version, client_info(message)),
        profile=endpoint.profile,
        modern=False,
    )
    return answer(call, message.id)


# --- 2026-07-28 ------------------------------------------------------------------------------


def _modern_reply(reply: dict[str, Any]) -> HttpResponse:
    status = MODERN_ERROR_STATUS.get(reply["error"]["code"], 400) if "error" in reply else 200
    return _json(reply, status)


def _handle_modern(endpoint: Endpoint, body: Any, version_header: str | None) -> HttpResponse:
    if not isinstance(body, dict):
        error = InvalidRequest(
            "Invalid Request: the body must be a single JSON-RPC request or notification object"
        )
        return _modern_reply(jsonrpc.failure(None, error))
    try:
        message = jsonrpc.classify(body)
    except JsonRpcError as exc:
        return _modern_reply(jsonrpc.failure(exc.request_id, exc))
    if isinstance(message, Response):
        error = InvalidRequest("Invalid Request: clients must not send JSON-RPC responses at 2026-07-28")
        return _modern_reply(jsonrpc.failure(message.id, error))
    if isinstance(message, Notification):
        # No client-to-server notification means anything statelessly; acknowledge what we serve.
        if version_header not in versions.MODERN_VERSIONS:
            return _modern_reply(
                jsonrpc.failure(None, mcp_headers.unsupported(version_header, versions.MODERN_VERSIONS))
            )
        return _accepted()
    try:
        envelope = mcp_headers.check_request(
            message.method, message.params, endpoint.request.headers, versions.MODERN_VERSIONS
        )
    except JsonRpcError as exc:
        return _modern_reply(jsonrpc.failure(message.id, exc))
    params = dict(message.params or {})
    params.pop("_meta", None)
    call = protocol.Call(
        method=message.method,
        params=params,
        context=endpoint.context(envelope.protocol_version, envelope.client_info),
        profile=endpoint.profile,
        modern=True,
    )
    return _modern_reply(answer(call, message.id))
