"""Time the reads besides search on one finished build: a chunk by ID (with and without context), a page,
an outline, the page listing and a filter mask, in this process, one call at a time.

    python bench/doc_reads.py BUILD_DIR [--calls 300] [--rounds 3]

What `get_doc`, `get_document`, `get_outline`, `list_documents` and a filtered search's vector leg cost
the engine, without the transport (bench/http_load.py times searches over HTTP). The first call of each
(opening the tables, Lance's runtime) is left out; each read's IDs cycle through the build's chunks and
pages. Prints each read's median and 95th percentile in ms, the best round of `--rounds`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _timed(call, arguments: list, calls: int) -> list[float]:
    call(*arguments[0])
    out = []
    for i in range(calls):
        started = time.perf_counter()
        call(*arguments[i % len(arguments)])
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", type=Path)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from retrieval.boot import boot

    boot()
    from retrieval.format.layout import sql_string
    from retrieval.search import documents
    from retrieval.search.index import Index

    index = Index(args.build)
    catalog = index.catalog()
    chunk_ids = catalog.table["chunk_id"].to_pylist()[:: max(1, len(catalog) // 200)]
    pages = [d.filepath for d in documents.all_documents(index)][::2]
    reads = {
        "get_chunk": (lambda c: documents.get_chunk(index, c), [(c,) for c in chunk_ids]),
        "get_chunk context=2": (lambda c: documents.get_chunk(index, c, 2), [(c,) for c in chunk_ids]),
        "get_document": (lambda p: documents.get_document(index, p), [(p,) for p in pages]),
        "get_outline": (lambda p: documents.get_outline(index, p), [(p,) for p in pages]),
        "list_documents": (lambda: documents.list_documents(index, 100, 0), [()]),
        # a new clause each call: the mask cache would otherwise answer
        "filter mask": (lambda p: (index._masks.clear(), index.filter_mask(f"filepath = {sql_string(p)}")),
                        [(p,) for p in pages]),
    }
    print(f"{index.build_id}: {len(catalog)} chunks, {len(pages) * 2} pages; {args.calls} calls, best of "
          f"{args.rounds} rounds")
    for name, (call, arguments) in reads.items():
        best = min((_timed(call, arguments, args.calls) for _ in range(args.rounds)), key=statistics.median)
        best.sort()
        print(f"{name:<22} p50 {statistics.median(best):6.2f} ms   p95 {best[int(len(best) * 0.95)]:6.2f} ms")


if __name__ == "__main__":
    main()
