"""Idle connections from one address: N sockets from 127.0.0.1 that send nothing (each reopened as soon as the
server closes it), while an ordinary client at another loopback address (127.0.0.2) searches every 0.2 s.

    python bench/idle_connections.py --base http://127.0.0.1:8001 --search /mcp/ --connections 3000 --seconds 30

Standard library only. A server that lets one address take every connection place its workers have (gunicorn's worker_connections,
1,000 each) fails the ordinary searches; `manage.py serve` holds each address to
DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS per worker. Prints one line: the searches' outcomes, p50 and max, and how
many idle connections were open at the end and how many the server refused. Exit status 1 when any search
failed or took 1 s or more.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import selectors
import socket
import time
import urllib.parse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="http://127.0.0.1:8001")
    parser.add_argument("--search", default="/mcp/")
    parser.add_argument("--query", default="install")
    parser.add_argument("--connections", type=int, default=3000)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--from", dest="source", default="127.0.0.2", help="the ordinary client's source address")
    args = parser.parse_args()
    url = urllib.parse.urlsplit(args.base)
    target = (url.hostname, url.port or 80)
    poller = selectors.DefaultSelector()
    counts: collections.Counter = collections.Counter()

    def open_one() -> None:
        sock = socket.socket()
        sock.setblocking(False)
        try:
            sock.connect_ex(target)
            poller.register(sock, selectors.EVENT_READ)
        except OSError:
            sock.close()
            counts["open failed"] += 1

    for _ in range(args.connections):
        open_one()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": args.query}}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    latencies, outcomes = [], collections.Counter()
    stop = time.monotonic() + args.seconds
    next_search = time.monotonic() + 2
    while time.monotonic() < stop:
        for key, _ in poller.select(timeout=0.05):  # the server answered (503) or closed: open another
            sock = key.fileobj
            try:
                data = sock.recv(4096)
            except OSError:
                data = b""
            counts["refused 503" if data.startswith(b"HTTP/1.1 503") else "closed"] += 1
            poller.unregister(sock)
            sock.close()
            open_one()
        if time.monotonic() >= next_search:
            started = time.monotonic()
            # a new connection for each search, as a new client's would be
            client = http.client.HTTPConnection(*target, timeout=10, source_address=(args.source, 0))
            try:
                client.request("POST", args.search, body=json.dumps(body),
                               headers={**headers, "Content-Type": "application/json"})
                response = client.getresponse()
                response.read()
                outcomes[response.status] += 1
            except (OSError, http.client.HTTPException) as exc:
                outcomes[type(exc).__name__] += 1
            finally:
                client.close()
            latencies.append(time.monotonic() - started)
            next_search = time.monotonic() + 0.2
    latencies.sort()
    held = len(poller.get_map())
    print(f"{args.connections} idle connections from one address for {args.seconds} s: searches from {args.source} "
          f"{dict(outcomes)} n={len(latencies)} p50={latencies[len(latencies) // 2]:.3f}s max={latencies[-1]:.3f}s; "
          f"idle sockets open at the end {held}, server answers {dict(counts)}")
    return 0 if set(outcomes) == {200} and latencies[-1] < 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
