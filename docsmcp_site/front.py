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
over 64 KiB (arrival.HEAD_LIMIT) is 431, a request line over gunicorn's limit_request_line 414, and a
declared body over the cap 413 before any of it is read (MCP_MAX_BODY_BYTES without an
Authorization header; with one, also CITELOOM_MAX_BODY_BYTES). A chunked body is decoded here and
passed on with a Content-Length, so every view reads it like any other body.

The way out is the same in reverse (docsmcp_site/departure.py): a thread writes its response through
a `HeldSocket` that keeps what the client does not take at once, and the event loop sends the rest
as the client reads it before the connection carries another request, so a client reading a large
response a byte a second holds memory, no thread; DOCSMCP_SEND_TIMEOUT bounds how long it may read
nothing.

What the server answers itself (these refusals, and gunicorn's own 400/414/431/500 pages) is JSON
in the shape of the surface asked: a JSON-RPC error envelope under /mcp, the REST API's
`{"error": {...}}` elsewhere.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import json
import selectors
import threading
import time
from concurrent import futures
from functools import partial
from typing import Any

from gunicorn import http, util
from gunicorn.http2 import negotiation
from gunicorn.workers.gthread import TConn, ThreadWorker

from docsmcp_site.arrival import Arrival, Limits, Refusal
from docsmcp_site.departure import RESPONSE_HOLD_LIMIT, HeldSocket, OutboundBudget

# Bytes taken from a socket per readiness event.
RECV_BYTES = 256 * 1024
# Bytes a worker holds for requests still arriving, past which a request larger than the anonymous
# body limit (only keyed callers send those) is refused 503: 1,000 such uploads must not take 32 GB.
LARGE_HOLD_LIMIT = 256 * 1024 * 1024
# Seconds between two heartbeats to the master (at most half the worker timeout). gthread writes one,
# a utime call, on every pass of its event loop, several per request, though the master only checks
# it against --timeout (60 s).
HEARTBEAT_SECONDS = 1.0

REASONS = {
    400: "Bad Request", 408: "Request Timeout", 413: "Payload Too Large", 414: "URI Too Long",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
    503: "Service Unavailable",
}
# The REST API's codes for the statuses the server answers itself (common/api/errors.py).
API_CODES = {
    400: "bad_request", 403: "forbidden", 408: "request_timeout", 413: "payload_too_large",
    414: "uri_too_long", 417: "expectation_failed", 431: "header_fields_too_large", 500: "internal_error",
    501: "not_implemented", 503: "service_unavailable",
}
JSONRPC_INVALID_REQUEST, JSONRPC_INTERNAL_ERROR, JSONRPC_SERVER_ERROR = -32600, -32603, -32000


def error_response(status: int, message: str, path: str | None) -> bytes:
    """A complete `Connection: close` response carrying the error in the shape of `path`'s surface."""
    reason = REASONS.get(status, "Error")
    text = f"{reason}: {message}" if message else reason
    if path is not None and (path == "/mcp" or path.startswith("/mcp/")):
        code = (JSONRPC_SERVER_ERROR if status == 503 else JSONRPC_INTERNAL_ERROR if status >= 500
                else JSONRPC_INVALID_REQUEST)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}
    else:
        body = {"error": {"code": API_CODES.get(status, "bad_request"), "message": text, "details": {}}}
    payload = json.dumps(body).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + payload


# Seconds between two log lines about one address's refused connections (a flood would fill the log).
REFUSAL_LOG_SECONDS = 60.0
# Said before closing a connection past the cap: the path is not known yet, so in the REST API's shape.
TOO_MANY_CONNECTIONS = "too many open connections from your address (DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS)"


class CountedConn(TConn):
    """A connection that gives its place back to its address's count when it closes."""

    def __init__(self, cfg, sock, client, server, counts: collections.Counter, address: str) -> None:
        super().__init__(cfg, sock, client, server)
        self._counts, self._address = counts, address
        counts[address] += 1

    def close(self, graceful: bool = False) -> None:
        if self._counts is not None:
            self._counts[self._address] -= 1
            if self._counts[self._address] <= 0:
                del self._counts[self._address]
            self._counts = None
        super().close(graceful)


# The path of the request a thread is answering, for the JSON body of gunicorn's own error pages.
_answering = threading.local()


def _receive(sock) -> bytes | None:
    """What the socket holds (b"" once the client has closed it), or None when nothing is there yet."""
    try:
        return sock.recv(RECV_BYTES)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


