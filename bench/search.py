"""Engine benchmark: latency and throughput of each search leg and of the fused search, the peak
memory of the serving process, and MRR@10 when the queries carry judgments. No HTTP: this
times `retrieval/` alone (the MCP harness in ../shared/bench measures the served tool).

    python bench/search.py --corpus DIR [--provider none|hash|local] [--queries FILE.jsonl]
                           [--filter KEY=VALUE ...] [--repeat N] [--index DIR] [--limit 10]

The index is built in a child process (so the peak RSS reported is that of a process that
only serves), into --index DIR when given, else a temporary directory; an existing build at
--index is reused. Without --queries, the headings of up to 200 evenly spaced chunks are the
queries (known-item lookups).

Rows: `text`, `ident`, `phrase`, `vector` time `rank()` with that leg alone (the vector leg
includes embedding the query); `lexical` and `hybrid` time a full `search()` as a tool calls
it (legs, fusion, collapse, page of hits with content and snippets). A leg's row counts only
the queries it applies to (ident: queries with identifier terms; phrase: 2-8 words).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from retrieval.boot import boot  # noqa: E402

boot()  # as the server and the build worker do

from tqdm import tqdm  # noqa: E402

LEXICAL = ("text", "ident", "phrase")
SECRET = b"bench-cursor-secret"


def parse_filters(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--filter expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


# --- building ---------------------------------------------------------------------------------

def build_child(corpus: Path, out: Path, provider: str) -> None:
    """Runs in the child process: builds with a progress bar per stage."""
    from retrieval.embeddings import get_provider
    from retrieval.ingest.build import BuildRequest, build_index

    bars: dict[str, tqdm] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, desc=f"build {stage}", unit="it", leave=True)
        bar.total = total
        bar.update(done - bar.n)  # update() honours mininterval; refresh() would redraw every call

    started = time.perf_counter()
    # An embedding cache, as a corpus's builds have: identical chunks (versioned copies) embed once.
    result = build_index(BuildRequest(corpus, out, f"bench-{int(time.time())}", corpus.name,
                                      provider=None if provider == "none" else get_provider(provider),
                                      cache_dir=out.with_name(out.name + "-embedding-cache")),
                         progress=progress)
    for bar in bars.values():
        bar.close()
    print(f"built {result.stats['total_chunks']} chunks from {result.stats['total_files']} files in "
          f"{time.perf_counter() - started:.1f}s -> {out}", flush=True)


def ensure_index(args) -> Path:
    if args.index and (Path(args.index) / "metadata.json").exists():
        print(f"reusing index {args.index}", flush=True)
        return Path(args.index)
    if not args.corpus:
        raise SystemExit("--corpus is required unless --index points at an existing build")
    out = Path(args.index) if args.index else Path(tempfile.mkdtemp(prefix="docsmcp-bench-")) / "build"
    subprocess.run([sys.executable, __file__, "--build-only", "--corpus", str(args.corpus), "--index", str(out),
                    "--provider", args.provider], check=True)
    return out


# --- queries and quality ----------------------------------------------------------------------

def load_queries(path: str | None, index, filters: dict[str, str], sample: int) -> list[dict]:
    if path:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    else:
        catalog = index.catalog()
        step = max(1, len(catalog) // sample)
        headings = catalog.column("heading", list(range(0, len(catalog), step))[:sample])
        rows = [{"query": h} for h in headings if h]
    for row in rows:
        row["filters"] = {**row.get("filters", {}), **filters}
    return rows


def _leaf(chunk_id: str) -> tuple[str, str]:
    """Same file and last heading segment, like the harness's default `--match leaf`."""
    path, _, fragment = chunk_id.partition("#")
    return path, fragment.rsplit("/", 1)[-1] or "_preamble"


def reciprocal_ranks(row: dict, chunk_ids: list[str]) -> tuple[float | None, float | None]:
    chunk_rr = file_rr = None
    if row.get("expected_chunk_ids"):
        wanted = {_leaf(c) for c in row["expected_chunk_ids"]}
        exact = set(row["expected_chunk_ids"])
        chunk_rr = next((1 / r for r, c in enumerate(chunk_ids[:10], 1) if c in exact or _leaf(c) in wanted), 0.0)
    if row.get("expected_files"):
        files = set(row["expected_files"])
        file_rr = next((1 / r for r, c in enumerate(chunk_ids[:10], 1) if c.partition("#")[0] in files), 0.0)
    return chunk_rr, file_rr


# --- timing -----------------------------------------------------------------------------------

def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(name: str, times: list[float], cpu: list[float]) -> dict:
    """Wall-clock percentiles and throughput, plus the median process CPU time per query: on a
    shared host the CPU time shows the work done when the wall clock mostly shows the queue."""
    if not times:
        return {"leg": name, "n": 0}
    return {"leg": name, "n": len(times), "p50_ms": round(percentile(times, 50) * 1000, 2),
            "p95_ms": round(percentile(times, 95) * 1000, 2), "p99_ms": round(percentile(times, 99) * 1000, 2),
            "qps": round(len(times) / sum(times), 1), "cpu_p50_ms": round(percentile(cpu, 50) * 1000, 2)}


