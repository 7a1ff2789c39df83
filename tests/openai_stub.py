"""A real HTTP server on 127.0.0.1 speaking the OpenAI wire protocol for /v1/embeddings and
/v1/chat/completions, so tests exercise the real `openai` client, its serialisation and our retry code.

    with openai_stub(embedding_dim=16, fail_first=2, fail_status=429) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test")
        ...
        assert len(stub.embedding_requests) == 3

Failures (fail_first, fail_always) apply to every POST, whichever endpoint, in arrival order.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from hashlib import blake2b
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

ChatReply = str | Sequence[str] | Callable[[dict], str]

_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test."),
    404: ("invalid_request_error", None, "Unknown URL."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def stub_vector(text: str, dimensions: int) -> np.ndarray:
    """The (unnormalised) vector the stub returns for `text`: deterministic, so tests can predict answers."""
    seed = int.from_bytes(blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(dimensions).astype(np.float32)


@dataclass
class StubRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict
    status: int = 0
    at: float = field(default_factory=time.monotonic)


class OpenAIStub:
    """Holds the configuration the handler reads and the requests it records; mutable between calls."""

    def __init__(
        self,
        *,
        embedding_dim: int = 16,
        chat_reply: ChatReply = "stub reply",
        fail_first: int = 0,
        fail_status: int = 429,
        retry_after: str | None = "1",
        fail_always: int | None = None,
    ):
        self.embedding_dim = embedding_dim
        self.chat_reply = chat_reply
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.retry_after = retry_after
        self.fail_always = fail_always
        self.requests: list[StubRequest] = []
        self._lock = threading.Lock()
        self._chat_calls = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "stub not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def embedding_requests(self) -> list[StubRequest]:
        return [request for request in self.requests if request.path.endswith("/embeddings")]

    @property
    def chat_requests(self) -> list[StubRequest]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    def start(self) -> OpenAIStub:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.stub = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _record(self, request: StubRequest) -> int | None:
        """Records the request and returns the failure status it should get, if any."""
        with self._lock:
            self.requests.append(request)
            if self.fail_always is not None:
                return self.fail_always
            if sum(1 for r in self.requests if r.method == "POST") <= self.fail_first:
                return self.fail_status
            return None

    def _next_chat_reply(self, body: dict) -> str:
        reply = self.chat_reply
        if callable(reply):
            return reply(body)
        if isinstance(reply, str):
            return reply
        with self._lock:
            index = min(self._chat_calls, len(reply) - 1)
            self._chat_calls += 1
        return reply[index]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    @property
    def stub(self) -> OpenAIStub:
        return self.server.stub  # type: ignore[attr-defined]

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        request = StubRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        failure = self.stub._record(request)
        if failure is not None:
            request.status = failure
            headers = (
                {"Retry-After": self.stub.retry_after} if failure == 429 and self.stub.retry_after else {}
            )
            self._error(failure, headers=headers)
        elif self.path.rstrip("/").endswith("/embeddings"):
            request.status = self._embeddings(body)
        elif self.path.rstrip("/").endswith("/chat/completions"):
            request.status = self._chat(body)
        else:
            request.status = 404
            self._error(404)

    def do_GET(self):
        self.stub._record(StubRequest("GET", self.path, dict(self.headers.items()), {}, status=404))
        self._error(404)

    def _embeddings(self, body: dict) -> int:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or any(not isinstance(t, str) or t == "" for t in inputs)
        ):
            self._error(400, message="'$.input' is invalid. Please check the API reference.")
            return 400
        dimensions = int(body.get("dimensions") or self.stub.embedding_dim)
        data = []
        for index, text in enumerate(inputs):
            vector = stub_vector(text, dimensions)
            if body.get("encoding_format") == "base64":
                embedding: object = base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
            else:
                embedding = [float(x) for x in vector]
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(text.split()) for text in inputs)
        self._json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", ""),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )
        return 200

    def _chat(self, body: dict) -> int:
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            self._error(400, message="'messages' must be a non-empty array.")
            return 400
        reply = self.stub._next_chat_reply(body)
        model = body.get("model", "")
        created = int(time.time())
        prompt_tokens = sum(
            len(str(m.get("content", "")).split()) for m in body["messages"] if isinstance(m, dict)
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(reply.split()),
            "total_tokens": prompt_tokens + len(reply.split()),
        }
        ident = f"chatcmpl-stub-{len(self.stub.requests)}"
        if body.get("stream"):
            self._stream_chat(ident, created, model, reply)
            return 200
        self._json(
            200,
            {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            },
        )
        return 200

    def _stream_chat(self, ident: str, created: int, model: str, reply: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}
        for delta, finish in (({"role": "assistant", "content": reply}, None), ({}, "stop")):
            chunk = {
                **base,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _error(
        self, status: int, *, message: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        kind, code, default = _ERRORS.get(status, ("server_error", None, f"HTTP {status}"))
        payload = {"error": {"message": message or default, "type": kind, "param": None, "code": code}}
        self._json(status, payload, headers=headers)

    def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def openai_stub(**options) -> Iterator[OpenAIStub]:
    """Starts an OpenAIStub (see its keyword arguments) for the duration of a with block."""
    stub = OpenAIStub(**options)
    stub.start()
    try:
        yield stub
    finally:
        stub.stop()
