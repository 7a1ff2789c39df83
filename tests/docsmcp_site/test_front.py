"""`manage.py serve` receives each request whole before a thread takes it (docsmcp_site/front.py):
clients that trickle their requests cost a socket, not a thread, and what the server refuses on
its own it refuses in JSON."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.db import connection

from docsmcp_site.arrival import Arrival, Limits, Refusal
from tests.conftest import ROOT, SAMPLE_DOCS
from tests.corpus.test_celery_worker import _database_url
from tests.docsmcp_site.test_deploy_e2e import free_port, stop

ACCEPT = "application/json, text/event-stream"
HEAD = ("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\n")
SEARCH = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "search_docs", "arguments": {"query": "refund a payment", "limit": 3}}}
# serve's request threads: fewer than the slow connections the tests open.
THREADS = 2
# DOCSMCP_SEND_TIMEOUT of the server: seconds a client may take none of its response.
SEND_TIMEOUT = 6
# DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS of the server: above what the other tests open at once.
PER_ADDRESS = 12


# A response larger than the socket buffers on both sides (4 MB on this kernel): a corpus of three 2 MB pages,
# whose llms-full.txt a slow reader asks for.
BIG_PAGE = "The worker sends each response from its event loop while the client reads it slowly. " * 12


@pytest.fixture(scope="module")
def big_build_dir(tmp_path_factory) -> tuple[Path, Path]:
    from retrieval.embeddings import get_provider
    from retrieval.ingest.build import BuildRequest, build_index

    root = tmp_path_factory.mktemp("big")
    source = root / "docs"
    source.mkdir()
    for n in range(3):
        sections = "".join(f"## Part {k}\n\n{BIG_PAGE}\n\n" for k in range(2000))
        (source / f"big{n}.md").write_text(f"# Big page {n}\n\n{sections}")
    build_index(BuildRequest(source, root / "build", "big-build", "big", provider=get_provider("none"), workers=1))
    return source, root / "build"


def _activate(name: str, source: Path, build_dir: Path, provider: str):
    from corpus.execution import build_activate
    from corpus.models import BuildRun, Corpus
    from retrieval.format.metadata import read_metadata

    metadata = read_metadata(build_dir)
    corpus = Corpus.objects.create(name=name, source_dir=str(source), settings={"embedding_provider": provider})
    build = BuildRun.objects.create(corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL,
                                    status=BuildRun.COMPLETE, index_path=str(build_dir),
                                    embedding_provider=provider, embedding=metadata.embedding, stats=metadata.stats)
    build_activate(build=build)
    return corpus


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker, sample_build_dir, big_build_dir, tmp_path_factory):
    """`manage.py serve` (one worker, THREADS threads) over the test database's `sample` and `big` corpora."""
    if connection.vendor != "postgresql":
        pytest.skip("the server subprocess needs PostgreSQL (set DATABASE_URL) to share the test database")
    from corpus.models import Corpus

    with django_db_blocker.unblock():
        corpora = [_activate("sample", SAMPLE_DOCS, sample_build_dir, "hash"), _activate("big", *big_build_dir, "none")]
    tmp = tmp_path_factory.mktemp("front")
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "MCP_"))}
    environment.update(DJANGO_SETTINGS_MODULE="docsmcp_site.settings", DATABASE_URL=_database_url(),
                       DOCSMCP_SECRET_KEY_FILE=str(tmp / "secret_key"), DOCSMCP_INDEX_ROOT=str(tmp / "idx"),
                       MCP_RATE_LIMIT_REDIS_URL="", DOCSMCP_DEFAULT_CORPUS="sample",
                       DOCSMCP_HEADER_TIMEOUT="5", DOCSMCP_BODY_TIMEOUT="5", DOCSMCP_SEND_TIMEOUT=str(SEND_TIMEOUT),
                       DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS=str(PER_ADDRESS))
    log = tmp / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "manage.py", "serve", "--no-worker", "--port", str(port),
                                   "--workers", "1", "--threads", str(THREADS)],
                                  cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health/", timeout=30).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.25)
        yield port
    finally:
        stop(server)
        with django_db_blocker.unblock():
            Corpus.objects.filter(pk__in=[corpus.pk for corpus in corpora]).delete()


