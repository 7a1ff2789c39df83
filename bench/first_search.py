#!/usr/bin/env python
"""The first search of a build that is not loaded yet: what a worker pays when a corpus opens on demand.

    python bench/first_search.py BUILD [BUILD ...] [--provider hash|local|none] [--trials 3] [--query Q]
                                 [--profile N]

Each trial is a fresh process that first does what a serving worker has done before the corpus is asked
for (imports LanceDB, Arrow and the engine, embeds the question with the build's provider), then times
`Index(path)` plus one search (`engine.search`, the full-text legs, the vector leg and the priors, the hits
dressed): wall time, and CPU time of every thread of the process (`time.process_time`). With several
builds (e.g. one with its mapped files and a hard-linked copy without some), the trials alternate between
them, so load from other work falls on each alike. `--profile N` prints the N most costly calls (cProfile,
cumulative) of one more trial per build instead of timing it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_QUERY = "how do I configure the client"


def child(build: str, provider: str, query: str, profile: int) -> None:
    """One trial, in a process of its own: prints a JSON line of wall and CPU milliseconds."""
    import time

    from retrieval.boot import boot

    boot()
    import lance.query  # noqa: F401 - a worker that has served another corpus has these loaded
    import lancedb  # noqa: F401

    from retrieval.embeddings import get_provider
    from retrieval.search.engine import SearchRequest, search
    from retrieval.search.index import Index

    embedder = get_provider(provider) if provider != "none" else None
    vector = embedder.embed_query(query) if embedder is not None else None

    def first() -> int:
        index = Index(Path(build))
        result = search(index, SearchRequest(query, limit=10), embedder=embedder, cursor_secret=b"bench",
                        query_vector=vector if index.has_vectors else None)
        return len(result.hits)

    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(first)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(profile)
        return
    wall, cpu = time.perf_counter(), time.process_time()
    hits = first()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"wall_ms": round(wall * 1000, 1), "cpu_ms": round(cpu * 1000, 1), "hits": hits}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="+", help="build directories (holding metadata.json)")
    parser.add_argument("--provider", default="hash", choices=["none", "hash", "local"],
                        help="the provider that embeds the question (the build's; default hash)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.builds[0], args.provider, args.query, args.profile)
        return 0

    def run(build: str, profile: int = 0) -> dict | None:
        command = [sys.executable, __file__, build, "--child", "--provider", args.provider, "--query", args.query,
                   "--profile", str(profile)]
        done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        return json.loads(done.stdout.strip().splitlines()[-1]) if not profile else None

    if args.profile:
        for build in args.builds:
            print(f"# {build}", file=sys.stderr, flush=True)
            run(build, args.profile)
        return 0
    found: dict[str, list[dict]] = {build: [] for build in args.builds}
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for trial in range(args.trials):
        for build in args.builds:
            row = run(build)
            found[build].append(row)
            print(f"trial {trial + 1} {build}: wall {row['wall_ms']:.1f} ms, CPU {row['cpu_ms']:.1f} ms, "
                  f"{row['hits']} hits", flush=True)
    for build, rows in found.items():
        cpu, wall = [r["cpu_ms"] for r in rows], [r["wall_ms"] for r in rows]
        print(f"{build}: CPU median {statistics.median(cpu):.1f} ms ({min(cpu):.1f}-{max(cpu):.1f}), "
              f"wall median {statistics.median(wall):.1f} ms ({min(wall):.1f}-{max(wall):.1f})")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