def write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's `util.write_error` (an HTML page), as JSON in the project's error shapes."""
    util.write_nonblock(sock, error_response(status_int, mesg, getattr(_answering, "path", None)))


class BufferingThreadWorker(ThreadWorker):
    """gunicorn's gthread worker, with each request received in the event loop before a thread takes it."""

    def init_process(self) -> None:
        self.limits = Limits.from_settings(request_line=self.cfg.limit_request_line or 4094)
        self.arrivals: dict[Any, Arrival] = {}
        # Connections whose response the loop is still sending (docsmcp_site/departure.py), with
        # what their thread answered (keep the connection alive or not).
        self.departures: dict[Any, bool] = {}
        self.outbound = OutboundBudget(RESPONSE_HOLD_LIMIT)
        from django.conf import settings

        self.send_timeout = settings.DOCSMCP_SEND_TIMEOUT
        # Open connections per client address (DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS), and when each address's
        # refusals were last logged.
        self.per_address_cap = settings.DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS
        self.connections_from: collections.Counter = collections.Counter()
        self.refusals_logged: dict[str, float] = {}
        self.last_heartbeat = float("-inf")
        util.write_error = write_json_error
        super().init_process()

    def accept(self, listener) -> None:
        """gthread's accept, holding each client address to DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS open connections:
        past it a connection is answered 503 and closed at once, so one address cannot take every place this
        worker has (worker_connections) with connections that send nothing."""
        try:
            client_sock, client_addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        address = client_addr[0] if isinstance(client_addr, tuple) else ""
        if self.per_address_cap and self.connections_from[address] >= self.per_address_cap:
            with contextlib.suppress(OSError):
                client_sock.setblocking(False)
                client_sock.send(error_response(503, TOO_MANY_CONNECTIONS, None))
            util.close(client_sock)
            now = time.monotonic()
            if now - self.refusals_logged.get(address, float("-inf")) >= REFUSAL_LOG_SECONDS:
                if len(self.refusals_logged) > 10_000:
                    self.refusals_logged.clear()
                self.refusals_logged[address] = now
                self.log.warning("refusing connections from %s: it holds %d (DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS)",
                                 address, self.connections_from[address])
            return
        self.nr_conns += 1
        client_sock.setblocking(True)
        conn = CountedConn(self.cfg, client_sock, client_addr, listener.getsockname(), self.connections_from, address)
        self.enqueue_req(conn)

    def notify(self) -> None:
        now = time.monotonic()
        if now - self.last_heartbeat >= min(HEARTBEAT_SECONDS, self.timeout / 2 or HEARTBEAT_SECONDS):
            self.last_heartbeat = now
            super().notify()

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
        if conn.sock.getblocking():  # only a connection with read-ahead bytes comes here blocking
            conn.sock.setblocking(False)
        # A kept-alive connection comes here because it is readable: most requests are read now,
        # without another round through the selector.
        chunk = _receive(conn.sock)
        if chunk == b"":
            self._drop(conn)
            return
        if chunk is not None and self._advance(conn, arrival, chunk):
            return
        self.arrivals[conn] = arrival
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))

    def _on_readable(self, conn, sock) -> None:
        chunk = _receive(sock)
        arrival = self.arrivals.get(conn)
        if chunk is None or arrival is None:  # nothing yet, or refused earlier in this round of events
            return
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
            if len(arrival.data) > self.limits.anonymous_body_bytes and self._holding() > LARGE_HOLD_LIMIT:
                self._refuse(conn, Refusal(503, "this server is receiving too many large requests at once; "
                                                "retry in a few seconds", arrival.path))
                return True
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

    def _holding(self) -> int:
        return sum(len(arrival.data) for arrival in self.arrivals.values())

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
        for conn in [conn for conn in self.departures if conn.held.stalled(now)]:
            self.log.info("closed the connection of %s: it read nothing of its response for %g s "
                          "(DOCSMCP_SEND_TIMEOUT)", conn.client, self.send_timeout)
            self._abandon(conn)

    def handle(self, conn):
        _answering.path = getattr(conn, "request_path", None)
        return super().handle(conn)

    def handle_request(self, req, conn):
        """Answers through a HeldSocket: the thread is free as soon as the response is written, and
        the event loop sends what the client has not taken yet (finish_request)."""
        _answering.path = getattr(req, "path", None)
        if not self._buffers(conn):
            return super().handle_request(req, conn)
        raw = conn.sock
        conn.held = conn.sock = HeldSocket(raw, self.outbound, self.send_timeout)
        try:
            return super().handle_request(req, conn)
        except BaseException:
            conn.held.discard()
            raise
        finally:
            conn.sock = raw

    def finish_request(self, conn, fs):
        """In the event loop, after a thread's answer: a response the client has not taken whole is sent
        from here as the client reads it; then the connection is kept alive or closed as the thread said."""
        held = getattr(conn, "held", None)
        if held is not None and held.pending_bytes and not fs.cancelled() and fs.exception() is None:
            self.departures[conn] = bool(fs.result())
            with contextlib.suppress(OSError):
                conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self._on_writable, conn))
            return
        if held is not None:
            held.discard()
            conn.held = None
        super().finish_request(conn, fs)

    def _on_writable(self, conn, sock) -> None:
        try:
            done = conn.held.drain()
        except OSError:
            self._abandon(conn)
            return
        if done:
            keepalive = self.departures.pop(conn)
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(conn.sock)
            conn.held = None
            answered: futures.Future = futures.Future()
            answered.set_result(keepalive)
            super().finish_request(conn, answered)

    def _abandon(self, conn) -> None:
        """The client has gone, or took nothing for DOCSMCP_SEND_TIMEOUT: what is kept is dropped."""
        self.departures.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)
        conn.held.discard()
        conn.held = None
        self._drop(conn)

    def handle_error(self, req, client, addr, exc):
        if req is not None:
            _answering.path = getattr(req, "path", None)
        super().handle_error(req, client, addr, exc)


def _without_expect(request: bytes) -> bytes:
    head, sep, body = request.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if line.partition(b":")[0].strip().lower() != b"expect"]
    return b"\r\n".join(lines) + sep + body
