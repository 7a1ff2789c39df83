"""Reading an index's files: a failure of the storage layer becomes a typed error that says to rebuild.

LanceDB and Arrow report a damaged file as whatever their Rust or C++ side raised (RuntimeError
"lance error: ...", ValueError "not a Lance file", ArrowInvalid, OSError); left as they are, a
search or a get_doc on a damaged index ends as a generic internal error. Functions that read an
index's tables are wrapped with `reads_index`, so those errors reach the surfaces as IndexCorrupt
(files present but unreadable) or IndexUnavailable (files could not be reached), both naming the
corpus and how to rebuild it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from retrieval.errors import IndexCorrupt, IndexUnavailable, RetrievalError

P = ParamSpec("P")
R = TypeVar("R")

STORAGE_MODULES = ("lance", "lancedb", "pyarrow")
_SOURCE_LOCATION = re.compile(r",? \S+\.rs:\d+:\d+")  # where in Lance's Rust source: noise to a reader


def reads_index(function: Callable[P, R]) -> Callable[P, R]:
    """`function(index, ...)` (or a method of Index) with storage failures raised as IndexCorrupt or IndexUnavailable."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except RetrievalError:
            raise
        except Exception as exc:
            error = index_error(args[0], exc)
            if error is None:
                raise
            raise error from exc

    return wrapper


def index_error(index: object, exc: BaseException) -> IndexUnavailable | None:
    """The typed error for `exc` raised while reading `index` (an Index: its metadata names the corpus);
    None when `exc` did not come from storage."""
    corpus = getattr(getattr(index, "metadata", None), "corpus", "") or ""
    where = f"the index of corpus {corpus!r}" if corpus else f"the index at {getattr(index, 'path', '?')}"
    remedy = (f"rebuild it (manage.py build_index --corpus {corpus}) or activate another build" if corpus
              else "rebuild it or activate another build")
    detail = _SOURCE_LOCATION.sub("", " ".join(str(exc).split()))[:300] or type(exc).__name__
    if isinstance(exc, OSError):
        return IndexUnavailable(f"{where} cannot be read ({detail}); if its files are gone or damaged, {remedy}")
    if _raised_in_storage(exc):
        return IndexCorrupt(f"{where} is damaged and cannot be read ({detail}); {remedy}", corpus=corpus)
    return None


def _raised_in_storage(exc: BaseException) -> bool:
    """True when the innermost Python frame of `exc` is in LanceDB, Lance or Arrow."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0] in STORAGE_MODULES
