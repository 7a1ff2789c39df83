"""The gunicorn worker of `manage.py serve`: a request reaches a thread only once it has fully arrived.

gunicorn's threaded worker hands a connection to a request thread as soon as its first bytes
arrive, and the thread then reads the head and the body with blocking reads: a client that
trickles its request a byte a second holds a thread for as long as it likes. Forty such clients
held all twelve threads of the default server and every search timed out (docs/BENCHMARKS.md).

`BufferingThreadWorker` receives each request in the worker's event loop instead (the selector
that already accepts connections and watches kept-alive ones), as bytes, until the head and the
whole body (Content-Length or chunked) are there. Only then does the connection go to the thread
pool, with the request in the parser's buffer, so a thread never waits on a client. While a
request arrives it costs a socket and its bytes, no thread; the head must arrive within
DOCSMCP_HEADER_TIMEOUT and the body within DOCSMCP_BODY_TIMEOUT, or the answer is 408. A head
over HEAD_LIMIT bytes is 431, a request line over gunicorn's limit_request_line 414, and a
declared body over the cap 413 before any of it is read (MCP_MAX_BODY_BYTES without an
Authorization header; with one, also CITELOOM_MAX_BODY_BYTES). A chunked body is decoded here and
passed on with a Content-Length, so every view reads it like any other body.

What the server answers itself (these refusals, and gunicorn's own 400/414/431/500 pages) is JSON
in the shape of the surface asked: a JSON-RPC error envelope under /mcp, the REST API's
`{"error": {...}}` elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import re
import selectors
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gunicorn import http, util
from gunicorn.http2 import negotiation
from gunicorn.workers.gthread import ThreadWorker

# A request head (request line and header fields) larger than this is refused with 431. It bounds
# what a connection may hold before it has said what it wants; gunicorn's own bound is 800 KB.
HEAD_LIMIT = 64 * 1024
# A chunk-size line (hex size and extensions) or a trailer section longer than this is refused.
CHUNK_LINE_LIMIT = 4096
# Bytes taken from a socket per readiness event.
RECV_BYTES = 256 * 1024

REASONS = {
    400: "Bad Request", 408: "Request Timeout", 413: "Payload Too Large", 414: "URI Too Long",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
}
# The REST API's codes for the statuses the server answers itself (docsmcp_site/api/errors.py).
API_CODES = {
    400: "bad_request", 403: "forbidden", 408: "request_timeout", 413: "payload_too_large",
    414: "uri_too_long", 417: "expectation_failed", 431: "header_fields_too_large", 500: "internal_error",
    501: "not_implemented",
}
JSONRPC_INVALID_REQUEST, JSONRPC_INTERNAL_ERROR = -32600, -32603


def error_response(status: int, message: str, path: str | None) -> bytes:
    """A complete `Connection: close` response carrying the error in the shape of `path`'s surface."""
    reason = REASONS.get(status, "Error")
    text = f"{reason}: {message}" if message else reason
    if path is not None and (path == "/mcp" or path.startswith("/mcp/")):
        code = JSONRPC_INTERNAL_ERROR if status >= 500 else JSONRPC_INVALID_REQUEST
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}
    else:
        body = {"error": {"code": API_CODES.get(status, "bad_request"), "message": text, "details": {}}}
    payload = json.dumps(body).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + payload


@dataclass(frozen=True)
class Limits:
    """What a request may take before it reaches a thread."""

    header_timeout: float
    body_timeout: float
    anonymous_body_bytes: int
    keyed_body_bytes: int
    request_line: int = 4094

    @classmethod
    def from_settings(cls, request_line: int = 4094) -> Limits:
        from django.conf import settings

        anonymous = max(int(settings.MCP_MAX_BODY_BYTES), int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0))
        keyed = max(anonymous, int(getattr(settings, "CITELOOM_MAX_BODY_BYTES", 0)))
        return cls(header_timeout=float(settings.DOCSMCP_HEADER_TIMEOUT),
                   body_timeout=float(settings.DOCSMCP_BODY_TIMEOUT),
                   anonymous_body_bytes=anonymous, keyed_body_bytes=keyed, request_line=request_line)


