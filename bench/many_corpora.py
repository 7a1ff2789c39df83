"""Many corpora in one serving worker: start-up, first search of a corpus not loaded, loaded searches, a search
across 20 corpora, and memory against DOCSMCP_SERVING_MEMORY_MB.

    python bench/many_corpora.py [--corpora 1000] [--source DIR] [--index DIR] [--provider hash|local] [--budget-mb 512]
                                 [--queries 200] [--touch 200] [--route-top N] [--json OUT]

1. Builds `--source` (default: the bundled sample docs) once with hash embeddings, or uses a finished
   build directory (`--index`, e.g. a Kubernetes build), and registers `--corpora` corpora in a fresh
   SQLite database, every one serving that build (each opens its own copy in memory, as distinct
   corpora would; a build with mapped files is mapped by all of them). `--provider local` for a build
   made with the local model.
2. In a fresh Python process with DOCSMCP_SERVING_MEMORY_MB=`--budget-mb` (nothing pinned: more corpora
   than DOCSMCP_PIN_ALL_MAX): times django.setup and the views' imports (what gunicorn's master does once,
   before it forks) plus `serve_ready` (what each worker does before it accepts) as `startup_s`, and
   `serve_ready` alone as `worker_start_s`; then the first search of 20 corpora not loaded (p50, max),
   `--queries` searches of one loaded corpus (p50, p99) alternating with the same queries across 20 loaded corpora merged
   (`corpora_search`, p50, p99), the CPU milliseconds per search of both and their ratios, and after
   searching `--touch` distinct corpora: the open indexes, their estimated bytes and the process's RSS.
   Then `list_corpora`'s ranking of all corpora (corpus_cards with a query): its first call, then the p50
   and CPU per call of 20 more. `--route-top` sets DOCSMCP_SEARCH_ROUTE_TOP (how many of the 20 a search ranks in full; 0: all).
Figures are JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUERIES = ["retries", "how do I paginate results", "webhook signature", "RateLimitError", "create a refund",
           "authentication with API keys", "idempotency", "list payments", "errors", "python sdk install"]

CHILD = r"""
import json, os, resource, statistics, sys, time
started = time.perf_counter()
import django
django.setup()
from mcp_endpoint.startup import import_views, serve_ready
import_views()
forked = time.perf_counter()
serve_ready()
startup = time.perf_counter() - started
worker = time.perf_counter() - forked
from corpus.serving import corpus_search, corpora_search
from django.conf import settings
from retrieval.search.engine import SearchRequest
from retrieval.search.index_cache import INDEXES
names = json.loads(os.environ["BENCH_NAMES"])
queries = json.loads(os.environ["BENCH_QUERIES"])
rounds = int(os.environ["BENCH_ROUNDS"])
touch = int(os.environ["BENCH_TOUCH"])

cpu = {"one": 0.0, "across": 0.0}

def ms(fn, account=None):
    c = time.process_time(); t = time.perf_counter(); fn(); wall = (time.perf_counter() - t) * 1000
    if account:
        cpu[account] += (time.process_time() - c) * 1000
    return wall

def pct(xs, p):
    xs = sorted(xs); return round(xs[min(len(xs) - 1, int(p * len(xs)))], 2)

