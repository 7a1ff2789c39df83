"""stdio start-up: how long a client waits, from spawning `manage.py mcp_stdio`, for its first
`tools/list` answer and for its first `search_docs` answer (cold: index, and with the local
provider the embedding model, load on first use).

    DATABASE_URL=... DOCSMCP_INDEX_ROOT=... python bench/stdio_startup.py [--runs 5] [--corpus NAME]
        [--query "how do I retry a failed payment"]

The database named by DATABASE_URL must hold a corpus with an active build (build it first with
`manage.py build_index --corpus sample --source corpus/sample_docs --embedding-provider local`).
Each run spawns a fresh process and writes initialize, notifications/initialized, tools/list,
then one tools/call search_docs, each after the previous answer; it prints every run and the
median of each figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ask(process: subprocess.Popen, message: dict) -> dict | None:
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    if "id" not in message:
        return None
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"mcp_stdio exited: {process.stderr.read()}")
    reply = json.loads(line)
    if "error" in reply or reply["result"].get("isError"):
        raise RuntimeError(f"failed: {reply}")
    return reply


def run_once(corpus: str | None, query: str) -> tuple[float, float]:
    started = time.perf_counter()
    args = [sys.executable, str(ROOT / "manage.py"), "mcp_stdio", *(["--corpus", corpus] if corpus else [])]
    process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT)
    try:
        _ask(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        _ask(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _ask(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = time.perf_counter() - started
        _ask(process, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "search_docs", "arguments": {"query": query, "limit": 5}}})
        searched = time.perf_counter() - started
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    return listed, searched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--corpus")
    parser.add_argument("--query", default="how do I retry a failed payment")
    options = parser.parse_args()
    runs = []
    for n in range(options.runs):
        listed, searched = run_once(options.corpus, options.query)
        runs.append((listed, searched))
        print(f"run {n + 1}: first tools/list {listed * 1000:7.0f} ms   first search_docs {searched * 1000:7.0f} ms")
    print(f"median of {len(runs)}: first tools/list {statistics.median(r[0] for r in runs) * 1000:.0f} ms, "
          f"first search_docs {statistics.median(r[1] for r in runs) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
