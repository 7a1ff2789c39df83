"""MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, as local MCP clients spawn servers.

The same methods, profiles and engine as the HTTP view (`calls.answer` runs every request);
only the framing differs. One process serves one client, so unlike HTTP there is a session:
the version `initialize` negotiates applies to the requests after it. A 2026-07-28 request
carries its own version in `params._meta`, checked as over HTTP minus the header rung (stdio
has no headers). Each request looks up the active build afresh, so a build activated while
the process runs serves the next call.

Whoever can spawn this process can read the index files and the database it points at, so
it runs as the local operator: a principal holding every scope (docs/clients.md says so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from django.db import close_old_connections

from common.callers import Principal
from corpus.models import SCOPES
from mcp_endpoint import headers as mcp_headers
from mcp_endpoint import jsonrpc, profiles, protocol, versions
from mcp_endpoint.calls import answer, client_info
from mcp_endpoint.jsonrpc import InvalidRequest, JsonRpcError, Notification, Response
from mcp_endpoint.jsontext import compact
from mcp_endpoint.profiles import registry

LOCAL_OPERATOR = Principal(name="stdio (local operator)", scopes=frozenset(SCOPES))


class StdioSession:
    """One client's conversation: which profile and corpus it talks to, and the version it negotiated."""

    def __init__(self, profile_name: str, corpus: str | None, principal: Principal = LOCAL_OPERATOR):
        self.profile_name = profile_name
        self.profile = registry.get_profile(profile_name)
        self.corpus = corpus
        self.principal = principal
        self.version: str | None = None  # set by a successful initialize
        self.client_info: dict[str, Any] | None = None  # initialize's clientInfo, named in the query log

    def context(self, version: str | None, info: dict[str, Any] | None = None) -> profiles.Context:
        return profiles.Context(
            request=None,
            profile=self.profile_name,
            corpus=self.corpus,
            principal=self.principal,
            protocol_version=version,
            client_info=info,
        )

    def check_corpus(self) -> None:
        """Raises profiles.UnknownCorpus when --corpus names no corpus this profile serves."""
        self.profile.check_context(self.context(None))

    def handle_line(self, line: bytes) -> dict[str, Any] | list[dict[str, Any]] | None:
        """The reply to one line of input, or None when it needs none (notifications, responses)."""
        try:
            body = jsonrpc.parse_body(line)
        except JsonRpcError as exc:
            return jsonrpc.failure(None, exc)
        if isinstance(body, list):
            version = self.version or versions.DEFAULT_VERSION
            if version not in versions.BATCH_VERSIONS or not body:
                reason = "an empty batch" if not body else f"batches in protocol version {version}"
                return jsonrpc.failure(None, InvalidRequest(f"Invalid Request: {reason} is not supported"))
            replies = [reply for reply in map(self._message, body) if reply is not None]
            return replies or None
        return self._message(body)

    def _message(self, obj: Any) -> dict[str, Any] | None:
        try:
            message = jsonrpc.classify(obj)
        except JsonRpcError as exc:
            return jsonrpc.failure(exc.request_id, exc)
        if isinstance(message, Notification | Response):
            return None
        params = dict(message.params or {})
        modern = mcp_headers.has_modern_meta(obj)
        if modern:
            try:
                envelope = mcp_headers.check_meta(message.params, versions.MODERN_VERSIONS)
            except JsonRpcError as exc:
                return jsonrpc.failure(message.id, exc)
            params.pop("_meta", None)
            context = self.context(envelope.protocol_version, envelope.client_info)
        else:
            context = self.context(self.version or versions.DEFAULT_VERSION, client_info(message) or self.client_info)
        call = protocol.Call(
            method=message.method, params=params, context=context, profile=self.profile, modern=modern
        )
        reply = answer(call, message.id)
        if message.method == "initialize" and "result" in reply:
            self.version = reply["result"]["protocolVersion"]
            self.client_info = client_info(message)
        return reply


def serve(session: StdioSession, stdin: IO[bytes], stdout: IO[str],
          before_each: Callable[[], None] = close_old_connections) -> None:
    """Answer line after line until stdin closes; every reply is one line of JSON on stdout."""
    for line in iter(stdin.readline, b""):
        if not line.strip():
            continue
        before_each()
        reply = session.handle_line(line)
        if reply is not None:
            stdout.write(compact(reply).decode() + "\n")
            stdout.flush()
