"""Every request gets an ID, and every 5xx is logged with it (and its traceback), whatever DEBUG is.

Django logs a 5xx on the `django.request` logger, but its default handlers write it only when DEBUG is
on (or mail it to ADMINS): with DEBUG off a server error reached no log at all. LOGGING gives that
logger the console handler, and `RequestIdFilter` ends every line logged while a request is served
with the request's ID, so the ID a client reports (the `X-Request-ID` response header) finds the
traceback and whatever else was logged for it. A proxy's `X-Request-ID`
is kept when it looks like one, so its log and ours name the same request.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
_WELL_FORMED = re.compile(r"[A-Za-z0-9._:-]{8,64}")
# The ID of the request this thread is serving ("" between requests).
_current: ContextVar[str] = ContextVar("request_id", default="")


def request_id(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware (first in MIDDLEWARE): names each request and says its name in the response."""

    def middleware(request: HttpRequest) -> HttpResponse:
        given = request.headers.get(HEADER, "")
        request.request_id = given if _WELL_FORMED.fullmatch(given) else uuid.uuid4().hex
        token = _current.set(request.request_id)
        try:
            response = get_response(request)
        finally:
            _current.reset(token)
        response[HEADER] = request.request_id
        return response

    return middleware


class RequestIdFilter(logging.Filter):
    """Sets `request_suffix` on every record: " [request ID]" when it was logged for a request, else ""."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = getattr(getattr(record, "request", None), "request_id", None) or _current.get()
        record.request_suffix = f" [request {found}]" if found else ""
        return True
