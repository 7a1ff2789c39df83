#!/usr/bin/env python
"""What reading a site generator's syntax costs next to parsing the markdown, and what it leaves.

    python bench/sitegen.py --corpus /tmp/gen-k8s/content/en/docs
    python bench/sitegen.py --corpus tests/corpora/sitegen/mkdocs/docs --generator mkdocs

Scans the folder as a build does (exclusions, generator detection), then times, on one core,
`sitegen.clean` and `parse_markdown` over every page (best of `--repeat`), and counts the chunk
lines that still hold generator syntax. Prints one line.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from retrieval.ingest.folder import scan_corpus  # noqa: E402
from retrieval.ingest.pages import file_text, process_file  # noqa: E402
from retrieval.ingest.parsing import parse_markdown  # noqa: E402
from retrieval.ingest.sitegen import clean  # noqa: E402

LEFTOVER = re.compile(r"\{\{[<%]|[<%]\}\}|^\s*(?:!!!|\?\?\?|:::|```\{)|^(?:import|export) |</?Tabs?\b|</?TabItem|\{%")


def best_of(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--generator", help="instead of the detected one ('' for plain markdown)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scan = scan_corpus(Path(args.corpus))
    generator = scan.generator if args.generator is None else args.generator
    texts = {path: file_text(raw) for path, raw in scan.files.items()}
    cleaning = best_of(args.repeat, lambda: [clean(text, generator, path) for path, text in texts.items()])
    parsing = best_of(args.repeat, lambda: [parse_markdown(text) for text in texts.values()])
    taxonomy = scan.taxonomy_config()
    left = 0
    for path, raw in scan.files.items():
        result = process_file(path, raw, "", scan.manifests, taxonomy, generator)
        left += sum(1 for chunk in result.chunks for line in chunk.content.split("\n") if LEFTOVER.search(line))
    print(f"{Path(args.corpus).name}: generator={generator or 'none'} pages={len(texts)} "
          f"excluded={len(scan.excluded)} clean={cleaning:.2f}s parse={parsing:.2f}s "
          f"({cleaning / parsing:.0%} of parsing) chunk_lines_with_syntax={left}")


if __name__ == "__main__":
    main()
