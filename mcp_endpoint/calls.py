"""Answering one JSON-RPC request, whatever carried it: the part the HTTP view and stdio share.

A transport reads and classifies messages and decides the protocol version; `answer` runs the
method through `protocol.dispatch` and turns every outcome into one reply envelope, so a
method behaves the same over HTTP and over stdio.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError

from common.errors import InsufficientScope
from mcp_endpoint import jsonrpc, profiles, protocol
from mcp_endpoint.jsonrpc import InternalError, JsonRpcError, Request, ServerError
from retrieval.errors import RetrievalError

logger = logging.getLogger("docsmcp.mcp")
DATABASE_DOWN = "Service Unavailable: the database cannot be reached right now; retry shortly"


def client_info(message: Request) -> dict[str, Any] | None:
    """initialize's clientInfo, the only handshake-era message that names the client."""
    if message.method == "initialize" and isinstance(message.params, dict):
        info = message.params.get("clientInfo")
        return info if isinstance(info, dict) else None
    return None


def answer(call: protocol.Call, request_id: jsonrpc.RequestId) -> dict[str, Any]:
    """The reply envelope for one request; anything unexpected is logged and answered -32603."""
    try:
        return jsonrpc.success(request_id, protocol.dispatch(call))
    except JsonRpcError as exc:
        return jsonrpc.failure(request_id, exc)
    except (profiles.UnknownCorpus, InsufficientScope):  # HTTP-level answers (a 404, a 403 challenge)
        raise
    except DatabaseError:
        logger.warning("MCP method %s: database unavailable", call.method, exc_info=True)
        return jsonrpc.failure(request_id, ServerError(DATABASE_DOWN))
    except RetrievalError as exc:  # outside a tool (a profile hook): the engine's own words, not "internal"
        return jsonrpc.failure(request_id, ServerError(str(exc) or exc.__class__.__name__))
    except Exception:
        logger.exception("MCP method %s failed", call.method)
        return jsonrpc.failure(request_id, InternalError("Internal error"))
