#!/usr/bin/env python
"""What heuristic content fixes do to a suite: accept every keywords proposal for the questions
whose page is not first, rebuild, and compare every case's file rank before and after.

    python bench/content_fixes.py --corpus corpus/sample_docs --suite corpus/sample_docs_eval.json
    python bench/content_fixes.py --corpus corpus/sample_docs --suite corpus/sample_docs_eval.json --provider local

The corpus is copied to a temporary directory; nothing of it is changed. The questions that
motivate a page's keywords are the same ones measured afterwards, so this shows that the
mechanism works and what the added keywords cost the other questions (cases that were first
and no longer are), not how well keywords generalise to new wording. One line to stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from retrieval.boot import boot  # noqa: E402

boot()  # as the server and the build worker do

from retrieval.embeddings import get_provider  # noqa: E402
from retrieval.fixes.content import ContentFixError, keywords_fix, page_context  # noqa: E402
from retrieval.ingest.build import BuildRequest, build_index  # noqa: E402
from retrieval.search.engine import SearchRequest, search  # noqa: E402
from retrieval.search.index import Index  # noqa: E402

SECRET = b"bench"


def load_cases(path: Path) -> list[dict]:
    text = path.read_text()
    rows = json.loads(text) if text.lstrip().startswith("[") else [json.loads(line) for line in text.splitlines()
                                                                    if line.strip()]
    cases = []
    for row in rows:
        files = row.get("expected_files") or row.get("expectedFiles") or []
        chunk = row.get("expectedChunkId") or row.get("expected_chunk_id")
        chunks = row.get("expected_chunk_ids") or row.get("expectedChunkIds") or ([chunk] if chunk else [])
        files = list(files) or sorted({c.split("#", 1)[0] for c in chunks})
        if files:
            cases.append({"query": row["query"], "filters": row.get("filters") or {}, "files": files})
    return cases


def ranks(index_dir: Path, cases: list[dict], provider) -> list[int | None]:
    index = Index(index_dir)
    out = []
    for case in cases:
        result = search(index, SearchRequest(case["query"], case["filters"], limit=10), embedder=provider,
                        cursor_secret=SECRET)
        files = list(dict.fromkeys(h.filepath for h in result.hits))
        found = [n for n, f in enumerate(files, 1) if f in case["files"]]
        out.append(found[0] if found else None)
    return out


def mrr(values: list[int | None]) -> float:
    return sum(1 / r for r in values if r) / max(len(values), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--suite", type=Path, required=True)
    parser.add_argument("--provider", default="none", choices=["none", "hash", "local"])
    args = parser.parse_args()
    provider = None if args.provider == "none" else get_provider(args.provider)
    cases = load_cases(args.suite)
    with tempfile.TemporaryDirectory(prefix="docsmcp-bench-content-") as tmp:
        work = Path(tmp)
        docs = work / "docs"
        shutil.copytree(args.corpus, docs)
        build_index(BuildRequest(docs, work / "before", "before", "bench", provider=provider, workers=1))
        before = ranks(work / "before", cases, provider)
        missed: dict[str, list[str]] = defaultdict(list)
        for case, rank in zip(cases, before, strict=True):
            if rank != 1 and len(case["files"]) == 1:
                missed[case["files"][0]].append(case["query"])
        proposed, refused = 0, 0
        for relpath, questions in sorted(missed.items()):
            try:
                fix = keywords_fix(page_context(docs, relpath), relpath, questions, [])
            except ContentFixError as exc:
                refused += 1
                print(f"  no proposal for {relpath}: {exc}", file=sys.stderr)
                continue
            (docs / relpath).write_text(fix.new_text, encoding="utf-8")
            proposed += 1
            added = fix.rationale.split("Adds ", 1)[1].split(" to its front matter", 1)[0]
            print(f"  {relpath}: {len(questions)} question(s) -> keywords {added}", file=sys.stderr)
        build_index(BuildRequest(docs, work / "after", "after", "bench", provider=provider, workers=1))
        after = ranks(work / "after", cases, provider)
    was_missed = [n for n, r in enumerate(before) if r != 1]
    for n in was_missed:
        print(f"  rank {before[n]} -> {after[n]}: {cases[n]['query']!r} ({', '.join(cases[n]['files'])})",
              file=sys.stderr)
    fixed = sum(1 for n in was_missed if after[n] == 1)
    lost = sum(1 for n, r in enumerate(before) if r == 1 and after[n] != 1)
    print(f"{args.corpus.name} ({args.provider}): {len(cases)} cases, {len(was_missed)} not first -> "
          f"{proposed} keywords proposals ({refused} pages with no missing word) | now first: {fixed} of "
          f"{len(was_missed)} | first before, not after: {lost} | file MRR@10 {mrr(before):.3f} -> {mrr(after):.3f}")


if __name__ == "__main__":
    main()
