"""Errors of the floor: who is calling could not be settled. Each surface (MCP, REST, HTML) answers them
from its own table (mcp_endpoint/errors.py, common/api/errors.py); none of them is an engine error."""


class CallerError(Exception):
    """Base class: the request's caller could not be admitted or checked."""


class InvalidApiKey(CallerError):
    """An Authorization header that carries no valid key (unknown, revoked or malformed)."""


class InsufficientScope(CallerError):
    """An OAuth access token lacks the scope a call needs: answered 403 with an `insufficient_scope`
    challenge naming `scope`, so the client can sign in again for it (step-up authorization)."""

    def __init__(self, message: str, scope: str):
        super().__init__(message)
        self.scope = scope


class AuthUnavailable(CallerError):
    """A database key could not be checked: the database is unreachable and the key is not cached."""
