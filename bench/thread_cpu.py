#!/usr/bin/env python
"""Where a running server's CPU goes per search: CPU per call of every thread of every process under it.

    python bench/thread_cpu.py --port PORT --pid PID [--calls 1000] [--queries FILE.jsonl] [--rounds 1]

PID is the process that started the server (for example `bench/http_load.py --serve-only --port PORT`,
or `manage.py serve`); every process below it is read. One keep-alive client does the `initialize`
handshake, warms up with 200 `search_docs` calls, then makes `--calls` more one at a time, and the CPU
each thread used meanwhile (user + system, from /proc) is divided by the calls. Threads are named by
/proc's `comm` (Python threads are all `python`; Lance's and Arrow's native threads have their own
names); `py-spy dump --pid` names the Python ones by thread ID.

Two trees served side by side and measured alternately show which threads a change made busier: a
request thread (the tool call), a full-text leg (Lance, native), the event-loop front or a timer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _descendants(pid: int) -> list[int]:
    try:
        children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return [p for child in children for p in (child, *_descendants(child))]


def _threads(root: int) -> dict[tuple[int, int], tuple[int, str]]:
    """(pid, tid) -> (CPU ticks so far, comm) of every thread under `root`."""
    out = {}
    for pid in [root, *_descendants(root)]:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            out[(pid, int(tid))] = (int(fields[11]) + int(fields[12]), comm)
    return out


def _client(base: str) -> tuple[httpx.Client, dict[str, str]]:
    client, headers = httpx.Client(timeout=30), dict(HEADERS)
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    answer = client.post(base, json=hello, headers=headers)
    answer.raise_for_status()
    if answer.headers.get("mcp-session-id"):
        headers["Mcp-Session-Id"] = answer.headers["mcp-session-id"]
    headers["MCP-Protocol-Version"] = "2025-06-18"
    client.post(base, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return client, headers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the process that started the server")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--queries", default=str(ROOT.parent / "shared" / "bench" / "k8s" / "dev.jsonl"))
    args = parser.parse_args()
    queries = [json.loads(line)["query"] for line in Path(args.queries).read_text().splitlines() if line.strip()]
    base = f"http://127.0.0.1:{args.port}/mcp/"
    client, headers = _client(base)

    def call(n: int) -> None:
        body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": "search_docs", "arguments": {"query": queries[n % len(queries)]}}}
        answer = client.post(base, json=body, headers=headers)
        if answer.status_code != 200 or '"isError":true' in answer.text:
            sys.exit(f"call {n} failed: {answer.status_code} {answer.text[:200]}")

    for n in range(200):
        call(n)
    ticks = os.sysconf("SC_CLK_TCK")
    for round_ in range(args.rounds):
        before, started = _threads(args.pid), time.perf_counter()
        for n in range(args.calls):
            call(n)
        wall, after = time.perf_counter() - started, _threads(args.pid)
        used = {key: after[key][0] - before.get(key, (0, ""))[0] for key in after}
        total = sum(used.values()) / ticks / args.calls * 1000
        print(f"round {round_ + 1}: {args.calls} calls, wall {wall / args.calls * 1000:.2f} ms/call, "
              f"server CPU {total:.2f} ms/call", flush=True)
        for key in sorted(used, key=lambda k: -used[k]):
            if used[key] / ticks / args.calls * 1000 >= 0.05:
                print(f"  pid {key[0]} tid {key[1]} {after[key][1]:<16} {used[key] / ticks / args.calls * 1000:.2f} ms/call")


if __name__ == "__main__":
    main()