def _search(port: int, **kwargs) -> httpx.Response:
    kwargs.setdefault("headers", {})
    kwargs["headers"].update({"Accept": ACCEPT, "MCP-Protocol-Version": "2025-11-25"})
    return httpx.post(f"http://127.0.0.1:{port}/mcp/", timeout=60, **kwargs)


def _raw(port: int, request: bytes) -> tuple[int, dict]:
    """Sends `request` as it is and reads the answer: status and JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower(), answer
    return int(head.split(b" ")[1]), json.loads(body)


@pytest.mark.slow
def test_clients_trickling_their_requests_leave_the_threads_to_searches(served):
    """More half-sent requests than the server has threads, heads and bodies: a search still gets through."""
    slow = []
    try:
        for n in range(THREADS + 2):
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode()
            sock = socket.create_connection(("127.0.0.1", served), timeout=60)
            sock.sendall((HEAD.format(path="/mcp/") + f"Content-Length: {len(body)}\r\n\r\n").encode() + body[:5])
            slow.append(sock)
            sock = socket.create_connection(("127.0.0.1", served), timeout=60)
            sock.sendall(HEAD.format(path="/mcp/").encode()[:40])
            slow.append(sock)
        response = _search(served, json=SEARCH)
        assert response.status_code == 200, response.text
        assert response.json()["result"]["structuredContent"]["hits"]
    finally:
        for sock in slow:
            sock.close()


def _slow_reader(port: int):
    """A client that asks for the large response and reads none of it (through a small receive buffer)."""
    request = f"GET /c/big/llms-full.txt HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(60)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request)
    assert sock.recv(12) == b"HTTP/1.1 200"
    return sock


def _read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """Reads the rest of one chunked response from `sock` (the first 12 bytes already read): head and decoded
    body, which is short when the server closed the connection before the end."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, raw = data.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower(), head
    while not raw.endswith(b"\r\n0\r\n\r\n") and (chunk := sock.recv(1 << 20)):
        raw += chunk
    body, pos = b"", 0
    while (end := raw.find(b"\r\n", pos)) != -1 and (size := int(raw[pos:end], 16)):
        body += raw[end + 2:end + 2 + size]
        pos = end + 2 + size + 2
    return head, body


@pytest.mark.slow
def test_clients_reading_a_large_response_slowly_leave_the_threads_to_searches(served):
    """More clients than threads ask for a 6 MB response and read none of it: searches are answered, and a
    reader that then reads gets the whole response."""
    readers = [_slow_reader(served) for _ in range(THREADS + 2)]
    try:
        response = httpx.post(f"http://127.0.0.1:{served}/mcp/", json=SEARCH, timeout=30,
                              headers={"Accept": ACCEPT, "MCP-Protocol-Version": "2025-11-25"})
        assert response.status_code == 200, response.text
        assert response.json()["result"]["structuredContent"]["hits"]
        expected = httpx.get(f"http://127.0.0.1:{served}/c/big/llms-full.txt", timeout=30).content
        assert len(expected) > 6_000_000
        head, body = _read_response(readers[0])
        assert body == expected
    finally:
        for sock in readers:
            sock.close()


@pytest.mark.slow
def test_a_client_that_takes_none_of_its_response_for_the_send_timeout_is_disconnected(served):
    reader = _slow_reader(served)
    try:
        time.sleep(SEND_TIMEOUT + 3)
        head, body = _read_response(reader)
        assert 0 < len(body) < 6_000_000  # cut off: the server closed the connection
    finally:
        reader.close()


