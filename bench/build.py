#!/usr/bin/env python
"""Build throughput and peak memory: full and incremental (one file changed), per provider.

    python bench/build.py                                   # the bundled sample corpus, provider none
    python bench/build.py --corpus /path/to/docs --provider none hash local

Each measurement runs in a fresh child process so its peak RSS (parent + parse workers) is
its own. Prints one line per (provider, mode).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from retrieval.boot import boot  # noqa: E402

boot()  # as the server and the build worker do
os.environ.setdefault("LANCE_LOG", "error")


def _one(args: argparse.Namespace) -> None:
    """Child process: one build, JSON result on stdout."""
    from retrieval.embeddings import get_provider
    from retrieval.ingest.build import BuildRequest, build_index

    name = args.provider[0]
    provider = None if name == "none" else get_provider(name)
    stages: dict[str, tuple[int, int]] = {}

    def progress(stage: str, done: int, total: int) -> None:
        stages[stage] = (done, total)
        if args.show_progress:
            print(f"\r  {stage:>6} {done}/{total}", end="", file=sys.stderr, flush=True)

    started = time.perf_counter()
    result = build_index(BuildRequest(Path(args.corpus), Path(args.out), Path(args.out).name, "bench",
                                      provider=provider, previous_dir=Path(args.previous) if args.previous else None,
                                      cache_dir=Path(args.cache) if args.cache else None), progress=progress)
    elapsed = time.perf_counter() - started
    if args.show_progress:
        print(file=sys.stderr)
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(json.dumps({"seconds": elapsed, "stats": result.stats, "timings": result.timings,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "peak_rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                      "peak_rss_sum_mb": rss / 1024}))


def _run_child(corpus: Path, out: Path, provider: str, previous: Path | None, cache: Path) -> dict:
    cmd = [sys.executable, __file__, "--one", "--corpus", str(corpus), "--out", str(out), "--provider", provider,
           "--cache", str(cache), "--show-progress"]
    if previous:
        cmd += ["--previous", str(previous)]
    proc = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _line(label: str, provider: str, mode: str, result: dict) -> str:
    stats = result["stats"]
    secs = result["seconds"]
    chunked = stats["chunked_files"]
    return (f"{label}\tprovider={provider}\tmode={mode}\tfiles={stats['total_files']}\tchunks={stats['total_chunks']}\t"
            f"seconds={secs:.2f}\tfiles/s={stats['total_files'] / secs:.0f}\tchunks/s={stats['total_chunks'] / secs:.0f}\t"
            f"rechunked_files={chunked}\tembedded={stats['embedded_chunks']}\t"
            f"peak_rss_mb={result['peak_rss_mb']:.0f}\tworkers_peak_rss_mb={result['peak_rss_children_mb']:.0f}\t"
            f"stages={json.dumps(result['timings'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=str(ROOT / "corpus" / "sample_docs"))
    parser.add_argument("--provider", nargs="+", default=["none"])
    parser.add_argument("--label", default=None)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--previous", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--show-progress", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args)
        return
    label = args.label or Path(args.corpus).name
    work = Path(tempfile.mkdtemp(prefix="docsmcp-bench-build-"))
    try:
        corpus = work / "corpus"
        print(f"copying {args.corpus} ...", file=sys.stderr)
        shutil.copytree(args.corpus, corpus)
        victim = max((p for p in corpus.rglob("*.md")), key=lambda p: p.stat().st_size)
        for provider in args.provider:
            cache = work / f"cache-{provider}"
            full = _run_child(corpus, work / f"{provider}-full", provider, None, cache)
            print(_line(label, provider, "full", full), flush=True)
            original = victim.read_text()
            victim.write_text(original + "\n\n## Benchmark edit\n\nOne changed paragraph.\n")
            incremental = _run_child(corpus, work / f"{provider}-incr", provider, work / f"{provider}-full", cache)
            victim.write_text(original)
            print(_line(label, provider, "incremental-1-file", incremental), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