@dataclass
class Refusal:
    status: int
    message: str
    path: str | None


_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


@dataclass
class Arrival:
    """One request being received: `feed` it bytes until it says the request is complete or refused.

    Complete means `request` holds the request as the parser should read it (the head, with a
    chunked body decoded and given a Content-Length), and `rest` what the client sent after it.
    """

    limits: Limits
    started: float
    data: bytearray = field(default_factory=bytearray)
    path: str | None = None
    head_end: int | None = None
    body_started: float | None = None
    request: bytes | None = None
    rest: bytes = b""
    continue_needed: bool = False
    # body framing, once the head is read
    _length: int | None = None
    _chunked: bool = False
    _head_lines: list[bytes] = field(default_factory=list)
    _cap: int = 0
    _pos: int = 0
    _chunk_left: int | None = None
    _in_trailers: bool = False
    _spans: list[tuple[int, int]] = field(default_factory=list)
    _decoded: int = 0

    @property
    def deadline(self) -> float:
        if self.body_started is None:
            return self.started + self.limits.header_timeout
        return self.body_started + self.limits.body_timeout

    def timed_out(self) -> Refusal:
        if self.body_started is None:
            return Refusal(408, f"the request head did not arrive within {self.limits.header_timeout:g} s "
                                "(DOCSMCP_HEADER_TIMEOUT)", self.path)
        return Refusal(408, f"the request body did not arrive within {self.limits.body_timeout:g} s "
                            "(DOCSMCP_BODY_TIMEOUT)", self.path)

    def feed(self, chunk: bytes, now: float) -> Refusal | bool:
        """Adds bytes; True once the request is complete, a Refusal when it must be refused."""
        self.data += chunk
        if self.head_end is None:
            outcome = self._read_head(now)
            if outcome is not True:
                return outcome
        return self._read_body()

    def _read_head(self, now: float) -> Refusal | bool:
        data = self.data
        while data[:2] == b"\r\n":  # empty lines before a request line are ignored (RFC 9112 2.2)
            del data[:2]
        line_end = data.find(b"\r\n")
        if self.path is None and line_end >= 0:
            self.path = _path_of(bytes(data[:line_end]))
        if (line_end < 0 and len(data) > self.limits.request_line + 2) or line_end > self.limits.request_line:
            return Refusal(414, f"the request line exceeds {self.limits.request_line} bytes", self.path)
        end = data.find(b"\r\n\r\n")
        if end < 0:
            if data.count(b"\n") != data.count(b"\r\n"):
                return Refusal(400, "every line of the request head must end with CRLF", self.path)
            if len(data) > HEAD_LIMIT:
                return Refusal(431, f"the request head exceeds {HEAD_LIMIT} bytes", self.path)
            return False
        if end + 4 > HEAD_LIMIT:
            return Refusal(431, f"the request head exceeds {HEAD_LIMIT} bytes", self.path)
        head = bytes(data[:end])
        if head.count(b"\n") != head.count(b"\r\n"):
            return Refusal(400, "every line of the request head must end with CRLF", self.path)
        self.head_end = end + 4
        self.body_started = now
        return self._frame(head)

    def _frame(self, head: bytes) -> Refusal | bool:
        lines = head.split(b"\r\n")
        self._head_lines = lines
        lengths, codings, expect, keyed = [], [], [], False
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            name = name.lower()
            if not sep:
                continue  # a malformed field: gunicorn refuses it before it reads any body
            if name == b"content-length":
                lengths.append(value.strip())
            elif name == b"transfer-encoding":
                codings.append(value.strip().lower())
            elif name == b"expect":
                expect.append(value.strip().lower())
            elif name == b"authorization" and value.strip():
                keyed = True
        self._cap = self.limits.keyed_body_bytes if keyed else self.limits.anonymous_body_bytes
        if codings and lengths:
            return Refusal(400, "a request may not carry both Transfer-Encoding and Content-Length", self.path)
        if codings:
            if codings != [b"chunked"]:
                shown = b", ".join(codings).decode("latin-1")
                return Refusal(501, f"Transfer-Encoding '{shown}' is not supported; send the body with "
                                    "Content-Length or Transfer-Encoding: chunked", self.path)
            self._chunked = True
        elif lengths:
            if len(lengths) > 1 or not lengths[0].isdigit() or len(lengths[0]) > 18:
                return Refusal(400, "the Content-Length header must be one decimal number", self.path)
            self._length = int(lengths[0])
            if self._length > self._cap:
                return self._too_large()
        else:
            self._length = 0
        body_expected = self._chunked or bool(self._length)
        self.continue_needed = body_expected and b"100-continue" in expect and lines[0].endswith(b"HTTP/1.1")
        self._pos = self.head_end
        return True

    def _too_large(self) -> Refusal:
        hint = ("" if self._cap >= self.limits.keyed_body_bytes
                else " (MCP_MAX_BODY_BYTES; callers with an API key may send more where a tool takes it)")
        return Refusal(413, f"the body exceeds {self._cap} bytes{hint}", self.path)

    def _read_body(self) -> Refusal | bool:
        if self._length is not None:
            end = self.head_end + self._length
            if len(self.data) < end:
                return False
            self.request = bytes(self.data[:end])
            self.rest = bytes(self.data[end:])
            return True
        return self._read_chunks()

    def _read_chunks(self) -> Refusal | bool:
        data, pos = self.data, self._pos
        while True:
            if self._in_trailers:
                if data[pos:pos + 2] == b"\r\n":
                    return self._chunked_done(pos + 2)
                end = data.find(b"\r\n\r\n", pos)
                if end >= 0:
                    return self._chunked_done(end + 4)
                if len(data) - pos > CHUNK_LINE_LIMIT:
                    return Refusal(431, f"the chunked body's trailer section exceeds {CHUNK_LINE_LIMIT} bytes",
                                   self.path)
                self._pos = pos
                return False
            if self._chunk_left is None:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    if len(data) - pos > CHUNK_LINE_LIMIT:
                        return Refusal(400, "a chunk-size line is too long", self.path)
                    self._pos = pos
                    return False
                size = bytes(data[pos:eol]).split(b";", 1)[0]
                if not _HEX.fullmatch(size):
                    return Refusal(400, "a chunk size is not a hexadecimal number", self.path)
                pos = eol + 2
                self._chunk_left = int(size, 16)
                if self._chunk_left == 0:
                    self._in_trailers = True
                    continue
                self._decoded += self._chunk_left
                if self._decoded > self._cap:
                    return self._too_large()
            need = pos + self._chunk_left + 2
            if len(data) < need:
                self._pos = pos
                return False
            if data[need - 2:need] != b"\r\n":
                return Refusal(400, "a chunk does not end with CRLF", self.path)
            self._spans.append((pos, self._chunk_left))
            pos, self._chunk_left = need, None

    def _chunked_done(self, end: int) -> bool:
        """The request re-framed with a Content-Length: the view reads it like any other body."""
        body = b"".join(self.data[start:start + size] for start, size in self._spans)
        kept = [line for line in self._head_lines[1:]
                if line.partition(b":")[0].strip().lower() not in (b"transfer-encoding", b"content-length")]
        head = b"\r\n".join([self._head_lines[0], *kept, b"Content-Length: %d" % len(body)])
        self.request = head + b"\r\n\r\n" + body
        self.rest = bytes(self.data[end:])
        return True