@pytest.mark.slow
def test_one_address_holding_its_share_of_connections_is_refused_more_and_others_are_served(served):
    """Connections that send nothing, from one address, up to the cap: the next from it is answered 503 at once,
    and a client at another address is served."""
    idle = [socket.create_connection(("127.0.0.1", served), timeout=30) for _ in range(PER_ADDRESS)]
    try:
        with socket.create_connection(("127.0.0.1", served), timeout=30) as over:
            answer = over.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503") and b"DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS" in answer
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=30) as other:
            response = other.post(f"http://127.0.0.1:{served}/mcp/", json=SEARCH,
                                  headers={"Accept": ACCEPT, "MCP-Protocol-Version": "2025-11-25"})
        assert response.status_code == 200 and response.json()["result"]["structuredContent"]["hits"]
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.slow
def test_a_request_whose_head_does_not_arrive_in_time_is_answered_408(served):
    status, body = _raw(served, HEAD.format(path="/mcp/").encode()[:40])
    assert status == 408
    assert body["error"]["code"] == -32600 and "DOCSMCP_HEADER_TIMEOUT" in body["error"]["message"]


@pytest.mark.slow
def test_a_chunked_request_body_is_read(served):
    payload = json.dumps(SEARCH).encode()
    response = _search(served, content=iter([payload[:20], payload[20:]]),  # an iterator: sent chunked
                       headers={"Content-Type": "application/json"})
    assert response.request.headers["Transfer-Encoding"] == "chunked"
    assert response.status_code == 200, response.text
    assert response.json()["result"]["structuredContent"]["hits"]


@pytest.mark.slow
def test_an_anonymous_body_over_the_limit_is_refused_413_before_it_is_sent(served):
    """citeloom takes up to 32 MiB from keys that may write; an anonymous 20 MB body is refused on its headers."""
    status, body = _raw(served, (HEAD.format(path="/mcp/citeloom/") + "Content-Length: 20000000\r\n\r\n").encode())
    assert status == 413
    assert body["error"]["code"] == -32600 and "1048576 bytes" in body["error"]["message"]


@pytest.mark.parametrize(("path", "extra", "status"), [
    ("/mcp/?q=" + "a" * 5000, "", 414),
    ("/mcp/", "X-Padding: " + "a" * 70_000 + "\r\n", 431),
    ("/mcp/", "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", 400),
])
@pytest.mark.slow
def test_what_the_server_refuses_itself_is_a_json_rpc_error_under_mcp(served, path, extra, status):
    got, body = _raw(served, (HEAD.format(path=path) + extra + "\r\n").encode())
    assert got == status and body["jsonrpc"] == "2.0" and body["error"]["code"] == -32600


@pytest.mark.slow
def test_what_the_server_refuses_itself_is_the_api_error_shape_elsewhere(served):
    got, body = _raw(served, ("GET /api/v1/corpora HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: "
                              + "a" * 9000 + "\r\n\r\n").encode())  # one field over gunicorn's 8190 bytes
    assert got == 431 and body["error"]["code"] == "header_fields_too_large"


# --- the MCP view, under any WSGI server ------------------------------------------------------------


@pytest.mark.django_db
def test_an_anonymous_caller_is_held_to_mcp_max_body_bytes_on_every_profile(client, settings):
    settings.MCP_MAX_BODY_BYTES = 2000
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"pad": "x" * 3000}}})
    response = client.post("/mcp/citeloom/", body, content_type="application/json", HTTP_ACCEPT=ACCEPT)
    assert response.status_code == 413
    assert "2000 bytes" in response.json()["error"]["message"]


@pytest.mark.django_db
def test_a_chunked_body_a_server_decoded_is_read(client):
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
    # What gunicorn hands the view for a chunked request: no Content-Length, the decoded body, and its end marked.
    response = client.post("/mcp/", content_type="application/json", HTTP_ACCEPT=ACCEPT, CONTENT_LENGTH="",
                           HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input": io.BytesIO(body),
                                                                "wsgi.input_terminated": True})
    assert response.status_code == 200, response.content
    assert response.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}


