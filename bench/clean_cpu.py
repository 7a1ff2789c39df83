#!/usr/bin/env python
"""CPU time of reading each page's site-generator syntax (`sitegen.clean`), per docs folder.

    python bench/clean_cpu.py /tmp/gen-k8s/content/en/docs /tmp/sites/mystmd/docs
    python bench/clean_cpu.py --root /tmp/sites/before /tmp/sites/mystmd/docs   # another tree's code

Scans each folder as a build does (exclusions, generator detection), then cleans every page, best of
`--repeat`, timed with `time.process_time`: on a machine other work loads, the CPU the process used
moves far less than wall time does. Prints one line per folder.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent),
                        help="the tree whose retrieval/ is timed (default: this one)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    from retrieval.ingest.folder import scan_corpus
    from retrieval.ingest.pages import file_text
    from retrieval.ingest.sitegen import clean

    for folder in args.folders:
        scan = scan_corpus(Path(folder))
        texts = {path: file_text(raw) for path, raw in scan.files.items()}
        best = float("inf")
        for _ in range(args.repeat):
            started = time.process_time()
            for path, text in texts.items():
                clean(text, scan.generator, path)
            best = min(best, time.process_time() - started)
        print(f"{folder}: generator={scan.generator or 'none'} pages={len(texts)} clean_cpu={best:.3f}s", flush=True)


if __name__ == "__main__":
    main()
