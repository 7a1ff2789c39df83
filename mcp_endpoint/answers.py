"""The MCP surface's one table: how every error that can reach a tool call or a JSON-RPC method is answered.

Errors are typed by the layer that raises them (retrieval/errors.py, common/errors.py, corpus/errors.py,
mcp_endpoint/errors.py, each with one base class) and translated here, once, for the three places the MCP
surface answers from: a tool's handler (`tool_failure`: an `isError: true` result the model reads), a
method outside a tool (`method_failure`: a JSON-RPC error) and the HTTP view itself (`request_failure`).
The texts are contracts (docs/contracts/, ../shared/seeds/): change none without its seed.

`ANSWERS` names every class of those four hierarchies on purpose: tests/test_error_tables.py fails for a
class added without a line here, so a new error is answered by decision, not by inheritance. A class
the table does not name (a library's) is answered as its nearest named base class.
"""

from __future__ import annotations

import enum
import logging

from django.db import DatabaseError

from common import errors as caller
from corpus import errors as app
from mcp_endpoint import errors as endpoint
from mcp_endpoint import jsonrpc
from mcp_endpoint.profiles.citeloom import CiteloomError
from retrieval import errors as engine

logger = logging.getLogger("docsmcp.mcp")


class Answer(enum.Enum):
    OWN_WORDS = "the error's message: a tool's isError text; outside a tool, -32000 with it"
    ARGUMENTS = "-32602, or from 2025-11-25 an isError result in tools/call (SEP-1303)"
    PROTOCOL = "the JSON-RPC error as raised: its code, message and data"
    HTTP = "answered by the HTTP view with its own status (401, 403, 404, 413); never inside a call"
    DATABASE = "the database is away: retry shortly (a tool's text, -32000, or 503 from the view)"
    INDEX_FILES = "a tool could not read the index files: /health/ says which"
    INTERNAL = "a fault: logged with its traceback, answered without one (-32603, 500)"


OWN, ARGS, PROTOCOL, HTTP, DATABASE, FILES, INTERNAL = Answer  # the table reads as a table

ANSWERS: dict[type[BaseException], Answer] = {
    # the engine (retrieval/errors.py): its own words
    engine.RetrievalError: OWN,
    engine.ConfigError: OWN,
    engine.ValidationFailed: OWN,
    engine.EmbeddingError: OWN,
    engine.EmbeddingMismatch: OWN,
    engine.IndexUnavailable: OWN,
    engine.IndexCorrupt: OWN,
    engine.StorageUnavailable: OWN,
    engine.InvalidArgument: OWN,
    engine.InvalidFilter: OWN,
    engine.InvalidCursor: OWN,
    engine.InvalidChunkId: OWN,
    engine.NotFound: OWN,
    engine.BuildCancelled: OWN,
    engine.UnsafeTarget: OWN,
    engine.ContentFixError: OWN,
    engine.LLMFixError: OWN,
    engine.GitError: OWN,
    engine.SkippedFile: OWN,
    engine.NotRegularFile: OWN,
    engine.FileTooLarge: OWN,
    # the caller (common/errors.py)
    caller.CallerError: HTTP,
    caller.InvalidApiKey: HTTP,
    caller.InsufficientScope: HTTP,  # 403 with an insufficient_scope challenge (step-up authorization)
    caller.AuthUnavailable: DATABASE,
    # the corpus app (corpus/errors.py): its own words, as the engine's
    app.CorpusError: OWN,
    app.CorpusNotFound: OWN,
    app.ProjectNotFound: OWN,
    app.ProjectEmbeddingMismatch: OWN,
    app.UnknownVersion: OWN,
    app.CorpusNotAllowed: OWN,
    app.CorpusExists: OWN,
    app.NoActiveBuild: OWN,
    app.DatabaseUnavailable: OWN,  # says what cached state it could not stand in for
    app.BuildInProgress: OWN,
    app.BuildNotFound: OWN,
    app.BuildStateConflict: OWN,
    app.SourceDirNotAllowed: OWN,
    app.FixError: OWN,
    app.UnsafeFixTarget: OWN,
    app.FixNotFound: OWN,
    app.EmbeddingChangeRefused: OWN,
    app.TaskQueueUnavailable: OWN,
    app.SignatureInvalid: OWN,
    # the endpoint (mcp_endpoint/errors.py, jsonrpc.py and the classes typed near their source)
    endpoint.EndpointError: INTERNAL,
    endpoint.ToolError: OWN,
    endpoint.ResourceNotFound: OWN,  # resources/read turns it into -32602 with data.uri itself
    endpoint.UnknownCorpus: HTTP,  # 404
    endpoint.UnknownProfile: HTTP,  # 404
    jsonrpc.JsonRpcError: PROTOCOL,
    jsonrpc.ParseError: PROTOCOL,
    jsonrpc.InvalidRequest: PROTOCOL,
    jsonrpc.MethodNotFound: PROTOCOL,
    jsonrpc.InvalidParams: ARGS,
    jsonrpc.InternalError: PROTOCOL,
    jsonrpc.ServerError: PROTOCOL,
    jsonrpc.HeaderMismatch: PROTOCOL,
    jsonrpc.UnsupportedProtocolVersion: PROTOCOL,
    endpoint.BodyTooLarge: HTTP,  # 413
    endpoint.RateLimited: OWN,  # says when to retry
    endpoint.Refusal: HTTP,  # llms.txt's own status
    CiteloomError: OWN,  # the citeloom profile answers it in its contract's shape before it gets here
    endpoint.FolderError: OWN,  # the command line's; never raised in a call
    endpoint.SetupError: OWN,  # the command line's; never raised in a call
    # what is nobody's type
    DatabaseError: DATABASE,
    OSError: FILES,
    Exception: INTERNAL,
}

