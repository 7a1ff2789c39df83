#!/usr/bin/env python
"""Embedding speed of a provider on its own: chunks a second, and the time to embed one question.

    python bench/embed.py --corpus ../shared/bench/k8s/corpus --queries ../shared/bench/k8s/dev.jsonl
    python bench/embed.py --corpus corpus/sample_docs --provider hash --chunks 0

The chunks are the corpus's own, chunked at h2 and embedded as a build embeds them (`Title >
Heading` context first); every question is embedded past the provider's query cache, one at a
time, as a search on a cold server does. A build's wall time also counts parsing and writing;
this isolates the model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from retrieval.boot import boot  # noqa: E402

boot()  # as the server and the build worker do
os.environ.setdefault("LANCE_LOG", "error")


def chunk_texts(corpus: Path) -> list[str]:
    from retrieval.ingest.chunking import chunk_document
    from retrieval.ingest.manifest import Strategy
    from retrieval.ingest.parsing import parse_markdown

    texts = []
    for path in sorted(corpus.rglob("*.md")):
        doc = parse_markdown(path.read_text(encoding="utf-8", errors="replace"))
        texts += [chunk.embed_text for chunk in chunk_document(str(path.relative_to(corpus)), doc, Strategy())]
    return texts


def main(argv: list[str] | None = None) -> int:
    from search import percentile
    from tqdm import tqdm

    from retrieval.embeddings import get_provider

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True, help="corpus directory (markdown)")
    ap.add_argument("--queries", type=Path, help="JSONL with a `query` per line: question embedding latency")
    ap.add_argument("--provider", default="local", choices=["hash", "local"])
    ap.add_argument("--chunks", type=int, default=600, help="chunks to embed, a seeded sample (0: none, -1: all)")
    args = ap.parse_args(argv)

    provider = get_provider(args.provider)
    provider.embed(["warm up the model"])
    texts = chunk_texts(args.corpus)
    if 0 <= args.chunks < len(texts):
        texts = random.Random(0).sample(texts, args.chunks)
    if texts:
        bar = tqdm(total=len(texts), desc="chunks", unit="chunk")
        seen = [0]

        def progress(done: int) -> None:
            bar.update(done - seen[0])
            seen[0] = done

        started, cpu = time.perf_counter(), time.process_time()
        provider.embed(texts, progress=progress)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        bar.close()
        print(f"chunks: {len(texts)} in {wall:.2f} s, {len(texts) / wall:.1f} chunks/s, "
              f"cpu {cpu:.2f} s ({cpu / wall:.2f} cores)")
    if args.queries:
        questions = [json.loads(line)["query"] for line in args.queries.read_text().splitlines() if line.strip()]
        times = []
        for question in tqdm(questions, desc="questions", unit="q"):
            started = time.perf_counter()
            provider.embed([question])
            times.append(time.perf_counter() - started)
        print(f"questions: {len(times)}, p50 {1000 * percentile(times, 50):.2f} ms, "
              f"p99 {1000 * percentile(times, 99):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
