#!/usr/bin/env python
"""What a build's lexicon costs: making it from the build's tables, and scoring a question against many.

    python bench/lexicon.py BUILD [BUILD ...] [--repeat 3] [--copies 1000] [--query Q]

For each finished build directory: the wall and CPU seconds of `lexicon_from_tables` over its tables (what
the build's `mapped` stage spends on it; best and every one of `--repeat` runs), its terms and file bytes;
then the CPU milliseconds of scoring `--query` against `--copies` copies of the lexicon
(`corpus_summary.page_text_scores`, what `list_corpora` and the routing of a search across corpora do per
question; best of 20). Run it from two checkouts with the same builds to compare them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_QUERY = "how do I paginate results with the python sdk"


def timed(call, *args) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds of every thread: the table scans decode on Lance's threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--query", default=DEFAULT_QUERY)
    args = parser.parse_args(argv)

    from retrieval.boot import boot

    boot()
    from retrieval.corpus_summary import page_text_scores
    from retrieval.format.layout import open_datasets
    from retrieval.format.lexicon import lexicon_files, lexicon_from_tables, query_terms

    terms = query_terms(args.query)
    for build in args.builds:
        chunks, documents = open_datasets(build)
        runs = [timed(lexicon_from_tables, chunks, documents) for _ in range(args.repeat)]
        lexicon = runs[-1][0]
        size = sum(len(data) for data in lexicon_files(lexicon).values())
        copies = [lexicon] * args.copies
        scoring = min(timed(page_text_scores, terms, copies)[2] for _ in range(20))
        print(f"{build}: lexicon {min(w for _l, w, _c in runs):.2f} s wall, {min(c for _l, _w, c in runs):.2f} s "
              f"CPU (runs, wall/CPU: {', '.join(f'{w:.2f}/{c:.2f}' for _l, w, c in runs)}); "
              f"{len(lexicon.hashes)} terms, {size / 1e6:.2f} MB; scoring {args.copies} copies "
              f"{scoring * 1000:.2f} ms CPU", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
