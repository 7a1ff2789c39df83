"""Which corpora the current caller may see: an API key limited to some corpora sees only those.

The limit lives in a context variable, set once per request by the edge that authenticated the
caller (the MCP transport, the REST API's auth), so every read below it (selectors, chunk-store
projects, eval runs) filters the same way without each call site passing the key around. A
corpus outside the limit is reported as not found, never as forbidden, so a key cannot learn
what else exists. `request_scope` (middleware) gives every request a fresh, unlimited start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.db.models import QuerySet
    from django.http import HttpRequest, HttpResponse

_limit: ContextVar[frozenset[str] | None] = ContextVar("docsmcp_corpus_limit", default=None)


def limit_to(names: Iterable[str] | None) -> None:
    """Limit the rest of this request to `names` (None or empty: every corpus)."""
    _limit.set(frozenset(names) if names else None)


@contextmanager
def limited_to(names: Iterable[str] | None) -> Iterator[None]:
    token = _limit.set(frozenset(names) if names else None)
    try:
        yield
    finally:
        _limit.reset(token)


def limited() -> bool:
    """Whether the current caller's key is limited to some corpora."""
    return _limit.get() is not None


def visible(name: str) -> bool:
    """A key limited to a corpus sees every version of it (`<corpus>@<version>`)."""
    limit = _limit.get()
    return limit is None or name in limit or name.partition("@")[0] in limit


def visible_only(queryset: QuerySet, field: str = "name") -> QuerySet:
    """`queryset` narrowed to the corpora the caller may see (`field` names the corpus name)."""
    from django.db.models import Q

    limit = _limit.get()
    if limit is None:
        return queryset
    versions = Q()
    for name in sorted(limit):
        versions |= Q(**{f"{field}__startswith": f"{name}@"})
    return queryset.filter(Q(**{f"{field}__in": sorted(limit)}) | versions)


def request_scope(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: no limit carries over from an earlier request served by the same thread."""

    def middleware(request: HttpRequest) -> HttpResponse:
        with limited_to(None):
            return get_response(request)

    return middleware
