"""A request thread writes its response through a HeldSocket (docsmcp_site/departure.py): it never waits on a
client that reads slowly while the worker's budget lasts, and past the budget waits at most DOCSMCP_SEND_TIMEOUT."""

from __future__ import annotations

import socket
import threading

import pytest

from docsmcp_site.departure import ClientTooSlow, HeldSocket, OutboundBudget

RESPONSE = bytes(range(256)) * 40_000  # 10 MB: more than both socket buffers hold


@pytest.fixture
def pair():
    server, client = socket.socketpair()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    client.settimeout(10)
    yield server, client
    server.close()
    client.close()


def _read(client: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        data += client.recv(1 << 20)
    return bytes(data)


def test_a_response_the_client_does_not_read_is_kept_and_sent_as_the_client_reads(pair):
    server, client = pair
    budget = OutboundBudget(64 * 1024 * 1024)
    held = HeldSocket(server, budget, send_timeout=5)
    held.sendall(RESPONSE[:10])
    held.sendall(RESPONSE[10:])  # returns at once, though the client has read nothing
    assert 0 < held.pending_bytes == budget.held < len(RESPONSE)
    received = bytearray()
    while not held.drain():
        received += client.recv(1 << 20)
    received += _read(client, len(RESPONSE) - len(received))
    assert bytes(received) == RESPONSE
    assert held.pending_bytes == budget.held == 0


def test_past_the_budget_the_thread_waits_on_the_client_no_longer_than_the_send_timeout(pair):
    server, client = pair
    budget = OutboundBudget(1024 * 1024)
    held = HeldSocket(server, budget, send_timeout=0.5)
    with pytest.raises(ClientTooSlow, match="DOCSMCP_SEND_TIMEOUT"):
        held.sendall(RESPONSE)
    held.discard()
    assert budget.held == 0


def test_past_the_budget_a_client_that_reads_gets_the_whole_response(pair):
    server, client = pair
    budget = OutboundBudget(1024 * 1024)
    held = HeldSocket(server, budget, send_timeout=5)
    held.sendall(RESPONSE[:900_000])  # kept: within the budget
    assert held.pending_bytes > 0
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(_read(client, len(RESPONSE))))
    reader.start()
    held.sendall(RESPONSE[900_000:])  # over it: sent by this thread, what was kept first
    assert held.pending_bytes == 0 and held.drain()
    reader.join(10)
    assert received == [RESPONSE] and budget.held == 0


def test_a_file_response_is_kept_like_any_other_bytes(pair, tmp_path):
    server, client = pair
    path = tmp_path / "page.txt"
    path.write_bytes(RESPONSE)
    held = HeldSocket(server, OutboundBudget(64 * 1024 * 1024), send_timeout=5)
    with path.open("rb") as file:
        assert held.sendfile(file, offset=100, count=5_000_000) == 5_000_000
    received = bytearray()
    while not held.drain():
        received += client.recv(1 << 20)
    received += _read(client, 5_000_000 - len(received))
    assert bytes(received) == RESPONSE[100:5_000_100]
