"""Slow clients must not starve searches: `--slow` connections trickle their requests one byte a
second while an ordinary client searches every 0.2 s; prints how the searches fared, per mode.

    python bench/slow_clients.py [--slow 40] [--seconds 30] [--modes body,headers]
                                 [--search-timeout 10] [--workers N] [--threads 4]

Paced like ../shared/probes/slow_clients.py, which starved the threaded server this replaced:
in mode `body` each slow connection sends its request head at once and then its body (a 2 KB
JSON-RPC ping) one byte a second; in mode `headers` it sends head and body one byte a second.
Meanwhile one client sends a `search_docs` call every 0.2 s, each on a fresh connection, and
counts it failed on any error or after `--search-timeout` seconds. Loopback only, bounded:
`manage.py serve` (its defaults unless `--workers`/`--threads`) on a free 127.0.0.1 port with a
fresh SQLite database and the sample corpus (reused from `--index-root`), stopped at the end.
Exit status 1 when any search failed or the slowest took more than 1 s.
"""

from __future__ import annotations

import argparse
import collections
import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from http_load import (  # noqa: E402
    DEFAULT_CORPUS,
    configure_django,
    corpus_name,
    free_port,
    prepare_index,
    start_server,
    stop_server,
)

from mcp_endpoint.management.commands.serve import default_workers  # noqa: E402

QUERIES = ["retry backoff", "webhook signatures", "rate limits", "idempotency keys", "pagination cursor"]
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def trickle(port: int, seconds: float, mode: str, outcomes: collections.Counter) -> None:
    """One connection that trickles its request a byte a second for `seconds` (never finishing it)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"pad": "x" * 2000}}}).encode()
    head = (b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode())
    data = body if mode == "body" else head + body
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=seconds + 30) as sock:
            if mode == "body":
                sock.sendall(head)
            end = time.monotonic() + seconds
            for k in range(len(data) - 1):
                if time.monotonic() >= end:
                    break
                sock.sendall(data[k:k + 1])
                time.sleep(1.0)
        outcomes["held to the end"] += 1
    except OSError as exc:
        outcomes[f"closed by the server ({type(exc).__name__})"] += 1


def run_mode(port: int, mode: str, args) -> tuple[collections.Counter, list[float], collections.Counter]:
    slow_outcomes: collections.Counter = collections.Counter()
    slow = [threading.Thread(target=trickle, args=(port, args.seconds, mode, slow_outcomes), daemon=True)
            for _ in range(args.slow)]
    for thread in slow:
        thread.start()
    time.sleep(2)  # every slow connection is open and mid-request before the searches start
    url = f"http://127.0.0.1:{port}/mcp/"
    outcomes: collections.Counter = collections.Counter()
    latencies: list[float] = []
    started, i = time.monotonic(), 0
    # No keep-alive: each search opens a fresh connection, as a new agent would.
    http = httpx.Client(timeout=args.search_timeout, headers=HEADERS, limits=httpx.Limits(max_keepalive_connections=0))
    while time.monotonic() - started < args.seconds - 3:
        call = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "search_docs", "arguments": {"query": QUERIES[i % len(QUERIES)], "limit": 5}}}
        began = time.perf_counter()
        try:
            response = http.post(url, json=call)
            hits = response.json().get("result", {}).get("structuredContent", {}).get("hits")
            outcomes["ok" if response.status_code == 200 and isinstance(hits, list) else
                     f"HTTP {response.status_code}"] += 1
        except httpx.HTTPError as exc:
            outcomes[f"failed: {type(exc).__name__}"] += 1
        latencies.append(time.perf_counter() - began)
        i += 1
        time.sleep(0.2)
    http.close()
    for thread in slow:
        thread.join(timeout=5)
    return outcomes, sorted(latencies), slow_outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slow", type=int, default=40)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--modes", default="body,headers", help="comma-separated: body, headers (default both)")
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
    failed = False
    try:
        for mode in args.modes.split(","):
            outcomes, latencies, slow_outcomes = run_mode(port, mode.strip(), args)
            bad = sum(n for outcome, n in outcomes.items() if outcome != "ok") or latencies[-1] > 1.0
            failed = failed or bool(bad)
            print(f"workers={args.workers} threads={args.threads} slow={args.slow} mode={mode} "
                  f"seconds={args.seconds}: searches {dict(outcomes)} n={len(latencies)} "
                  f"p50={latencies[len(latencies) // 2]:.3f}s max={latencies[-1]:.3f}s; "
                  f"slow connections {dict(slow_outcomes)}", flush=True)
    finally:
        stop_server(server)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
