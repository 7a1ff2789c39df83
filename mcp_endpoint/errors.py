"""Errors of the MCP endpoint: one base, `EndpointError`. How each is answered on the wire (and how every
error of the layers below is) is the MCP surface's one table, mcp_endpoint/answers.py.

The JSON-RPC errors (mcp_endpoint/jsonrpc.py) are endpoint errors too: they carry their wire code, and
the parsing code that raises them lives with them. The citeloom contract's CiteloomError stays in its
profile (profiles/citeloom.py), since it renders itself in that contract's shape.
"""

from __future__ import annotations

from typing import Any


class EndpointError(Exception):
    """Base class of the MCP endpoint's errors."""


class ToolError(EndpointError):
    """A failure the agent should read and act on; becomes an `isError: true` tool result."""


class ResourceNotFound(EndpointError):
    """resources/read for a URI the profile does not serve; becomes -32602 with data.uri (SEP-2164)."""

    def __init__(self, uri: str, message: str | None = None):
        super().__init__(message or f"Resource not found: {uri}")
        self.uri = uri


class UnknownCorpus(EndpointError):
    """The corpus named in /mcp/c/<corpus>/ does not exist; the transport answers 404."""


class UnknownProfile(EndpointError, LookupError):
    """No profile is registered under the requested name."""


class BodyTooLarge(EndpointError):
    """A POST body over the profile's limit: the view answers 413 without reading past it."""


class RateLimited(EndpointError):
    """The caller went past its per-minute limit partway through a call; the message says when to retry."""

    def __init__(self, decision: Any, what: str):  # a ratelimit.Decision: its limit and retry_after
        self.decision = decision
        super().__init__(f"Rate limit exceeded: {decision.limit} requests per minute, and {what}. "
                         f"Retry after {decision.retry_after} seconds, or send fewer at a time.")


class Refusal(EndpointError):
    """An llms.txt request answered with `status` and a plain-text `message` instead of the document."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


class FolderError(EndpointError):
    """A folder that cannot be served: printed as one line by the command that was given it."""


class SetupError(EndpointError):
    """A configuration that cannot be written as asked: printed as one line with what to do instead."""
