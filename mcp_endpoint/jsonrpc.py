"""JSON-RPC 2.0 for MCP: error codes, typed errors, body parsing and message classification.

Errors are raised where they are detected (parsing, envelope checks, handlers) and turned
into wire envelopes once, in `transport.py`. Nothing here knows about HTTP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp_endpoint.errors import EndpointError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Implementation-defined server errors (-32000..-32099).
SERVER_ERROR = -32000
HEADER_MISMATCH = -32020  # 2026-07-28: mirrored HTTP headers disagree with the body
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021  # 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28

RequestId = str | int


class JsonRpcError(EndpointError):
    """A protocol-level failure; `code` and `message` go to the client verbatim, so never a traceback."""

    code = INTERNAL_ERROR

    def __init__(self, message: str, data: Any = None, request_id: RequestId | None = None):
        super().__init__(message)
        self.message = message
        self.data = data
        self.request_id = request_id

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(JsonRpcError):
    code = PARSE_ERROR


class InvalidRequest(JsonRpcError):
    code = INVALID_REQUEST


class MethodNotFound(JsonRpcError):
    code = METHOD_NOT_FOUND


class InvalidParams(JsonRpcError):
    code = INVALID_PARAMS


class InternalError(JsonRpcError):
    code = INTERNAL_ERROR


class ServerError(JsonRpcError):
    """A refusal the client can act on by waiting or asking for less (a limit reached, a dependency down),
    not a fault in the request nor a bug in the server."""

    code = SERVER_ERROR


class HeaderMismatch(JsonRpcError):
    code = HEADER_MISMATCH


class UnsupportedProtocolVersion(JsonRpcError):
    code = UNSUPPORTED_PROTOCOL_VERSION


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True)
class Response:
    """A response the client sent us (to a server request we never make); acknowledged and dropped."""

    id: RequestId | None


Message = Request | Notification | Response


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_body(raw: bytes) -> Any:
    """Decode a request body; NaN/Infinity, bad UTF-8, lone surrogates and absurd nesting are parse errors too.

    JSON lets `"\\ud800"` through although no UTF-8 text can carry it; refusing it here keeps it
    out of every handler, database and response.
    """
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"Parse error: {_short(exc)}") from None
    bad = find_bad_text(body, "")
    if bad is not None and bad[1] == SURROGATE:
        raise ParseError(
            f"Parse error: the string at {bad[0] or 'the top level'} holds a lone UTF-16 surrogate "
            "(such as \\ud800), which is not valid Unicode; send well-formed UTF-8 text"
        )
    return body


SURROGATE, NUL = "surrogate", "nul"


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return NUL
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE
    return None


def find_bad_text(value: Any, path: str) -> tuple[str, str] | None:
    """The first string (key or value) under `value` that no database or UTF-8 response can hold:
    (its path, SURROGATE or NUL), surrogates reported before NULs; None when all text is clean."""
    found: tuple[str, str] | None = None
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
        elif isinstance(item, dict):
            problem = None
            for key, child in item.items():
                key_problem = _text_problem(key)
                if key_problem is not None:
                    problem = key_problem
                    break
                stack.append((child, f"{where}.{key}" if where else key))
        elif isinstance(item, list):
            problem = None
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
        else:
            continue
        if problem == SURROGATE:
            return where, SURROGATE
        if problem == NUL and found is None:
            found = (where, NUL)
    return found


def _short(exc: Exception) -> str:
    text = str(exc) or exc.__class__.__name__
    return text if len(text) <= 200 else text[:200] + "..."


def _valid_id(value: Any) -> bool:
    # MCP: "a string or integer", never null; JSON booleans are not integers.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(obj: Any) -> Message:
    """Check one decoded message's envelope and say what it is.

    Raises InvalidRequest (carrying the request id when it could be read) for anything that is
    not a request, notification or response; InvalidParams for `params` of the wrong type.
    """
    if not isinstance(obj, dict):
        raise InvalidRequest("Invalid Request: a JSON-RPC message must be a JSON object")
    raw_id = obj.get("id")
    request_id = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        raise InvalidRequest('Invalid Request: "jsonrpc" must be exactly "2.0"', request_id=request_id)
    if "method" not in obj:
        if "id" in obj and ("result" in obj or "error" in obj):
            return Response(id=request_id)
        raise InvalidRequest('Invalid Request: missing "method"', request_id=request_id)
    method = obj["method"]
    if not isinstance(method, str) or not method:
        raise InvalidRequest('Invalid Request: "method" must be a non-empty string', request_id=request_id)
    if "id" in obj and request_id is None:
        raise InvalidRequest('Invalid Request: "id" must be a string or an integer')
    params = obj.get("params")
    if params is not None and not isinstance(params, dict):
        if "id" not in obj:
            # A notification gets no reply, so there is no one to tell; drop it as malformed.
            raise InvalidRequest('Invalid Request: "params" must be an object')
        raise InvalidParams('Invalid params: "params" must be an object', request_id=request_id)
    bad = find_bad_text(params, "params")
    if bad is not None:
        message = (f"Invalid params: the string at {bad[0]} contains a NUL character (\\u0000), "
                   "which no field accepts; remove it")
        if "id" not in obj:
            raise InvalidRequest(message)
        raise InvalidParams(message, request_id=request_id)
    if "id" not in obj:
        return Notification(method=method, params=params)
    return Request(id=request_id, method=method, params=params)


def success(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def failure(request_id: RequestId | None, error: JsonRpcError) -> dict[str, Any]:
    """An error envelope; `id` is null when the request id could not be read (JSON-RPC 2.0 §5)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}


def error_body(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """An uncorrelated error envelope for HTTP-level refusals (403, 413, 415, 429, ...)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": None, "error": error}
