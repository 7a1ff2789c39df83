"""Slow clients must not starve the server: `--slow` connections trickle a whole request (headers
and body) one byte at a time over `--seconds` while ordinary `search_docs` calls run; prints how
many calls succeeded.

    python bench/slow_clients.py [--slow 40] [--seconds 45] [--body-bytes 64] [--searches 120]
                                 [--search-timeout 10] [--workers N]

Loopback only, bounded: `manage.py serve` (its defaults unless `--workers`) on a free 127.0.0.1
port with a fresh SQLite database and the sample corpus (reused from `--index-root`), stopped at
the end. Each slow request carries a `--body-bytes` JSON body (must stay under
MCP_MAX_BODY_BYTES, 1 MiB) and is sent in at most 450 pieces; the searches run
from 4 threads with keep-alive MCP clients, spread over the same period; a search fails on
any error or when it takes longer than `--search-timeout`. Exit status 1 when fewer than 99% of
the searches succeed.
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

import httpx  # noqa: E402
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


def trickle(port: int, seconds: int, body_bytes: int, stop: threading.Event) -> str:
    """One connection that sends its whole request, headers and body, in small pieces spread over
    `seconds`; the status line the server answered with, or how the connection ended."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'.ljust(body_bytes)
    request = (b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Accept: application/json, text/event-stream\r\n"
               + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    steps = min(len(request), 450)
    piece = -(-len(request) // steps)
    with socket.create_connection(("127.0.0.1", port), timeout=seconds + 30) as sock:
        for start in range(0, len(request), piece):
            if stop.is_set():
                return "stopped"
            try:
                sock.sendall(request[start:start + piece])
            except OSError as exc:
                return f"closed by server: {exc}"
            time.sleep(seconds / steps)
        try:
            return sock.recv(64).split(b"\r\n", 1)[0].decode(errors="replace") or "closed by server"
        except OSError as exc:
            return f"closed by server: {exc}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slow", type=int, default=40)
    parser.add_argument("--seconds", type=int, default=45)
    parser.add_argument("--body-bytes", type=int, default=64, help="size of each slow request's body")
    parser.add_argument("--searches", type=int, default=120)
    parser.add_argument("--search-timeout", type=float, default=10.0,
                        help="seconds an ordinary search may take before it counts as failed (default 10)")
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--threads", type=int, default=4, help="request threads per worker (serve's default)")
    parser.add_argument("--index-root", type=Path, default=Path(tempfile.gettempdir()) / "docsmcp-bench-indexes")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="docsmcp-slow-"))
    name = corpus_name(DEFAULT_CORPUS, None)
    env = configure_django(workdir, args.index_root, name)
    prepare_index(DEFAULT_CORPUS, name, "none", args.index_root)
    port = free_port()
    server = start_server(env, port, args.workers, args.threads, workdir / "server.log")
    stop = threading.Event()
    try:
        with ThreadPoolExecutor(args.slow) as slow_pool, ThreadPoolExecutor(4) as search_pool:
            slow = [slow_pool.submit(trickle, port, args.seconds, args.body_bytes, stop) for _ in range(args.slow)]
            time.sleep(2)  # every slow connection is open and mid-body before the searches start
            url = f"http://127.0.0.1:{port}/mcp/"
            clients = threading.local()
            gap = (args.seconds - 4) * 4 / args.searches

            latencies: list[float] = []

            def one(i: int) -> str | None:
                if not hasattr(clients, "mcp"):
                    clients.mcp = McpClient(url)
                    clients.mcp.http.timeout = httpx.Timeout(args.search_timeout)
                time.sleep(gap)
                started = time.perf_counter()
                error = clients.mcp.search({"query": QUERIES[i % len(QUERIES)], "limit": 5})
                latencies.append(time.perf_counter() - started)
                return error

            errors = [e for e in search_pool.map(one, range(args.searches)) if e is not None]
            slow_answers = [f.result() for f in slow]
    finally:
        stop.set()
        stop_server(server)
    ok = args.searches - len(errors)
    print(f"workers={args.workers} slow_connections={args.slow} slow_seconds={args.seconds} "
          f"body_bytes={args.body_bytes} "
          f"searches={args.searches} succeeded={ok} ({100 * ok / args.searches:.1f}%) "
          f"within {args.search_timeout:g}s; slowest search {max(latencies):.2f}s")
    print(f"slow connections answered: {sorted(set(slow_answers))}")
    for error in errors[:5]:
        print(f"  error: {error}")
    return 0 if ok >= 0.99 * args.searches else 1


if __name__ == "__main__":
    raise SystemExit(main())
