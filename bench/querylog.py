"""Query-log benchmark: what recording one search call costs the request, with the log on and off.

    python bench/querylog.py [--calls N] [--hits 10]

Times, in this process and with no database, the request-side part of a recorded `search_docs`
call exactly as `protocol.run_tool` and `corpus_search` run it: opening the call's scope, observing
`--hits` hits, closing the scope (which appends the call to the writer's buffer). The writer
thread is not started, so what is timed is only what a request waits for; the buffer is emptied
between calls. Prints microseconds per call for DOCSMCP_QUERY_LOG=full, no-text and off.
`bench/http_load.py` measures the same against a served search (DOCSMCP_QUERY_LOG=full vs off).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--hits", type=int, default=10)
    args = ap.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
    import django

    django.setup()
    from django.conf import settings

    from corpus import querylog

    querylog._ensure_writer = lambda: None  # time the request's side only; nothing is written
    hits = [(f"guides/page-{i}.md#section-{i}", 0.9 - i / 100) for i in range(args.hits)]

    def one() -> None:
        seen = querylog.found(corpus="sample", version="3.2", build_id="b1", hits=list(hits))
        querylog.record(querylog.Call(surface=querylog.HTTP, tool="search_docs", client="agent/1.0", key_name="reader",
                                      profile="docs", query="how do I paginate results",
                                      filters={"limit": 10, "language": "python"}, observations=[seen]))
        querylog._buffer.clear()

    for mode in (querylog.FULL, querylog.NO_TEXT, querylog.OFF):
        settings.DOCSMCP_QUERY_LOG = mode
        for _ in range(min(2000, args.calls)):
            one()
        started = time.perf_counter()
        for _ in range(args.calls):
            one()
        per_call = (time.perf_counter() - started) / args.calls * 1e6
        print(f"{mode:8s} {per_call:7.1f} us per call  ({args.calls} calls, {args.hits} hits each)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