first = [ms(lambda n=n: corpus_search(n, SearchRequest(query=queries[0]))) for n in names[-20:]]
loaded, across = [], []
twenty = names[-20:]
# One search of one corpus, then the same query across 20, alternately, so both see the same load.
for q in [q for _ in range(rounds // len(queries) + 1) for q in queries][:rounds]:
    loaded.append(ms(lambda q=q: corpus_search(names[-1], SearchRequest(query=q)), "one"))
    across.append(ms(lambda q=q: corpora_search(twenty, SearchRequest(query=q)), "across"))
for n in names[:touch]:
    corpus_search(n, SearchRequest(query=queries[1]))
from corpus.serving import corpus_cards
cpu["list"] = 0.0
listed_first = ms(lambda: corpus_cards(queries[2]), "list")
cpu["list"] = 0.0
listed = [ms(lambda q=q: corpus_cards(q), "list") for q in (queries * 2)[:20]]
print(json.dumps({
    "startup_s": round(startup, 3),
    "worker_start_s": round(worker, 3),
    "first_search_ms": {"p50": pct(first, 0.5), "max": round(max(first), 2)},
    "loaded_search_ms": {"p50": pct(loaded, 0.5), "p99": pct(loaded, 0.99)},
    "across_20_ms": {"p50": pct(across, 0.5), "p99": pct(across, 0.99)},
    "cpu_ms_per_search": {"one": round(cpu["one"] / len(loaded), 2), "across_20": round(cpu["across"] / len(across), 2)},
    "across_over_one": {"p50": round(pct(across, 0.5) / pct(loaded, 0.5), 2),
                        "cpu": round(cpu["across"] / max(cpu["one"], 1e-9), 2)},
    "route_top": settings.DOCSMCP_SEARCH_ROUTE_TOP,
    "list_corpora_ms": {"first": round(listed_first, 1), "p50": pct(listed, 0.5),
                        "cpu_per_call": round(cpu["list"] / len(listed), 2)},
    "after_touching": touch,
    "open_indexes": sum(INDEXES.loaded(n) for n in names),
    "held_mb": round(INDEXES.held_bytes() / 2**20, 1),
    "budget_mb": int(os.environ["DOCSMCP_SERVING_MEMORY_MB"]),
    "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=int, default=1000)
    parser.add_argument("--source", type=Path, default=ROOT / "corpus" / "sample_docs")
    parser.add_argument("--index", type=Path, help="a finished build directory to serve instead of building --source")
    parser.add_argument("--budget-mb", type=int, default=512)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--touch", type=int, default=200)
    parser.add_argument("--provider", default="hash", choices=["hash", "local"],
                        help="the embedding provider of --index's build (default hash)")
    parser.add_argument("--route-top", type=int, help="DOCSMCP_SEARCH_ROUTE_TOP for the search across 20")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="docsmcp-many-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
           "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}", "DOCSMCP_INDEX_ROOT": str(work / "indexes"),
           "DOCSMCP_HOME": str(work), "DOCSMCP_EMBEDDING_PROVIDER": args.provider,
           "DOCSMCP_SERVING_MEMORY_MB": str(args.budget_mb), "DOCSMCP_PINNED_CORPORA": "",
           "DOCSMCP_QUERY_LOG": "off"}
    if args.route_top is not None:
        env["DOCSMCP_SEARCH_ROUTE_TOP"] = str(args.route_top)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from corpus.models import BuildRun, Corpus
    from retrieval.embeddings import get_provider
    from retrieval.format.metadata import read_metadata
    from retrieval.ingest.build import BuildRequest, build_index

    index = args.index
    if index is None:
        index = work / "source-build"
        build_index(BuildRequest(args.source, index, "source-build", "copy", provider=get_provider("hash"),
                                 workers=1))
    metadata = read_metadata(index)
    names = [f"copy-{i:04d}" for i in range(args.corpora)]
    corpora = Corpus.objects.bulk_create([Corpus(name=n, description=f"copy {n} of {metadata.corpus_description}")
                                          for n in names])
    builds = BuildRun.objects.bulk_create([
        BuildRun(corpus=c, build_id=f"{c.name}-build", kind=BuildRun.KIND_FULL, status=BuildRun.COMPLETE,
                 index_path=str(index), embedding_provider=args.provider, embedding=metadata.embedding, stats=metadata.stats)
        for c in corpora])
    for corpus, build in zip(corpora, builds, strict=True):
        corpus.active_build = build
    Corpus.objects.bulk_update(corpora, ["active_build"], batch_size=500)
    print(f"{args.corpora} corpora of {metadata.stats.get('total_chunks')} chunks each in {work}", file=sys.stderr)

    child_env = {**env, "BENCH_NAMES": json.dumps(names), "BENCH_QUERIES": json.dumps(QUERIES),
                 "BENCH_ROUNDS": str(args.queries), "BENCH_TOUCH": str(min(args.touch, len(names)))}
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=child_env, check=True, capture_output=True,
                         text=True).stdout
    figures = {"corpora": args.corpora, "chunks_per_corpus": metadata.stats.get("total_chunks"), **json.loads(out)}
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
