"""How `manage.py serve` sends a response without a request thread waiting on the client (docsmcp_site/front.py).

A response larger than the socket buffers (a 6 MB llms-full.txt) written with a blocking send holds
its request thread until the client has read all but the last few hundred kilobytes: fifteen clients
reading a byte a second held every thread of the default server, and every search timed out
(docs/BENCHMARKS.md). So a request thread writes through a `HeldSocket`: what the client's socket
takes at once goes out, the rest is kept in memory and the thread moves on; the worker's event loop
sends what is kept as the client reads it (`drain`), and only then lets the connection carry its
next request or closes it.

What a worker keeps is bounded by an `OutboundBudget` (RESPONSE_HOLD_LIMIT per worker): past it,
the thread sends the rest itself, blocking, but never longer than DOCSMCP_SEND_TIMEOUT without the
client taking a byte; the event loop closes a held response's connection after the same time without
progress. So no thread waits on a client for longer than that, whatever the worker's heartbeat says.
"""

from __future__ import annotations

import errno
import os
import socket
import threading
import time
from collections import deque

# Bytes of responses one worker keeps for clients that read slowly, past which a thread sends the
# rest itself (with DOCSMCP_SEND_TIMEOUT). 15 readers of a 6 MB response hold 90 MB.
RESPONSE_HOLD_LIMIT = 256 * 1024 * 1024
# Bytes read from a file per piece when a response is a file (FileResponse): kept like any other bytes.
FILE_PIECE = 256 * 1024


class ClientTooSlow(BrokenPipeError):
    """A client took no byte of its response for DOCSMCP_SEND_TIMEOUT seconds; the connection is closed.

    A BrokenPipeError so gunicorn's thread treats it as a client gone away (logged at debug level)."""


class OutboundBudget:
    """The bytes of responses one worker holds, shared by its request threads and its event loop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self._lock:
            if self.held + size > self.limit:
                return False
            self.held += size
            return True

    def give_back(self, size: int) -> None:
        with self._lock:
            self.held -= size


class HeldSocket:
    """A client socket as a request thread's response sees it: `sendall` never waits on the client
    while the worker's budget lasts. Everything else is the socket's own."""

    def __init__(self, sock: socket.socket, budget: OutboundBudget, send_timeout: float) -> None:
        self._sock = sock
        self._budget = budget
        self._send_timeout = send_timeout
        self._pending: deque[memoryview] = deque()
        self.pending_bytes = 0
        self.last_progress = time.monotonic()

    def __getattr__(self, name: str):
        return getattr(self._sock, name)

    def sendall(self, data, flags: int = 0) -> None:
        view = memoryview(data).cast("B")
        if not self._pending:
            view = view[self._send_now(view):]
            if not view:
                return
        if self._budget.take(len(view)):
            self._pending.append(memoryview(bytes(view)))
            self.pending_bytes += len(view)
            return
        self._send_waiting(view)

    def send(self, data, flags: int = 0) -> int:
        self.sendall(data)
        return len(data)

    def sendfile(self, file, offset: int = 0, count: int | None = None) -> int:
        """gunicorn sends a file response with the socket's sendfile, which would block: the file is
        read in pieces and kept like any other bytes instead."""
        sent = 0
        while count is None or sent < count:
            want = FILE_PIECE if count is None else min(FILE_PIECE, count - sent)
            piece = os.pread(file.fileno(), want, offset + sent)
            if not piece:
                break
            self.sendall(piece)
            sent += len(piece)
        return sent

    def _send_now(self, view: memoryview) -> int:
        """Sends what the socket takes without waiting; the count sent."""
        sent = 0
        while sent < len(view):
            try:
                sent += self._sock.send(view[sent:], socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
        if sent:
            self.last_progress = time.monotonic()
        return sent

    def _send_waiting(self, view: memoryview) -> None:
        """Over the budget: the thread sends what is kept and `view` itself, waiting on the client for
        at most DOCSMCP_SEND_TIMEOUT between two bytes it takes."""
        previous = self._sock.gettimeout()
        self._sock.settimeout(self._send_timeout)
        try:
            while self._pending:
                piece = self._pending.popleft()
                self._sock.sendall(piece)
                self._forget(len(piece))
            self._sock.sendall(view)
        except TimeoutError as exc:
            raise ClientTooSlow(errno.EPIPE, f"the client read nothing for {self._send_timeout:g} s "
                                             "(DOCSMCP_SEND_TIMEOUT)") from exc
        finally:
            self._sock.settimeout(previous)

    def drain(self) -> bool:
        """In the event loop, when the socket is writable: sends what the client takes now; True once
        nothing is kept. An OSError means the client has gone."""
        while self._pending:
            piece = self._pending[0]
            try:
                sent = self._sock.send(piece, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return False
            self.last_progress = time.monotonic()
            self._forget(sent)
            if sent == len(piece):
                self._pending.popleft()
            else:
                self._pending[0] = piece[sent:]
        return True

    def stalled(self, now: float) -> bool:
        return now - self.last_progress > self._send_timeout

    def discard(self) -> None:
        """Drops what is kept (the connection is being closed) and gives its bytes back to the budget."""
        self._budget.give_back(self.pending_bytes)
        self.pending_bytes = 0
        self._pending.clear()

    def _forget(self, size: int) -> None:
        self.pending_bytes -= size
        self._budget.give_back(size)
