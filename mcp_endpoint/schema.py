"""A JSON-Schema validator for the subset tool input schemas use.

Why not the `jsonschema` package: the messages go straight to an agent, which has to fix its
call from them, so they name the argument and the allowed values ("Argument 'limit' must be
an integer from 1 to 50; got 51."), and the subset we use is small. Supported keywords: type
(object, string, integer, number, boolean, array, null, or a list of them), enum, const,
minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, minItems,
maxItems, items, properties, required, additionalProperties (false or a schema). Anything else
(description, default, title, x-*) is an annotation and ignored. Booleans are not integers or
numbers, and "10" is not an integer.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

_TYPE_NAMES = {
    "object": "an object",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "null": "null",
}


def _is_type(value: Any, type_name: str) -> bool:
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if type_name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "null":
        return value is None
    return True  # unknown type keywords do not constrain


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _label(path: str) -> str:
    return f"Argument '{path}'" if path else "Arguments"


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _range_text(schema: dict[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"from {low} to {high}"
    if low is not None:
        return f">= {low}"
    if high is not None:
        return f"<= {high}"
    return ""


def validate(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Every way `value` breaks `schema`, as sentences an agent can act on; [] when it conforms."""
    errors: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        types = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, t) for t in types):
            wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in types)
            errors.append(f"{_label(path)} must be {wanted}; got {_show(value)}.")
            return errors  # further checks would only repeat the type error
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_show(v) for v in schema["enum"])
        errors.append(f"{_label(path)} must be one of {allowed}; got {_show(value)}.")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{_label(path)} must be {_show(schema['const'])}; got {_show(value)}.")
    if isinstance(value, int | float) and not isinstance(value, bool):
        errors.extend(_check_number(schema, value, path))
    if isinstance(value, str):
        errors.extend(_check_string(schema, value, path))
    if isinstance(value, list):
        errors.extend(_check_array(schema, value, path))
    if isinstance(value, dict):
        errors.extend(_check_object(schema, value, path))
    return errors


def _check_number(schema: dict[str, Any], value: float, path: str) -> list[str]:
    errors = []
    low, high = schema.get("minimum"), schema.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        kind = "an integer" if schema.get("type") == "integer" else "a number"
        errors.append(f"{_label(path)} must be {kind} {_range_text(schema)}; got {_show(value)}.")
    xlow, xhigh = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if xlow is not None and value <= xlow:
        errors.append(f"{_label(path)} must be greater than {xlow}; got {_show(value)}.")
    if xhigh is not None and value >= xhigh:
        errors.append(f"{_label(path)} must be less than {xhigh}; got {_show(value)}.")
    return errors


def _check_string(schema: dict[str, Any], value: str, path: str) -> list[str]:
    errors = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        n = schema["minLength"]
        errors.append(f"{_label(path)} must be at least {n} character{'s' if n != 1 else ''} long.")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(
            f"{_label(path)} must be at most {schema['maxLength']} characters long; got {len(value)}."
        )
    if "pattern" in schema and not _compiled(schema["pattern"]).search(value):
        errors.append(f"{_label(path)} must match the pattern {schema['pattern']!r}; got {_show(value)}.")
    return errors


def _check_array(schema: dict[str, Any], value: list[Any], path: str) -> list[str]:
    errors = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(f"{_label(path)} must have at least {schema['minItems']} item(s); got {len(value)}.")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{_label(path)} must have at most {schema['maxItems']} item(s); got {len(value)}.")
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            errors.extend(validate(items, item, f"{path}[{index}]"))
    return errors


def _check_object(schema: dict[str, Any], value: dict[str, Any], path: str) -> list[str]:
    errors = []
    properties: dict[str, Any] = schema.get("properties") or {}
    prefix = f"{path}." if path else ""
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(f"Missing required argument '{prefix}{name}'.")
    additional = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            errors.extend(validate(properties[name], item, f"{prefix}{name}"))
        elif additional is False:
            allowed = ", ".join(properties) or "none"
            errors.append(f"Unknown argument '{prefix}{name}'. Allowed arguments: {allowed}.")
        elif isinstance(additional, dict):
            errors.extend(validate(additional, item, f"{prefix}{name}"))
    return errors


def normalize(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Fill top-level defaults and turn integral floats (10.0) into ints, so handlers see plain values.

    Call only on arguments `validate` accepted.
    """
    properties: dict[str, Any] = schema.get("properties") or {}
    result = dict(arguments)
    for name, prop in properties.items():
        if name not in result and isinstance(prop, dict) and "default" in prop:
            result[name] = prop["default"]
        value = result.get(name)
        if isinstance(prop, dict) and prop.get("type") == "integer" and isinstance(value, float):
            result[name] = int(value)
    return result