def rss_mb() -> tuple[float, float]:
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench(args) -> dict:
    from retrieval.search.engine import SearchRequest, search
    from retrieval.search.filters import plan_filters
    from retrieval.search.index import Index
    from retrieval.search.legs import lexical_queries
    from retrieval.search.ranking import rank

    path = ensure_index(args)
    started = time.perf_counter()
    index = Index(path)
    embedder = None
    if index.has_vectors and args.provider != "none":
        from retrieval.embeddings import get_provider

        embedder = get_provider(index.metadata.embedding["provider"])
    queries = load_queries(args.queries, index, parse_filters(args.filter), args.sample)
    plans = [plan_filters(index.metadata, q["filters"]) for q in queries]
    index.catalog()
    if embedder is not None:
        index.vectors()
    print(f"index {path}: {len(index.catalog())} chunks, vectors={index.has_vectors}, "
          f"opened in {time.perf_counter() - started:.2f}s; {len(queries)} queries x {args.repeat}", flush=True)

    legs = [*LEXICAL, *(["vector"] if embedder is not None else [])]
    modes = [*legs, "lexical", *(["hybrid"] if embedder is not None else [])]
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    cpu: dict[str, list[float]] = {mode: [] for mode in modes}
    quality: dict[str, list[tuple[float | None, float | None]]] = {"lexical": [], "hybrid": []}
    for q in tqdm(queries, desc="warm-up", unit="q"):
        search(index, SearchRequest(q["query"], q["filters"], limit=args.limit), embedder=embedder,
               cursor_secret=SECRET)
    for repetition in range(args.repeat):
        for q, plan in tqdm(list(zip(queries, plans, strict=True)), desc=f"round {repetition + 1}/{args.repeat}",
                            unit="q"):
            applicable = lexical_queries(q["query"], LEXICAL)
            for leg in legs:
                if leg != "vector" and leg not in applicable:
                    continue
                t0, c0 = time.perf_counter(), time.process_time()
                rank(index, q["query"], plan, legs=(leg,), embedder=embedder)
                times[leg].append(time.perf_counter() - t0)
                cpu[leg].append(time.process_time() - c0)
            for mode in modes[len(legs):]:
                request = SearchRequest(q["query"], q["filters"], limit=args.limit,
                                        legs=LEXICAL if mode == "lexical" else None)
                t0, c0 = time.perf_counter(), time.process_time()
                result = search(index, request, embedder=embedder if mode == "hybrid" else None,
                                cursor_secret=SECRET)
                times[mode].append(time.perf_counter() - t0)
                cpu[mode].append(time.process_time() - c0)
                if repetition == 0:
                    quality[mode].append(reciprocal_ranks(q, [h.chunk_id for h in result.hits]))
    rows = [summary(mode, times[mode], cpu[mode]) for mode in modes]
    scores = {}
    for mode, pairs in quality.items():
        chunk = [c for c, _ in pairs if c is not None]
        files = [f for _, f in pairs if f is not None]
        if chunk or files:
            scores[mode] = {"chunk_mrr@10": round(sum(chunk) / len(chunk), 4) if chunk else None,
                            "file_mrr@10": round(sum(files) / len(files), 4) if files else None}
    current, peak = rss_mb()
    return {"index": str(path), "chunks": len(index.catalog()), "queries": len(queries), "repeat": args.repeat,
            "legs": rows, "quality": scores, "rss_mb": round(current, 1), "peak_rss_mb": round(peak, 1),
            "cpus": os.cpu_count(), "load_average": [round(x, 1) for x in os.getloadavg()]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, help="corpus directory (markdown + .docs-mcp.json)")
    ap.add_argument("--index", help="build directory to reuse, or to build into")
    ap.add_argument("--provider", default="none", choices=["none", "hash", "local", "openai"])
    ap.add_argument("--queries", help="JSONL with query, and optionally filters / expected_chunk_ids / "
                                      "expected_files")
    ap.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE", help="added to every query")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds over the queries (default 3)")
    ap.add_argument("--limit", type=int, default=10, help="hits per search (default 10)")
    ap.add_argument("--sample", type=int, default=200, help="heading queries when --queries is not given")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build_only:
        build_child(args.corpus, Path(args.index), args.provider)
        return 0
    out = bench(args)
    for row in out["legs"]:
        if row["n"]:
            print(f"{row['leg']:<8} n={row['n']:<5} p50={row['p50_ms']:>7.2f}ms p95={row['p95_ms']:>7.2f}ms "
                  f"p99={row['p99_ms']:>7.2f}ms  {row['qps']:>7.1f} q/s  cpu p50={row['cpu_p50_ms']:.2f}ms")
        else:
            print(f"{row['leg']:<8} n=0 (no query applies)")
    for mode, score in out["quality"].items():
        print(f"quality {mode}: chunk MRR@10={score['chunk_mrr@10']} file MRR@10={score['file_mrr@10']}")
    print(f"memory: rss={out['rss_mb']} MB peak_rss={out['peak_rss_mb']} MB ({out['chunks']} chunks, "
          f"{out['cpus']} CPUs, load average {out['load_average']} at the end)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