DATABASE_DOWN = "Service Unavailable: the database cannot be reached right now; retry shortly"
INTERNAL_TEXT = "Internal error"


def answer_for(exc: BaseException) -> Answer:
    """The table's answer for `exc`: its class's line, else its nearest base class's."""
    for cls in type(exc).__mro__:
        found = ANSWERS.get(cls)
        if found is not None:
            return found
    return INTERNAL


def own_words(exc: BaseException) -> str:
    return str(exc) or exc.__class__.__name__


def tool_failure(tool: str, exc: Exception) -> str:
    """The isError text a tool's handler failure becomes; argument errors are raised again (the caller
    knows the protocol version that decides their shape). Anything the table does not call the
    caller's or the database's or the index files' is a fault: logged, and the text says so."""
    found = answer_for(exc)
    if found is ARGS:
        raise exc
    if found is OWN:
        return own_words(exc)
    if found is DATABASE:
        logger.warning("tool %s: database unavailable", tool, exc_info=True)
        return f"Tool '{tool}' needs the database, which cannot be reached right now; retry shortly."
    if found is FILES:
        logger.exception("tool %s could not read index files", tool)
        return (f"Tool '{tool}' could not read the index files; the server's /health/ shows which index is "
                "unreadable. Retry after an operator rebuilds it.")
    logger.exception("tool %s failed", tool)
    return f"Tool '{tool}' failed with an internal error; the server log has details."


def method_failure(method: str, exc: Exception) -> jsonrpc.JsonRpcError:
    """The JSON-RPC error a method's failure outside a tool becomes; an HTTP-level refusal (a 404 corpus,
    a 403 scope challenge) is raised again for the view to answer."""
    found = answer_for(exc)
    if found in (PROTOCOL, ARGS):
        assert isinstance(exc, jsonrpc.JsonRpcError)
        return exc
    if found is HTTP:
        raise exc
    if found is DATABASE:
        logger.warning("MCP method %s: database unavailable", method, exc_info=True)
        return jsonrpc.ServerError(DATABASE_DOWN)
    if found is OWN:  # outside a tool (a profile hook): the error's own words, not "internal"
        return jsonrpc.ServerError(own_words(exc))
    logger.exception("MCP method %s failed", method)
    return jsonrpc.InternalError(INTERNAL_TEXT)


def request_failure(exc: Exception) -> tuple[int, jsonrpc.JsonRpcError]:
    """(HTTP status, error) for what escaped the HTTP view's own checks: 503 when the database is away
    (send Retry-After), else a logged 500."""
    if answer_for(exc) is DATABASE:
        logger.warning("MCP request refused: database unavailable", exc_info=True)
        return 503, jsonrpc.ServerError(DATABASE_DOWN)
    logger.exception("MCP request failed")
    return 500, jsonrpc.InternalError(INTERNAL_TEXT)
