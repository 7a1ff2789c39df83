#!/usr/bin/env python
"""Routing a search across corpora: MRR@10 of each corpus's questions asked of that corpus alone, then
across every corpus with DOCSMCP_SEARCH_ROUTE_TOP at each value given, and how often the question's corpus
was among those ranked in full.

    python bench/route_quality.py --database sqlite:////tmp/xc/bench.sqlite3 [--tops 0,2,1]

`--database` is a server's database whose corpora are built already (bench/cross_corpus.py --work DIR leaves
one in DIR/bench.sqlite3; `manage.py build_index` adds more, e.g. PowerShell from ../shared/bench/scale/corpus-1).
Questions: Kubernetes (`k8s`, by file), Python docs (`pydocs`, by file), the sample's unfiltered cases
(`sample`, by chunk) and PowerShell's known-item questions (`powershell`: ../shared/bench/scale/corpus-1, by
file), for whichever of those corpora the database serves; a hit counts only from the
question's corpus. Searches run in-process through corpus.serving (no HTTP). JSON on stdout; progress on
stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "bench"
sys.path.insert(0, str(ROOT))


def cases() -> list[tuple[str, str, set[str], set[str]]]:
    """(corpus, question, expected files, expected chunk IDs)."""
    out = []
    for name, path in (("k8s", SHARED / "k8s" / "dev.jsonl"), ("pydocs", SHARED / "pydocs" / "dev.jsonl"),
                       ("powershell", SHARED / "scale" / "queries.jsonl")):
        for line in path.read_text().splitlines():
            case = json.loads(line)
            out.append((name, case["query"], set(case.get("expected_files") or []), set()))
    for case in json.loads((ROOT / "corpus" / "sample_docs_eval.json").read_text()):
        if not case.get("filters"):
            out.append(("sample", case["query"], set(),
                        set(case.get("expectedChunkIds") or [case.get("expectedChunkId")])))
    return out


def reciprocal_rank(hits: list[tuple[str, str, str]], corpus: str, files: set[str], chunks: set[str]) -> float:
    for rank, (hit_corpus, filepath, chunk_id) in enumerate(hits[:10], start=1):
        if hit_corpus == corpus and (filepath in files or chunk_id in chunks):
            return 1 / rank
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--tops", default="0,2,1", help="DOCSMCP_SEARCH_ROUTE_TOP values, comma-separated")
    args = parser.parse_args()
    os.environ.update({"DJANGO_SETTINGS_MODULE": "docsmcp_site.settings", "DATABASE_URL": args.database,
                       "DOCSMCP_QUERY_LOG": "off", "CELERY_BROKER_URL": "", "DOCSMCP_LOG_LEVEL": "WARNING"})
    import django

    django.setup()
    from django.conf import settings

    from corpus.serving import corpora as corpora_module
    from corpus.serving import corpora_search, corpus_search, readable_corpus_names
    from retrieval.search.engine import SearchRequest
    from retrieval.search.index_cache import INDEXES

    INDEXES.configure(budget_bytes=None, max_open=None)
    names = readable_corpus_names()
    asked = [c for c in cases() if c[0] in names]
    print(f"corpora {names}, {len(asked)} questions", file=sys.stderr)

    def mrr(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    figures: dict[str, dict] = {"corpora": {"names": names}}
    alone: dict[str, list[float]] = {}
    for corpus, query, files, chunks in asked:
        hits = corpus_search(corpus, SearchRequest(query=query, limit=10)).result.hits
        alone.setdefault(corpus, []).append(reciprocal_rank([(corpus, h.filepath, h.chunk_id) for h in hits],
                                                            corpus, files, chunks))
    figures["alone"] = {k: mrr(v) for k, v in alone.items()} | {"all": mrr(sum(alone.values(), []))}

    routed: list[list[str]] = []
    route = corpora_module._routed

    def watched(*a, **k):  # which corpora each search ranked in full
        chosen = route(*a, **k)
        routed.append([a[2][i][0] for i in chosen])
        return chosen

    corpora_module._routed = watched
    for top in [int(t) for t in args.tops.split(",")]:
        settings.DOCSMCP_SEARCH_ROUTE_TOP = top
        across: dict[str, list[float]] = {}
        kept = []
        started = time.process_time()
        for done, (corpus, query, files, chunks) in enumerate(asked, start=1):
            found = corpora_search(names, SearchRequest(query=query, limit=10))
            across.setdefault(corpus, []).append(reciprocal_rank(
                [(h.corpus.name, h.hit.filepath, h.hit.chunk_id) for h in found.hits], corpus, files, chunks))
            kept.append(corpus in routed[-1])
            print(f"\rroute top {top}: {done}/{len(asked)}", end="", file=sys.stderr)
        print(file=sys.stderr)
        figures[f"across, route top {top}"] = {k: mrr(v) for k, v in across.items()} | {
            "all": mrr(sum(across.values(), [])),
            "question's corpus ranked": round(sum(kept) / len(kept), 4),
            "cpu ms per search": round((time.process_time() - started) / len(asked) * 1000, 2)}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
