"""Slow clients must not starve the server: `slow` connections send a request body one byte a
second for `--seconds` while ordinary `search_docs` calls run; prints how many calls succeeded.

    python bench/slow_clients.py [--slow 40] [--seconds 45] [--searches 120] [--workers N]

Loopback only, bounded: `manage.py serve` (its defaults unless `--workers`) on a free 127.0.0.1
port with a fresh SQLite database and the sample corpus (reused from `--index-root`), stopped at
the end. Each slow connection announces a 64-byte JSON body and trickles it; the searches run
from 4 threads with keep-alive MCP clients, spread over the same period. Exit status 1 when
fewer than 99% of the searches succeed.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from http_load import (  # noqa: E402
    DEFAULT_CORPUS,
    McpClient,
    configure_django,
    corpus_name,
    free_port,
    prepare_index,
    start_server,
    stop_server,
)

from mcp_endpoint.management.commands.serve import default_workers  # noqa: E402

QUERIES = ["retry backoff", "webhook signatures", "rate limits", "idempotency keys", "pagination cursor"]


def trickle(port: int, seconds: int, stop: threading.Event) -> str:
    """One connection that sends its body a byte at a time; what the server answered, if anything."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'.ljust(64)
    with socket.create_connection(("127.0.0.1", port), timeout=seconds + 30) as sock:
        sock.sendall(b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json, text/event-stream\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode())
        step = seconds / len(body)
        for byte in body:
            if stop.is_set():
                return "stopped"
            try:
                sock.sendall(bytes([byte]))
            except OSError as exc:
                return f"closed by server: {exc}"
            time.sleep(step)
        return sock.recv(64).split(b"\r\n", 1)[0].decode(errors="replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slow", type=int, default=40)
    parser.add_argument("--seconds", type=int, default=45)
    parser.add_argument("--searches", type=int, default=120)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--index-root", type=Path, default=Path(tempfile.gettempdir()) / "docsmcp-bench-indexes")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="docsmcp-slow-"))
    name = corpus_name(DEFAULT_CORPUS, None)
    env = configure_django(workdir, args.index_root, name)
    prepare_index(DEFAULT_CORPUS, name, "none", args.index_root)
    port = free_port()
    server = start_server(env, port, args.workers, 0, workdir / "server.log")
    stop = threading.Event()
    try:
        with ThreadPoolExecutor(args.slow) as slow_pool, ThreadPoolExecutor(4) as search_pool:
            slow = [slow_pool.submit(trickle, port, args.seconds, stop) for _ in range(args.slow)]
            time.sleep(2)  # every slow connection is open and mid-body before the searches start
            url = f"http://127.0.0.1:{port}/mcp/"
            clients = threading.local()
            gap = (args.seconds - 4) * 4 / args.searches

            def one(i: int) -> str | None:
                if not hasattr(clients, "mcp"):
                    clients.mcp = McpClient(url)
                time.sleep(gap)
                return clients.mcp.search({"query": QUERIES[i % len(QUERIES)], "limit": 5})

            errors = [e for e in search_pool.map(one, range(args.searches)) if e is not None]
            slow_answers = [f.result() for f in slow]
    finally:
        stop.set()
        stop_server(server)
    ok = args.searches - len(errors)
    print(f"workers={args.workers} slow_connections={args.slow} slow_seconds={args.seconds} "
          f"searches={args.searches} succeeded={ok} ({100 * ok / args.searches:.1f}%)")
    print(f"slow connections answered: {sorted(set(slow_answers))}")
    for error in errors[:5]:
        print(f"  error: {error}")
    return 0 if ok >= 0.99 * args.searches else 1


if __name__ == "__main__":
    raise SystemExit(main())