# --- how a request is received ----------------------------------------------------------------------

LIMITS = Limits(header_timeout=10, body_timeout=30, anonymous_body_bytes=100, keyed_body_bytes=1000)


def test_a_chunked_body_is_passed_on_decoded_with_a_content_length_and_what_follows_is_kept():
    arrival = Arrival(LIMITS, started=0)
    head = b"POST /mcp/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert arrival.feed(head + b"4\r\nabcd\r\n3;ext=1\r\nefg\r\n", 1) is False
    assert arrival.feed(b"0\r\n\r\nGET / HTTP/1.1\r\n", 2) is True
    assert arrival.request == b"POST /mcp/ HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\nabcdefg"
    assert arrival.rest == b"GET / HTTP/1.1\r\n"


def test_a_key_lets_a_body_past_the_anonymous_limit_and_no_further():
    head = "POST /mcp/citeloom/ HTTP/1.1\r\nHost: h\r\n{auth}Content-Length: {n}\r\n\r\n"
    assert Arrival(LIMITS, 0).feed(head.format(auth="", n=101).encode(), 1) == Refusal(
        413, "the body exceeds 100 bytes (MCP_MAX_BODY_BYTES; callers with an API key may send more where a "
             "tool takes it)", "/mcp/citeloom/")
    keyed = Arrival(LIMITS, 0)
    assert keyed.feed(head.format(auth="Authorization: Bearer k\r\n", n=1000).encode(), 1) is False
    assert keyed.feed(b"x" * 1000, 2) is True
    assert Arrival(LIMITS, 0).feed(head.format(auth="Authorization: Bearer k\r\n", n=1001).encode(), 1).status == 413
    elsewhere = head.replace("/mcp/citeloom/", "/api/v1/corpora").format(auth="Authorization: Bearer k\r\n", n=101)
    assert Arrival(LIMITS, 0).feed(elsewhere.encode(), 1).status == 413  # only MCP tools take more


def test_a_chunked_body_over_the_limit_is_refused_as_soon_as_its_chunk_sizes_say_so():
    arrival = Arrival(LIMITS, started=0)
    assert arrival.feed(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n60\r\n", 1) is False
    assert arrival.feed(b"x" * 0x60 + b"\r\n10\r\n", 2).status == 413


def test_http_1_0_without_host_and_tabs_around_a_value_are_still_read():
    arrival = Arrival(LIMITS, started=0)
    assert arrival.feed(b"POST /mcp/ HTTP/1.0\r\nContent-Length:\t5 \r\n\r\nhello", 1) is True


def test_a_request_sent_a_byte_at_a_time_arrives_whole_at_its_last_byte():
    request = (b"\r\nPOST /mcp/ HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
    arrival = Arrival(LIMITS, started=0)
    outcomes = [arrival.feed(request[k:k + 1], k) for k in range(len(request))]
    assert outcomes == [False] * (len(request) - 1) + [True]
    assert arrival.request == request[2:] and arrival.path == "/mcp/"


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET /mcp/ HTTP/1.1\nHost: h\r\n\r\n", 400),
    (b"GET /mcp/ HTTP/1.1\r\nHost: h\n", 400),
    (b"GET /" + b"a" * 5000, 414),
    (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 20_000, 431),
    (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400),
    # Where gunicorn answers 400, so does the server, before any body is read (a front and the server
    # behind it must frame a request alike, or a smuggled one slips between them).
    (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \x0bchunked\r\n\r\n0\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \x0c5\r\n\r\nhello", 400),
    (b"POST / HTTP/1.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
])
def test_a_request_the_server_cannot_frame_safely_is_refused_before_a_thread_sees_it(request_bytes, status):
    outcome = Arrival(LIMITS, started=0).feed(request_bytes, 1)
    assert isinstance(outcome, Refusal) and outcome.status == status
