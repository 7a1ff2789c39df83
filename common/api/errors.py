"""One error shape for the REST API: `{"error": {"code": ..., "message": ..., "details": {...}}}`.

Every failure under /api/v1/ renders to it: service and engine errors (each carries its HTTP
status), ninja's request validation (422), auth (401/403), unknown routes (404), wrong
methods (405) and unexpected crashes (500, logged, no traceback in the body).

The REST surface's table is `status_of`: an engine or floor error's status is its line in `STATUS` (the
engine is plain Python and knows no HTTP), an app's error carries its own `status` (the datasette shape:
corpus/errors.py, evals/errors.py, insights/errors.py), and the code is the class in snake_case.
tests/test_error_tables.py fails for an engine class without a line here or an app class that does not
declare its status itself. `install(api, service_errors)` registers the exception handlers; the site
names the apps' error bases, so the floor imports no app.
`api_error_shape` is a middleware that reshapes the few answers Django or ninja produce outside
those handlers (URL resolver 404, 405, 413, ...).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, Throttled, ValidationError

from common.callers import bearer_challenge, scope_challenge
from common.errors import AuthUnavailable, CallerError, InsufficientScope, InvalidApiKey
from retrieval import errors as engine

if TYPE_CHECKING:
    from ninja import NinjaAPI

log = logging.getLogger("docsmcp.api")
API_PREFIX = "/api/v1/"

# Engine and floor errors have no HTTP status of their own; the apps' do (`CorpusError.status`). Every
# class is named, so a new one is answered by decision (tests/test_error_tables.py).
STATUS: dict[type[Exception], int] = {
    engine.RetrievalError: 400,
    engine.InvalidArgument: 400,
    engine.InvalidFilter: 400,
    engine.InvalidCursor: 400,
    engine.InvalidChunkId: 400,
    engine.ConfigError: 400,
    engine.ValidationFailed: 422,
    engine.NotFound: 404,
    engine.EmbeddingMismatch: 409,
    engine.BuildCancelled: 409,
    engine.IndexUnavailable: 503,
    engine.IndexCorrupt: 503,
    engine.StorageUnavailable: 400,  # the root named for the build does not exist: change it
    engine.EmbeddingError: 502,
    engine.UnsafeTarget: 400,
    engine.ContentFixError: 400,
    engine.LLMFixError: 400,
    engine.GitError: 400,
    engine.SkippedFile: 400,
    engine.NotRegularFile: 400,
    engine.FileTooLarge: 400,
    CallerError: 401,
    InvalidApiKey: 401,  # the auth class answers it first, with its challenge
    InsufficientScope: 403,  # its handler adds the insufficient_scope challenge
    AuthUnavailable: 503,  # its handler adds Retry-After
}

# Codes of generic statuses (used for HttpError, Django's own answers and base classes).
STATUS_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type", 422: "validation_error",
    429: "rate_limited", 500: "internal_error", 502: "bad_gateway", 503: "service_unavailable",
}
OBJECT_EXPECTED = {"model_attributes_type", "model_type", "dict_type"}


ERROR_SCHEMA = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object",
        "required": ["code", "message", "details"],
        "properties": {
            "code": {"type": "string", "description": "Stable, machine-readable, e.g. corpus_not_found."},
            "message": {"type": "string", "description": "What went wrong and what to change."},
            "details": {"type": "object", "description": "Extra data, e.g. `errors` for a 422."},
        },
    }},
}


def document_errors(schema: dict) -> dict:
    """Add the error shape to an OpenAPI schema: a 4XX and a 5XX answer on every operation."""
    schema.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            responses.setdefault("4XX", {"description": "The request was refused; see error.message.",
                                         "content": content})
            responses.setdefault("5XX", {"description": "The server failed or the index is unavailable.",
                                         "content": content})
    return schema


def error_body(code: str, message: str, details: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(status: int, code: str, message: str, details: dict | None = None) -> JsonResponse:
    return JsonResponse(error_body(code, message, details), status=status)


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def status_of(exc: Exception) -> int:
    """The HTTP status of an app's error (its own `status`) or an engine error (the most specific class wins)."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return status
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 400


def code_of(exc: Exception, status: int, generic: tuple[type[Exception], ...] = ()) -> str:
    """A stable machine-readable code: the error class in snake_case (`build_in_progress`); a base
    class raised as such (`generic`) is named by its status instead."""
    if type(exc) in (engine.RetrievalError, *generic):
        return STATUS_CODES.get(status, "error")
    return snake_case(type(exc).__name__)


def validation_details(errors: list[dict]) -> tuple[str, dict]:
    """ninja's validation errors as a readable message plus the per-field list."""
    items = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        # ninja prefixes the source and the parameter name: ("body", "payload", "name")
        location = loc[0] if loc else ""
        field = ".".join(loc[2:] if location == "body" else loc[1:])
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        items.append({"field": field, "location": location, "message": message,
                      "type": error.get("type", "")})
    parts = []
    for item in items:
        message = item["message"]
        if item["type"] == "extra_forbidden":
            message = "unknown field; remove it (see the schema at /api/v1/openapi.json)"
        elif item["location"] == "body" and not item["field"] and item["type"] == "missing":
            message = "send a JSON object"
        elif item["location"] == "body" and not item["field"] and item["type"] in OBJECT_EXPECTED:
            message = f"must be a JSON object ({message})"
        if item["type"] == "value_error" and ": " in message:  # model-level checks name the field themselves
            parts.append(message)
        else:
            parts.append(f"{item['field'] or 'request ' + item['location']}: {message}")
    return "invalid request: " + "; ".join(parts), {"errors": items}


