"""The plain-text surface's one table: how every error that can reach an llms.txt file (llms.txt,
llms-full.txt, a page's .md) is answered, in plain text with a status, never a 500 page.

The MCP endpoint answers in JSON-RPC (answers.py), the REST API in its JSON shape (common/api/errors.py)
and the site's pages in HTML (docsmcp_site/pages.py); an agent that reads the web gets a line of text
here. A corpus the caller may not see is answered as one that does not exist, naming no corpus; an
outage is a 503 with Retry-After. `TEXT_ANSWERS` names every engine, caller and corpus error on
purpose: tests/test_error_tables.py fails for a class added without a line here. An error no layer
typed is left to Django (logged, 500).
"""

from __future__ import annotations

import enum
import logging

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from common import errors as caller
from common.callers import bearer_challenge, scope_challenge
from corpus import errors as app
from mcp_endpoint import errors as endpoint
from retrieval import errors as engine

logger = logging.getLogger("docsmcp.mcp")

TEXT = "text/plain; charset=utf-8"
NOT_FOUND_TEXT = "Not found: no corpus of that name is served here.\n"
UNAUTHORIZED_TEXT = ("Unauthorized: send `Authorization: Bearer <key>` with a key that has the read scope, or an "
                     "OAuth access token for this server.\n")
UNAVAILABLE_TEXT = "Service unavailable: the index or the database cannot be read right now; retry shortly.\n"


class Text(enum.Enum):
    REFUSED = "the Refusal as raised: its status, its text and its headers"
    INVALID_KEY = "401 with a bearer challenge naming invalid_token: a garbled key never reads as anonymous"
    UNAUTHORIZED = "401 with a bearer challenge"
    SCOPE = "403 with an insufficient_scope challenge, so the holder can sign in again for the scope"
    NOT_FOUND = "404 naming no corpus: one the caller may not see reads as one that does not exist"
    VERSIONS = "404 in the error's words: the corpus is one the caller may see, so its versions are named"
    BAD_REQUEST = "400: 'Bad request: ' and the error's words"
    UNAVAILABLE = "503 with Retry-After, logged: the index, the database or the key check is away"
    OWN = "the error's words with its class's status (an engine error's: 400); a 5xx is answered 503"


REFUSED, INVALID_KEY, UNAUTHORIZED, SCOPE, NOT_FOUND, VERSIONS, BAD_REQUEST, UNAVAILABLE, OWN = Text

TEXT_ANSWERS: dict[type[BaseException], Text] = {
    # the engine (retrieval/errors.py)
    engine.RetrievalError: OWN,
    engine.ConfigError: OWN,
    engine.ValidationFailed: OWN,
    engine.EmbeddingError: OWN,
    engine.EmbeddingMismatch: OWN,
    engine.IndexUnavailable: UNAVAILABLE,
    engine.IndexCorrupt: UNAVAILABLE,
    engine.StorageUnavailable: OWN,
    engine.InvalidArgument: BAD_REQUEST,
    engine.InvalidFilter: BAD_REQUEST,
    engine.InvalidCursor: BAD_REQUEST,
    engine.InvalidChunkId: BAD_REQUEST,
    engine.NotFound: NOT_FOUND,
    engine.BuildCancelled: OWN,
    engine.UnsafeTarget: OWN,
    engine.ContentFixError: OWN,
    engine.LLMFixError: OWN,
    engine.GitError: OWN,
    engine.SkippedFile: OWN,
    engine.NotRegularFile: OWN,
    engine.FileTooLarge: OWN,
    # the caller (common/errors.py)
    caller.CallerError: UNAUTHORIZED,
    caller.InvalidApiKey: INVALID_KEY,
    caller.InsufficientScope: SCOPE,
    caller.AuthUnavailable: UNAVAILABLE,
    # the corpus app (corpus/errors.py): its own words and status, but a missing corpus names none
    app.CorpusError: OWN,
    app.CorpusNotFound: NOT_FOUND,
    app.ProjectNotFound: NOT_FOUND,
    app.UnknownVersion: VERSIONS,
    app.ProjectEmbeddingMismatch: OWN,
    app.CorpusNotAllowed: OWN,
    app.CorpusExists: OWN,
    app.NoActiveBuild: OWN,  # e.g. a corpus that has no active build yet: 409 in its words
    app.DatabaseUnavailable: OWN,  # says what cached state it could not stand in for
    app.BuildInProgress: OWN,
    app.BuildNotFound: OWN,
    app.BuildStateConflict: OWN,
    app.SourceDirNotAllowed: OWN,
    app.FixError: OWN,
    app.UnsafeFixTarget: OWN,
    app.FixNotFound: OWN,
    app.EmbeddingChangeRefused: OWN,
    app.TaskQueueUnavailable: OWN,
    app.SignatureInvalid: OWN,
    # the endpoint: llms.txt's own refusals (method, Origin, scope, rate limit)
    endpoint.Refusal: REFUSED,
    # what is nobody's type
    DatabaseError: UNAVAILABLE,
}


def text_for(exc: BaseException) -> Text | None:
    """The table's answer for `exc` (its class's line, else its nearest base's); None for an error no
    layer typed, which Django answers as the fault it is."""
    for cls in type(exc).__mro__:
        found = TEXT_ANSWERS.get(cls)
        if found is not None:
            return found
    return None


def _text(body: str, status: int) -> HttpResponse:
    return HttpResponse(body, status=status, content_type=TEXT)


def answer(request: HttpRequest, exc: Exception, what: str) -> HttpResponse | None:
    """The plain-text response for an error met while serving `what` (the corpus asked for), or None to
    let Django answer it."""
    found = text_for(exc)
    if found is None:
        return None
    if found is REFUSED:
        assert isinstance(exc, endpoint.Refusal)
        response = _text(str(exc), exc.status)
        for name, value in exc.headers.items():
            response[name] = value
        return response
    if found is INVALID_KEY:
        response = _text(UNAUTHORIZED_TEXT, 401)
        response["WWW-Authenticate"] = bearer_challenge(request, "invalid_token")
        return response
    if found is UNAUTHORIZED:
        response = _text(UNAUTHORIZED_TEXT, 401)
        response["WWW-Authenticate"] = bearer_challenge(request)
        return response
    if found is SCOPE:
        assert isinstance(exc, caller.InsufficientScope)
        response = _text(f"Forbidden: {exc}.\n", 403)
        response["WWW-Authenticate"] = scope_challenge(request, exc)
        return response
    if found is NOT_FOUND:
        return _text(NOT_FOUND_TEXT, 404)
    if found is VERSIONS:
        return _text(f"Not found: {exc}.\n", 404)
    if found is BAD_REQUEST:
        return _text(f"Bad request: {exc}\n", 400)
    if found is UNAVAILABLE:
        logger.warning("llms.txt for %s unavailable: %s", what, exc)
        response = _text(UNAVAILABLE_TEXT, 503)
        response["Retry-After"] = "5"
        return response
    status = getattr(exc, "status", 400)
    return _text(f"{exc}\n", status if status < 500 else 503)
