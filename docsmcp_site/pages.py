"""The HTML surface's one table: how an engine or app error that escapes a page (the admin, the insights
and eval pages, sign-in) is answered, instead of a bare 500.

A page that can act on a refusal catches it itself and shows the message where the user is (an admin
action's message, a form error); what escapes is answered here once: a missing thing is the site's 404
page, a refusal is a short page with the error's message and its status (the class's own `status`, or
the REST table's for an engine error: common/api/errors.py), an outage is a 503 with Retry-After. The
REST API, the MCP endpoint and llms.txt answer in their own shapes (common/api/errors.py,
mcp_endpoint/answers.py, mcp_endpoint/text_answers.py).
tests/test_error_tables.py fails for an error class without a line here.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.html import format_html

from common.api.errors import API_PREFIX, status_of
from corpus import errors as app
from evals import errors as evals
from insights import errors as insights
from retrieval import errors as engine

logger = logging.getLogger("docsmcp.pages")


class Page(enum.Enum):
    NOT_FOUND = "the site's 404 page, with the error's message"
    REFUSED = "a page with the error's message and its status"
    UNAVAILABLE = "503 with Retry-After: the index, the database or the task queue is away; retry shortly"


NOT_FOUND, REFUSED, UNAVAILABLE = Page

PAGE_ANSWERS: dict[type[Exception], Page] = {
    # the engine (retrieval/errors.py)
    engine.RetrievalError: REFUSED,
    engine.BuildCancelled: REFUSED,
    engine.ConfigError: REFUSED,
    engine.ContentFixError: REFUSED,
    engine.EmbeddingError: REFUSED,
    engine.EmbeddingMismatch: REFUSED,
    engine.FileTooLarge: REFUSED,
    engine.GitError: REFUSED,
    engine.IndexCorrupt: UNAVAILABLE,
    engine.IndexUnavailable: UNAVAILABLE,
    engine.InvalidArgument: REFUSED,
    engine.InvalidChunkId: REFUSED,
    engine.InvalidCursor: REFUSED,
    engine.InvalidFilter: REFUSED,
    engine.LLMFixError: REFUSED,
    engine.NotFound: NOT_FOUND,
    engine.NotRegularFile: REFUSED,
    engine.SkippedFile: REFUSED,
    engine.StorageUnavailable: REFUSED,
    engine.UnsafeTarget: REFUSED,
    engine.ValidationFailed: REFUSED,
    # the corpus app (corpus/errors.py)
    app.CorpusError: REFUSED,
    app.BuildInProgress: REFUSED,
    app.BuildNotFound: NOT_FOUND,
    app.BuildStateConflict: REFUSED,
    app.CorpusExists: REFUSED,
    app.CorpusNotAllowed: REFUSED,
    app.CorpusNotFound: NOT_FOUND,
    app.DatabaseUnavailable: UNAVAILABLE,
    app.EmbeddingChangeRefused: REFUSED,
    app.FixError: REFUSED,
    app.FixNotFound: NOT_FOUND,
    app.NoActiveBuild: REFUSED,
    app.ProjectNotFound: NOT_FOUND,
    app.ProjectEmbeddingMismatch: REFUSED,
    app.SignatureInvalid: REFUSED,
    app.SourceDirNotAllowed: REFUSED,
    app.TaskQueueUnavailable: UNAVAILABLE,
    app.UnknownVersion: NOT_FOUND,
    app.UnsafeFixTarget: REFUSED,
    # the evals app (evals/errors.py)
    evals.EvalError: REFUSED,
    evals.CaseFormatError: REFUSED,
    evals.RunNotFound: NOT_FOUND,
    evals.RunStateConflict: REFUSED,
    evals.SuiteNotFound: NOT_FOUND,
    evals.TargetError: REFUSED,
    evals.ToolFailed: REFUSED,
    # the insights app (insights/errors.py)
    insights.InsightsError: REFUSED,
    insights.FeedbackNotFound: NOT_FOUND,
    insights.FixUnavailable: REFUSED,
    insights.GapNotFound: NOT_FOUND,
}


def page_for(exc: BaseException) -> Page | None:
    """The table's answer for `exc` (its class's line, else its nearest base's); None for an error no
    layer typed, which Django answers as the fault it is (logged, 500)."""
    for cls in type(exc).__mro__:
        found = PAGE_ANSWERS.get(cls)
        if found is not None:
            return found
    return None


def answer(request: HttpRequest, exc: Exception) -> HttpResponse | None:
    """The page for an error that escaped a view, or None to let Django answer it."""
    found = page_for(exc)
    if found is None:
        return None
    message = str(exc) or type(exc).__name__
    if found is NOT_FOUND:
        raise Http404(message) from exc
    status = 503 if found is UNAVAILABLE else status_of(exc)
    logger.warning("%s %s answered %d: %s: %s", request.method, request.path, status, type(exc).__name__, message)
    response = HttpResponse(format_html("<!doctype html><title>{}</title><h1>{}</h1><p>{}</p>", status,
                                        HttpResponse(status=status).reason_phrase, message), status=status)
    if found is UNAVAILABLE:
        response["Retry-After"] = "5"
    return response


def page_errors(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: answers an engine or app error that escapes a page from PAGE_ANSWERS. The REST API
    and the MCP endpoint answer every error themselves, in their own shapes."""

    def middleware(request: HttpRequest) -> HttpResponse:
        return get_response(request)

    def process_exception(request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if request.path.startswith(API_PREFIX) or request.path.startswith("/mcp"):
            return None
        return answer(request, exc)

    middleware.process_exception = process_exception  # type: ignore[attr-defined]
    return middleware
