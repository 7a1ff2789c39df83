"""Pagination and request-schema conventions shared by every REST router.

Every list takes `limit` (1-200, default 50) and `offset` (>= 0) and answers
`{items, total, limit, offset, has_more}`. Request bodies forbid unknown fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from django.db.models import QuerySet
from ninja import Field, Schema
from pydantic import ConfigDict, model_validator

T = TypeVar("T")
MAX_LIMIT = 200
DEFAULT_LIMIT = 50


def unstorable_text(value: object, where: str = "") -> str | None:
    """Why a request value cannot be stored or searched (NUL or lone surrogates), or None.

    PostgreSQL refuses NUL in text and in JSON, and no database driver encodes a lone surrogate;
    refused here, such input is a 422 instead of a failed query.
    """
    if isinstance(value, str):
        if "\x00" in value:
            return f"{where or 'value'}: text must not contain NUL (\\u0000) characters"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where or 'value'}: text must be valid Unicode (no lone surrogates)"
    elif isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            problem = unstorable_text(key, path) or unstorable_text(item, path)
            if problem:
                return problem
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            problem = unstorable_text(item, f"{where}[{n}]")
            if problem:
                return problem
    return None


class Input(Schema):
    """Base of request schemas: an unknown field is a 422, not silently ignored; so is unstorable text."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _storable_text(cls, data):
        problem = unstorable_text(data) if isinstance(data, dict) else None
        if problem:
            raise ValueError(problem)
        return data


class PageParams(Input):
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Page size, 1-200.")
    offset: int = Field(0, ge=0, le=2**31 - 1, description="Items to skip.")


class Page(Schema, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int
    has_more: bool


def paginate(items: QuerySet | Sequence, page: PageParams, serialize: Callable | None = None) -> dict:
    """One page of a queryset (counted and sliced in the database) or of a list."""
    total = items.count() if isinstance(items, QuerySet) else len(items)
    chunk = list(items[page.offset:page.offset + page.limit])
    return {
        "items": [serialize(item) for item in chunk] if serialize else chunk,
        "total": total,
        "limit": page.limit,
        "offset": page.offset,
        "has_more": page.offset + len(chunk) < total,
    }
