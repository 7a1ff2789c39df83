"""Typed reads of the environment, the only way the settings modules read it: `env(NAME)` parses a
variable by its type and default in the registry (registry.py); the env_* helpers below do the parsing.

A number or switch left empty (`FOO=` in a unit or compose file) means its default; a string or list
left empty is a value (`MCP_RATE_LIMIT_REDIS_URL=` keeps the counters in memory, `DOCSMCP_SOURCE_ROOTS=`
allows no directory). A value that does not parse stops the process at start-up with the variable's
name, what it must be and what it was, instead of a bare `ValueError` or a wrong value found on the
first request.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

from docsmcp_site.settings.registry import BY_NAME, COMPUTED

T = TypeVar("T")
_NOT_GIVEN = object()
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


def env(name: str, default: object = _NOT_GIVEN) -> object:
    """The variable `name` of the registry, parsed by its type; a number outside its bounds is refused
    naming the variable. `default` is given exactly when the registry's default is COMPUTED (it depends on
    another setting), so each default is written in one place."""
    setting = BY_NAME[name]
    if (setting.default is COMPUTED) != (default is not _NOT_GIVEN):
        raise TypeError(f"{name}: give a default exactly when the registry's is computed")
    if default is _NOT_GIVEN:
        default = setting.default
    kind = setting.kind
    if kind == "int":
        value = env_int(name, default)
    elif kind == "float":
        value = env_float(name, default)
    elif kind == "bool":
        return env_bool(name, default)
    elif kind == "choice":
        return env_choice(name, default, setting.choices)
    elif kind == "list":
        return env_list(name, default if isinstance(default, str) else ",".join(default))
    elif kind == "path":
        return Path(env_str(name) or default)
    else:
        return (env_str(name) or default) if setting.empty_is_default else env_str(name, default)
    low, high = setting.minimum, setting.maximum
    if value < low or (high is not None and value > high):
        bounds = f"at least {low:g}" if high is None else f"between {low:g} and {high:g}"
        raise ImproperlyConfigured(f"{name} must be {bounds}; got {value:g}")
    return value


def given(name: str) -> bool:
    """Whether the operator set the variable at all (a default that depends on how the server is started
    gives way to an explicit choice)."""
    if name not in BY_NAME:
        raise KeyError(name)
    return bool(os.environ.get(name, ""))
