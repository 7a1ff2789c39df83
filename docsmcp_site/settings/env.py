"""Typed reads of the environment, the only way the settings modules read it.

A number or switch left empty (`FOO=` in a unit or compose file) means its default; a string or list
left empty is a value (`MCP_RATE_LIMIT_REDIS_URL=` keeps the counters in memory, `DOCSMCP_SOURCE_ROOTS=`
allows no directory). A value that does not parse stops the process at start-up with the variable's
name, what it must be and what it was, instead of a bare `ValueError` or a wrong value found on the
first request.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T")
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def _read(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _parsed(name: str, default: T, parse: Callable[[str], T], what: str) -> T:
    value = _read(name)
    if value is None:
        return default
    try:
        return parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}; got {value!r}") from None


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    return _parsed(name, default, int, "a whole number")


def env_float(name: str, default: float) -> float:
    return _parsed(name, float(default), float, "a number")


def env_bool(name: str, default: bool) -> bool:
    def parse(value: str) -> bool:
        if value.lower() not in TRUE | FALSE:
            raise ValueError(value)
        return value.lower() in TRUE

    return _parsed(name, default, parse, "one of 1, true, yes, on, 0, false, no, off")


def env_list(name: str, default: str) -> list[str]:
    """Comma-separated items, blanks dropped."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    def parse(value: str) -> str:
        if value.lower() not in choices:
            raise ValueError(value)
        return value.lower()

    return _parsed(name, default, parse, " or ".join(choices))