def install(api: NinjaAPI, service_errors: tuple[type[Exception], ...] = (),
            named_bases: tuple[type[Exception], ...] = ()) -> None:
    """Replace ninja's default handlers so every error renders to the one shape.

    `service_errors` are the apps' error bases; every class under them carries its HTTP status. A base
    raised as such is coded by its status (`bad_request`), except one of `named_bases`, coded by its
    name like any other class (`insights_error`, as it was when insights errors were corpus errors).
    """

    def respond(request: HttpRequest, status: int, code: str, message: str, details: dict | None = None):
        return api.create_response(request, error_body(code, message, details), status=status)

    def known_error(request: HttpRequest, exc: Exception):
        status = status_of(exc)
        details = {}
        if isinstance(exc, engine.ValidationFailed):
            details["findings"] = [f.as_dict() if hasattr(f, "as_dict") else f for f in exc.findings]
        generic = tuple(base for base in service_errors if base not in named_bases)
        return respond(request, status, code_of(exc, status, generic), str(exc), details)

    for base in (engine.RetrievalError, *service_errors):
        api.add_exception_handler(base, known_error)

    @api.exception_handler(AuthUnavailable)
    def key_unchecked(request: HttpRequest, exc: AuthUnavailable):
        response = respond(request, 503, "database_unavailable", f"{exc}; retry shortly")
        response["Retry-After"] = "5"
        return response

    @api.exception_handler(ValidationError)
    def request_invalid(request: HttpRequest, exc: ValidationError):
        message, details = validation_details(list(exc.errors))
        return respond(request, 422, "validation_error", message, details)

    @api.exception_handler(AuthenticationError)
    def unauthenticated(request: HttpRequest, exc: AuthenticationError):
        message = exc.message if exc.message != "Unauthorized" else (
            "a valid API key is required: send `Authorization: Bearer <key>`")
        response = respond(request, 401, "unauthorized", message)
        response["WWW-Authenticate"] = bearer_challenge(request, "invalid_token" if request.headers.get(
            "Authorization") else None)
        return response

    @api.exception_handler(AuthorizationError)
    def forbidden(request: HttpRequest, exc: AuthorizationError):
        return respond(request, 403, "forbidden", exc.message)

    @api.exception_handler(InsufficientScope)
    def scope_missing(request: HttpRequest, exc: InsufficientScope):
        response = respond(request, 403, "forbidden", f"{exc}; sign in again for it")
        response["WWW-Authenticate"] = scope_challenge(request, exc)
        return response

    @api.exception_handler(Throttled)
    def throttled(request: HttpRequest, exc: Throttled):
        return respond(request, 429, "rate_limited", exc.message, {"retry_after": exc.wait})

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError):
        message = exc.message
        if message == "Cannot parse request body":
            message = "the request body is not valid JSON; send a JSON object with Content-Type: application/json"
        return respond(request, exc.status_code, STATUS_CODES.get(exc.status_code, "error"), message)

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404):
        return respond(request, 404, "not_found", str(exc) or f"no such resource: {request.path}")

    @api.exception_handler(RequestDataTooBig)
    def too_big(request: HttpRequest, exc: RequestDataTooBig):
        return respond(request, 413, "payload_too_large",
                       f"the request body exceeds {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")

    @api.exception_handler(SuspiciousOperation)
    def suspicious(request: HttpRequest, exc: SuspiciousOperation):
        return respond(request, 400, "bad_request", "the request was refused as malformed")

    @api.exception_handler(DatabaseError)
    def database_down(request: HttpRequest, exc: DatabaseError):
        log.warning("database unavailable on %s %s: %s", request.method, request.path, exc)
        response = respond(request, 503, "database_unavailable",
                           "the database cannot be reached right now; retry shortly (searches and chunk "
                           "reads of a corpus this server has served keep working)")
        response["Retry-After"] = "5"
        return response

    @api.exception_handler(Exception)
    def crashed(request: HttpRequest, exc: Exception):
        log.exception("unhandled error on %s %s", request.method, request.path)
        return respond(request, 500, "internal_error",
                       "the server failed to answer this request; the error is in the server log")


def _reshaped(response: HttpResponse, request: HttpRequest) -> HttpResponse:
    status = response.status_code
    code = STATUS_CODES.get(status, "error")
    if status == 404:
        message = f"no API route matches {request.method} {request.path}; see /api/v1/docs for the routes"
    elif status == 405:
        allowed = response.get("Allow", "")
        message = f"method {request.method} is not allowed on {request.path}; use {allowed or 'another method'}"
    else:
        text = response.content.decode("utf-8", "replace").strip() if not response.streaming else ""
        message = text if text and len(text) < 300 and "<" not in text else (response.reason_phrase or code)
    reshaped = error_response(status, code, message)
    for header in ("Allow", "WWW-Authenticate", "Retry-After"):
        if header in response:
            reshaped[header] = response[header]
    return reshaped


def _is_error_shaped(response: HttpResponse) -> bool:
    if response.streaming or not response.get("Content-Type", "").startswith("application/json"):
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get("error"), dict)


def api_error_shape(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], Any]:
    """Middleware: an error answered under /api/v1/ by Django or ninja itself gets the API's shape."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX) and "\x00" in request.path:
            return error_response(400, "bad_request", "the URL path contains a NUL (%00) character; remove it")
        response = get_response(request)
        if request.path.startswith(API_PREFIX) and response.status_code >= 400 and not _is_error_shaped(response):
            return _reshaped(response, request)
        return response

    return middleware