def _path_of(request_line: bytes) -> str | None:
    parts = request_line.split(b" ")
    if len(parts) != 3:
        return None
    target = parts[1].decode("latin-1")
    if target.startswith(("http://", "https://")):
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    return target.split("?", 1)[0]


# The path of the request a thread is answering, for the JSON body of gunicorn's own error pages.
_answering = threading.local()


def write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's `util.write_error` (an HTML page), as JSON in the project's error shapes."""
    util.write_nonblock(sock, error_response(status_int, mesg, getattr(_answering, "path", None)))


class BufferingThreadWorker(ThreadWorker):
    """gunicorn's gthread worker, with each request received in the event loop before a thread takes it."""

    def init_process(self) -> None:
        self.limits = Limits.from_settings(request_line=self.cfg.limit_request_line or 4094)
        self.arrivals: dict[Any, Arrival] = {}
        util.write_error = write_json_error
        super().init_process()

    def _buffers(self, conn) -> bool:
        # TLS and cleartext HTTP/2 are negotiated on the socket by gunicorn's own code in the thread.
        return (getattr(self.cfg, "protocol", "http") == "http" and not self.cfg.is_ssl
                and not negotiation.prior_knowledge_allowed(self.cfg, conn.client))

    def enqueue_req(self, conn) -> None:
        """Called for a new connection, a kept-alive one that became readable, and one with pipelined
        bytes: receive its next request here, and hand it to a thread once it is complete."""
        if not self._buffers(conn):
            super().enqueue_req(conn)
            return
        already = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        arrival = Arrival(self.limits, time.monotonic())
        if already and self._advance(conn, arrival, already):
            return
        conn.sock.setblocking(False)
        self.arrivals[conn] = arrival
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))

    def _on_readable(self, conn, sock) -> None:
        try:
            chunk = sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        arrival = self.arrivals[conn]
        if not chunk:  # the client went away before its request was complete
            self._forget(conn)
            self._drop(conn)
            return
        if self._advance(conn, arrival, chunk):
            self._forget(conn)

    def _advance(self, conn, arrival: Arrival, chunk: bytes) -> bool:
        """Feeds the arrival; True when the connection has left the event loop (to a thread, or closed)."""
        waiting_for_head = arrival.head_end is None
        outcome = arrival.feed(chunk, time.monotonic())
        if isinstance(outcome, Refusal):
            self._refuse(conn, outcome)
            return True
        if waiting_for_head and arrival.continue_needed and outcome is False:
            with contextlib.suppress(OSError):
                conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
        if outcome is False:
            return False
        request = arrival.request
        if arrival.continue_needed:  # answered here: the thread must not send a second 100
            request = _without_expect(request)
        if conn.parser is None:
            conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(request + arrival.rest)
        conn.data_ready = True
        conn.request_path = arrival.path
        super().enqueue_req(conn)
        return True

    def _forget(self, conn) -> None:
        self.arrivals.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)

    def _drop(self, conn) -> None:
        self.nr_conns -= 1
        conn.close()

    def _refuse(self, conn, refusal: Refusal) -> None:
        self.log.info("refused a request from %s: %s %s", conn.client, refusal.status, refusal.message)
        with contextlib.suppress(OSError):
            conn.sock.send(error_response(refusal.status, refusal.message, refusal.path))
        self._drop(conn)

    def murder_pending(self) -> None:
        """Also refuses (408) the requests that did not arrive in time; a connection that sent
        nothing at all is closed without an answer."""
        super().murder_pending()
        now = time.monotonic()
        for conn, arrival in list(self.arrivals.items()):
            if arrival.deadline > now:
                continue
            self._forget(conn)
            if arrival.data:
                self._refuse(conn, arrival.timed_out())
            else:
                self._drop(conn)

    def handle(self, conn):
        _answering.path = getattr(conn, "request_path", None)
        return super().handle(conn)

    def handle_request(self, req, conn):
        _answering.path = getattr(req, "path", None)
        return super().handle_request(req, conn)

    def handle_error(self, req, client, addr, exc):
        if req is not None:
            _answering.path = getattr(req, "path", None)
        super().handle_error(req, client, addr, exc)


def _without_expect(request: bytes) -> bytes:
    head, sep, body = request.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if line.partition(b":")[0].strip().lower() != b"expect"]
    return b"\r\n".join(lines) + sep + body
