"""How `manage.py serve` tells that a request has fully arrived (docsmcp_site/front.py feeds it bytes).

An `Arrival` reads the request head, decides the body's framing (Content-Length, chunked, or
none), and says when the last byte is in, or why the request is refused before it is, with the
status to answer: 414 for a long request line, 431 for a large head, 413 for a body over the cap
(decided on the Content-Length, or on the chunk sizes as they come), 400 for framing it cannot
trust, 501 for a transfer coding it does not know, and 408 when the head or the body misses its
deadline. A chunked body is decoded and the request re-framed with a Content-Length, so the
application reads it like any other. No sockets here: the worker does the I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A request head (request line and header fields) larger than this is refused with 431. It bounds
# what a connection may hold before it has said what it wants; gunicorn's own bound is 800 KB.
HEAD_LIMIT = 64 * 1024
# A chunk-size line (hex size and extensions) or a trailer section longer than this is refused.
CHUNK_LINE_LIMIT = 4096


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

        anonymous = max(settings.MCP_MAX_BODY_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        keyed = max(anonymous, settings.CITELOOM_MAX_BODY_BYTES)
        return cls(header_timeout=settings.DOCSMCP_HEADER_TIMEOUT,
                   body_timeout=settings.DOCSMCP_BODY_TIMEOUT,
                   anonymous_body_bytes=anonymous, keyed_body_bytes=keyed, request_line=request_line)


@dataclass
class Refusal:
    status: int
    message: str
    path: str | None


_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
# Control characters a field value may not hold (RFC 9110 5.5: only HTAB among them); a value is trimmed
# of spaces and tabs alone, so "Transfer-Encoding: \x0bchunked" is refused, not read as chunked.
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


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
    _scanned: int = 0

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
        """Each byte of the head is scanned once, however finely the client cuts it."""
        data = self.data
        if self._scanned == 0:
            while data[:2] == b"\r\n":  # empty lines before a request line are ignored (RFC 9112 2.2)
                del data[:2]
            if data in (b"", b"\r"):
                return False
        start = max(0, self._scanned - 3)
        if self.path is None:
            line_end = data.find(b"\r\n", max(0, self._scanned - 1))
            if line_end >= 0:
                self.path = _path_of(bytes(data[:line_end]))
            if line_end > self.limits.request_line or (line_end < 0 and len(data) > self.limits.request_line + 2):
                return Refusal(414, f"the request line exceeds {self.limits.request_line} bytes", self.path)
        end = data.find(b"\r\n\r\n", start)
        scanned_to = end + 4 if end >= 0 else len(data)
        newline = data.find(b"\n", self._scanned, scanned_to)
        while newline >= 0:  # gunicorn refuses a bare LF too; refused here, it never waits for more
            if newline == 0 or data[newline - 1] != 13:
                return Refusal(400, "every line of the request head must end with CRLF", self.path)
            newline = data.find(b"\n", newline + 1, scanned_to)
        self._scanned = len(data)
        if scanned_to > HEAD_LIMIT:
            return Refusal(431, f"the request head exceeds {HEAD_LIMIT} bytes", self.path)
        if end < 0:
            return False
        self.head_end = end + 4
        self.body_started = now
        return self._frame(bytes(data[:end]))

    def _frame(self, head: bytes) -> Refusal | bool:
        lines = head.split(b"\r\n")
        self._head_lines = lines
        lengths, codings, expect, keyed, hosts = [], [], [], False, 0
        version = lines[0].rpartition(b" ")[2]
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            name = name.lower()
            if not sep:
                continue  # a malformed field: gunicorn refuses it before it reads any body
            if _CONTROL.search(value):
                shown = name.decode("latin-1")
                return Refusal(400, f"the {shown} header holds a control character (a field value may hold "
                                    "visible characters, spaces and tabs)", self.path)
            value = value.strip(b" \t")
            if name == b"host":
                hosts += 1
            elif name == b"content-length":
                lengths.append(value)
            elif name == b"transfer-encoding":
                codings.append(value.lower())
            elif name == b"expect":
                expect.append(value.lower())
            elif name == b"authorization" and value:
                keyed = _is_mcp(self.path)
        self._cap = self.limits.keyed_body_bytes if keyed else self.limits.anonymous_body_bytes
        if version == b"HTTP/1.1" and hosts != 1:  # RFC 9112 3.2
            return Refusal(400, "an HTTP/1.1 request must carry one Host header"
                                f"{'' if hosts else ' (it has none)'}", self.path)
        if codings and version != b"HTTP/1.1":  # RFC 9112 6.1: a 1.0 server cannot frame it
            return Refusal(400, "Transfer-Encoding needs HTTP/1.1; send the body with Content-Length", self.path)
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
        self.continue_needed = body_expected and b"100-continue" in expect and version == b"HTTP/1.1"
        self._pos = self.head_end
        return True

    def _too_large(self) -> Refusal:
        hint = ""
        if self._cap < self.limits.keyed_body_bytes and _is_mcp(self.path):
            hint = " (MCP_MAX_BODY_BYTES; callers with an API key may send more where a tool takes it)"
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


def _is_mcp(path: str | None) -> bool:
    return path is not None and (path == "/mcp" or path.startswith("/mcp/"))


def _path_of(request_line: bytes) -> str | None:
    parts = request_line.split(b" ")
    if len(parts) != 3:
        return None
    target = parts[1].decode("latin-1")
    if target.startswith(("http://", "https://")):
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    return target.split("?", 1)[0]
