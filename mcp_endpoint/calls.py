"""Answering one JSON-RPC request, whatever carried it: the part the HTTP view and stdio share.

A transport reads and classifies messages and decides the protocol version; `answer` runs the
method through `protocol.dispatch` and turns every outcome into one reply envelope, so a
method behaves the same over HTTP and over stdio.
"""

from __future__ import annotations

from typing import Any

from mcp_endpoint import answers, jsonrpc, protocol
from mcp_endpoint.jsonrpc import Request


def client_info(message: Request) -> dict[str, Any] | None:
    """initialize's clientInfo, the only handshake-era message that names the client."""
    if message.method == "initialize" and isinstance(message.params, dict):
        info = message.params.get("clientInfo")
        return info if isinstance(info, dict) else None
    return None


def answer(call: protocol.Call, request_id: jsonrpc.RequestId) -> dict[str, Any]:
    """The reply envelope for one request; every failure is answered as mcp_endpoint/answers.py says
    (an HTTP-level refusal, a 404 corpus or a 403 scope challenge, is raised for the view to answer)."""
    try:
        return jsonrpc.success(request_id, protocol.dispatch(call))
    except Exception as exc:  # answers.method_failure logs what it does not call the caller's
        return jsonrpc.failure(request_id, answers.method_failure(call.method, exc))
