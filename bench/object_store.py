"""Object-store benchmark: builds and searches with the index root on a local disk and on an
S3-compatible store, measured back to back in one run.

    python bench/object_store.py [--corpus DIR] [--provider none|hash] [--queries FILE.jsonl]
                                 [--rounds 5] [--endpoint URL]

Without --endpoint, moto's standalone S3 server (requirements-dev.txt) is started on a loopback
port; with it, DOCSMCP_STORAGE_OPTIONS / AWS_* must reach that store and the bucket `docsmcp-bench`
must exist. Reports:
- full build and incremental build (one file changed: a patched copy of the previous tables,
  hard links on disk, server-side object copies on the store), local vs store;
- the time a serving host takes to copy the build into its local cache (retrieval/storage/cache.py);
- per-query latency of the fused search (the `search()` a tool calls, lexical legs plus vector
  leg when the provider embeds) on the local root, cold from the store, and warm from the cache
  copy. The three are timed in interleaved rounds so machine noise hits them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from retrieval.boot import boot  # noqa: E402

boot()  # as the server and the build worker do

SECRET = b"bench-cursor-secret"
DEFAULT_CORPUS = Path("/work/shared/bench/k8s/corpus")


def start_store(args) -> tuple[object | None, str]:
    from retrieval import storage

    if args.endpoint:
        storage.configure(os.environ)  # what a server's settings hand the engine
        return None, "s3://docsmcp-bench"
    from tests import s3_server

    process, endpoint = s3_server.start(Path(tempfile.gettempdir()) / "docsmcp-bench-moto.log")
    os.environ.update(s3_server.environment(endpoint))
    storage.configure(os.environ)
    return process, f"s3://{s3_server.BUCKET}"


def timed_build(corpus: Path, out, previous, provider, cache) -> tuple[float, dict]:
    from retrieval.ingest.build import BuildRequest, build_index

    started = time.perf_counter()
    result = build_index(BuildRequest(corpus, out, f"bench-{uuid.uuid4().hex[:6]}", "bench", provider=provider,
                                      previous_dir=previous, cache_dir=cache, workers=1))
    return time.perf_counter() - started, result.stats


def load_queries(path: str | None, index, sample: int = 100) -> list[str]:
    if path:
        return [json.loads(line)["query"] for line in Path(path).read_text().splitlines() if line.strip()]
    catalog = index.catalog()
    step = max(1, len(catalog) // sample)
    return [h for h in catalog.column("heading", list(range(0, len(catalog), step))[:sample]) if h]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--provider", default="hash", choices=["none", "hash"])
    ap.add_argument("--queries", help="JSONL with a `query` per line (default: 100 chunk headings)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timed rounds over the queries")
    ap.add_argument("--endpoint", help="an S3-compatible store already running (see the module docstring)")
    args = ap.parse_args()

    from retrieval import storage
    from retrieval.embeddings import get_provider
    from retrieval.search.engine import SearchRequest, search
    from retrieval.search.index import Index
    from retrieval.storage.cache import BuildCache

    provider = None if args.provider == "none" else get_provider(args.provider)
    process, bucket = start_store(args)
    work = Path(tempfile.mkdtemp(prefix="docsmcp-objbench-"))
    source = work / "corpus"
    shutil.copytree(args.corpus, source)
    remote = f"{bucket}/{uuid.uuid4().hex[:8]}"
    report: dict[str, float] = {}
    try:
        for where, root in (("local", work / "indexes"), ("s3", remote)):
            first = storage.join(root, "builds", "one")
            report[f"full build, {where} (s)"], stats = timed_build(source, first, None, provider,
                                                                     storage.join(root, "cache"))
            changed = sorted(source.rglob("*.md"))[len(stats) % 7]
            changed.write_text(changed.read_text() + "\n\nOne more sentence for the incremental build.\n")
            second = storage.join(root, "builds", "two")
            report[f"incremental build, one file changed, {where} (s)"], patched = timed_build(
                source, second, first, provider, storage.join(root, "cache"))
            assert patched["patched"], patched
            changed.write_text(changed.read_text().replace("\n\nOne more sentence for the incremental build.\n", ""))
        local_build = work / "indexes" / "builds" / "two"
        remote_build = f"{remote}/builds/two"
        cache = BuildCache(work / "index-cache")
        started = time.perf_counter()
        cached = cache.fetch(remote_build)
        report["copy into a serving host's cache (s)"] = time.perf_counter() - started

        indexes = {"local root": Index(local_build), "object store, cold": Index(remote_build),
                   "local cache copy, warm": Index(cached)}
        queries = load_queries(args.queries, indexes["local root"])
        times: dict[str, list[float]] = {name: [] for name in indexes}
        for name, index in indexes.items():  # load what a search holds in memory, and one untimed pass
            started = time.perf_counter()
            for query in queries:
                search(index, SearchRequest(query, {}, limit=10), embedder=provider, cursor_secret=SECRET)
            report[f"first pass over {len(queries)} queries, {name} (s)"] = time.perf_counter() - started
        for _ in range(args.rounds):
            for name, index in indexes.items():
                for query in queries:
                    started = time.perf_counter()
                    search(index, SearchRequest(query, {}, limit=10), embedder=provider, cursor_secret=SECRET)
                    times[name].append((time.perf_counter() - started) * 1000)
        chunks = len(indexes["local root"].catalog())
        print(f"\n{args.corpus} ({chunks} chunks, provider {args.provider}); {len(queries)} queries x "
              f"{args.rounds} interleaved rounds\n")
        for key, value in report.items():
            print(f"{key:60s} {value:8.2f}")
        print(f"\n{'search latency (ms)':30s} {'p50':>8s} {'p95':>8s} {'mean':>8s} {'vs local':>9s}")
        base = statistics.median(times["local root"])
        for name, values in times.items():
            values.sort()
            p50 = statistics.median(values)
            p95 = values[int(len(values) * 0.95) - 1]
            print(f"{name:30s} {p50:8.2f} {p95:8.2f} {statistics.fmean(values):8.2f} {p50 / base:8.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if process is not None:
            process.terminate()


if __name__ == "__main__":
    main()
