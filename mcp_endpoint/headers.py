"""The 2026-07-28 per-request envelope: `params._meta` and the HTTP headers that mirror the body.

Every modern request carries its protocol version, client capabilities (and usually client
info) in `params._meta`, and mirrors version, method and target name into
`MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` so intermediaries can route without
reading the body. The checks run in the spec's order, first failure wins:

1. `_meta` holds protocolVersion and clientCapabilities, else -32602 (HTTP 400);
2. the headers match the body, else HeaderMismatch -32020 (HTTP 400);
3. the version is one we serve, else UnsupportedProtocolVersion -32022 (HTTP 400) naming them.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_endpoint.jsonrpc import HeaderMismatch, InvalidParams, UnsupportedProtocolVersion

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
PARAM_HEADER_PREFIX = "Mcp-Param-"

# Methods whose target is mirrored into Mcp-Name, and the params key it comes from.
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_B64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


@dataclass(frozen=True)
class Envelope:
    protocol_version: str
    client_info: dict[str, Any] | None
    client_capabilities: dict[str, Any]


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header value with optional whitespace trimmed (RFC 9110 §5.5), or None."""
    value = headers.get(name)
    return value.strip() if value is not None else None


def decode_header_value(value: str | None) -> str | None:
    """Undo the `=?base64?...?=` wrapping clients use for values HTTP cannot carry verbatim.

    A malformed or non-canonical wrapper yields None, so it can never match a body value.
    """
    if value is None:
        return None
    match = _B64_SENTINEL.fullmatch(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def has_modern_meta(body: Any) -> bool:
    """Whether a decoded body claims the per-request envelope (its version key is reserved to 2026+)."""
    if not isinstance(body, dict):
        return False
    params = body.get("params")
    return (
        isinstance(params, dict)
        and isinstance(params.get("_meta"), dict)
        and PROTOCOL_VERSION_KEY in params["_meta"]
    )


def unsupported(requested: Any, supported: tuple[str, ...]) -> UnsupportedProtocolVersion:
    return UnsupportedProtocolVersion(
        "Unsupported protocol version",
        data={"supported": list(supported), "requested": requested},
    )


def check_request(
    method: str, params: dict[str, Any] | None, headers: Mapping[str, str], supported: tuple[str, ...]
) -> Envelope:
    """Run the envelope ladder for one modern request; raises the first failing rung's error."""
    meta = _meta(params)
    version = meta[PROTOCOL_VERSION_KEY]

    version_header = header(headers, PROTOCOL_VERSION_HEADER)
    if version_header is None:
        raise HeaderMismatch(f"Header mismatch: the {PROTOCOL_VERSION_HEADER} header is missing")
    if version_header != version:
        raise HeaderMismatch(
            f"Header mismatch: {PROTOCOL_VERSION_HEADER} {version_header!r} does not match "
            f"the body's protocol version {version!r}"
        )
    method_header = header(headers, METHOD_HEADER)
    if method_header is None:
        raise HeaderMismatch(f"Header mismatch: the {METHOD_HEADER} header is missing")
    if method_header != method:
        raise HeaderMismatch(
            f"Header mismatch: {METHOD_HEADER} {method_header!r} does not match the body's method {method!r}"
        )
    name_key = NAME_BEARING.get(method)
    if name_key is not None and params is not None and params.get(name_key) is not None:
        body_value = params[name_key]
        raw = header(headers, NAME_HEADER)
        if raw is None:
            raise HeaderMismatch(f"Header mismatch: the {NAME_HEADER} header is missing for {method}")
        if decode_header_value(raw) != body_value:
            raise HeaderMismatch(
                f"Header mismatch: {NAME_HEADER} does not match the body's {name_key!r} parameter"
            )

    return _envelope(meta, supported)


def check_meta(params: dict[str, Any] | None, supported: tuple[str, ...]) -> Envelope:
    """The ladder without its header rung, for transports that have no headers (stdio)."""
    return _envelope(_meta(params), supported)


def _meta(params: dict[str, Any] | None) -> dict[str, Any]:
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise InvalidParams(
            f"Invalid params: params._meta must be an object carrying {PROTOCOL_VERSION_KEY!r} "
            f"and {CLIENT_CAPABILITIES_KEY!r}"
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise InvalidParams(f"Invalid params: params._meta is missing {', '.join(missing)}")
    return meta


def _envelope(meta: dict[str, Any], supported: tuple[str, ...]) -> Envelope:
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        raise InvalidParams("Invalid params: the protocol version in params._meta must be a string")
    if version not in supported:
        raise unsupported(version, supported)
    client_info = meta.get(CLIENT_INFO_KEY)
    capabilities = meta.get(CLIENT_CAPABILITIES_KEY)
    return Envelope(
        protocol_version=version,
        client_info=client_info if isinstance(client_info, dict) else None,
        client_capabilities=capabilities if isinstance(capabilities, dict) else {},
    )


def _render(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return None


def _matches(prop_type: Any, value: Any, rendered: str, decoded: str) -> bool:
    if prop_type == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(decoded) == float(value)  # the spec's SHOULD: compare integers numerically
        except ValueError:
            return False
    return decoded == rendered


def check_param_headers(
    input_schema: dict[str, Any], arguments: Mapping[str, Any], headers: Mapping[str, str]
) -> None:
    """Check `Mcp-Param-*` headers against the arguments of a tools/call (top-level `x-mcp-header` properties)."""
    properties = input_schema.get("properties") or {}
    for name, prop in properties.items():
        if not isinstance(prop, dict) or not isinstance(prop.get("x-mcp-header"), str):
            continue
        header_name = f"{PARAM_HEADER_PREFIX}{prop['x-mcp-header']}"
        raw = header(headers, header_name)
        value = arguments.get(name)
        if value is None:
            if raw is not None:
                raise HeaderMismatch(
                    f"Header mismatch: {header_name} is present but argument {name!r} is absent"
                )
            continue
        rendered = _render(value)
        if rendered is None:
            continue
        if raw is None:
            raise HeaderMismatch(
                f"Header mismatch: {header_name} is missing but argument {name!r} is present"
            )
        decoded = decode_header_value(raw)
        if decoded is None:
            raise HeaderMismatch(f"Header mismatch: {header_name} carries a malformed base64 value")
        if not _matches(prop.get("type"), value, rendered, decoded):
            raise HeaderMismatch(f"Header mismatch: {header_name} does not match argument {name!r}")
