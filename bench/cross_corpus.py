#!/usr/bin/env python
"""Quality across corpora: the same questions asked of each corpus alone and of /mcp/ across them all.

    python bench/cross_corpus.py                       # Kubernetes, Python docs and the sample, local model
    python bench/cross_corpus.py --provider none       # full-text only, builds in seconds
    python bench/cross_corpus.py --work /tmp/xc        # keep the builds; a second call reuses them

In a directory of its own (its own SQLite database and index root): register three corpora, `k8s`
(../shared/bench/k8s/corpus), `pydocs` (../shared/bench/pydocs/corpus) and `sample`
(corpus/sample_docs, the default corpus, as its suite's filtered cases need its taxonomy), each with a
description, and build them (progress on stderr). Then one suite of every case of their three
question files, each case naming its corpus, is run twice in-process through the docs profile of
/mcp/: scope `named` (each case's corpus as the `corpus` argument: asking that corpus alone) and
scope `all` (no `corpus` argument: one search across the three corpora, hits merged by score; a hit
counts only when it comes from the case's corpus). The second run also asks `list_corpora` each
question and counts how often the case's corpus comes first (corpus resolution).

Prints one table to stdout: per corpus and overall, MRR@10 / nDCG@10 / Hit@1 alone and across and
the difference, and corpus-resolution accuracy. `--json FILE` writes both runs' metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "bench"
sys.path.insert(0, str(ROOT))

# name, source, case file, description (what a team would write; list_corpora ranks with it)
CORPORA = (
    ("k8s", SHARED / "k8s" / "corpus", SHARED / "k8s" / "dev.jsonl",
     "Kubernetes v1.26 documentation: cluster concepts, workloads, services and networking, storage, "
     "security, kubectl tasks and tutorials, and the API reference"),
    ("pydocs", SHARED / "pydocs" / "corpus", SHARED / "pydocs" / "dev.jsonl",
     "Python 3.11 documentation: the language reference, the standard library (built-in functions and "
     "types, modules), tutorials and how-tos"),
    ("sample", ROOT / "corpus" / "sample_docs", ROOT / "corpus" / "sample_docs_eval.json", ""),
)


def _configure(work: Path, provider: str) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings",
        "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        "DOCSMCP_INDEX_ROOT": str(work / "indexes"),
        "DOCSMCP_EMBEDDING_PROVIDER": provider,
        "DOCSMCP_DEFAULT_CORPUS": "sample",
        "MCP_RATE_LIMIT_PER_MINUTE": "100000000",
        "MCP_RATE_LIMIT_REDIS_URL": "",
        "MCP_AUTH_REQUIRED": "false",
        "CELERY_BROKER_URL": "",
        "LANCE_LOG": "error",
        "DOCSMCP_LOG_LEVEL": "WARNING",
    })


def _bar(label: str):
    from tqdm import tqdm

    bar = tqdm(total=0, desc=label, unit="case", file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)

    def progress(done: int, total: int) -> None:
        bar.total, bar.n = total, done
        bar.refresh()

    return bar, progress


def _register(corpus, index: Path):
    """A build made elsewhere (`--index NAME=DIR`) registered and activated as this corpus's, unchanged."""
    from corpus.execution import build_activate
    from corpus.models import BuildRun
    from retrieval.format.metadata import read_metadata

    metadata = read_metadata(index)
    build = BuildRun.objects.create(corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL,
                                    status=BuildRun.COMPLETE, index_path=str(index), stats=metadata.stats,
                                    embedding_provider=(metadata.embedding or {}).get("provider") or "none",
                                    embedding=metadata.embedding)
    build_activate(build=build)
    corpus.refresh_from_db()
    print(f"{corpus.name}: registered build {metadata.build_id} from {index}", file=sys.stderr)
    return corpus, build


def _build(name: str, source: Path, description: str, provider: str, index: Path | None = None):
    """The corpus's active build, building it first when this directory has none (a kept --work)."""
    from corpus.execution import build_execute
    from corpus.models import BuildRun, Corpus
    from corpus.progress import StageBars
    from corpus.services import build_request, corpus_create

    corpus = Corpus.objects.filter(name=name).first()
    if corpus is not None and corpus.active_build is not None:
        print(f"{name}: reusing build {corpus.active_build.build_id}", file=sys.stderr)
        return corpus, corpus.active_build
    if corpus is None:
        corpus = corpus_create(name=name, source_dir=str(source), description=description, any_root=True,
                               corpus_settings={"embedding_provider": provider})
    if index is not None:
        return _register(corpus, index)
    print(f"building {name} from {source} ({provider}) ...", file=sys.stderr)
    bars = StageBars()
    try:
        build = build_execute(build=build_request(corpus=corpus, kind=BuildRun.KIND_FULL), echo=bars)
    finally:
        bars.close()
    if build.status != BuildRun.COMPLETE:
        raise SystemExit(f"build of {name} {build.status}: {build.error}")
    corpus.refresh_from_db()
    return corpus, build


def combined_cases(corpora=CORPORA) -> list[dict]:
    """Every case of the three files, named `<corpus>:<id>`, its category `<corpus>/<category>`, and its corpus."""
    from evals.cases import case_to_dict, read_cases

    out = []
    for name, _source, cases, _description in corpora:
        for spec in read_cases(cases):
            spec.name, spec.corpus = f"{name}:{spec.name}", name
            spec.category = f"{name}/{spec.category or 'none'}"
            out.append(case_to_dict(spec, "bench"))
    return out


def _level(group: dict) -> str:
    return "chunk" if group.get("chunk") else "file"


def table(alone: dict, across: dict) -> str:
    """Per corpus and overall: MRR@10, nDCG@10 and Hit@1 alone / across / difference, and resolution."""
    rows = [("all", alone["overall"], across["overall"])]
    rows += [(name, group, (across.get("by_corpus") or {}).get(name) or {})
             for name, group in (alone.get("by_corpus") or {}).items()]
    head = (f"{'corpus':<8} {'cases':>5} {'level':<5} | {'MRR@10 alone':>12} {'across':>7} {'diff':>7} | "
            f"{'nDCG@10 alone':>13} {'across':>7} | {'Hit@1 alone':>11} {'across':>7} | {'resolution':>10}")
    lines = [head, "-" * len(head)]
    for name, a, b in rows:
        for level in (("chunk", "file") if name == "all" else (_level(a),)):
            x, y = a.get(level) or {}, b.get(level) or {}
            if not x:
                continue
            res = (b.get("resolution") or {}).get("accuracy")
            diff = y.get("mrr@10", 0) - x["mrr@10"]
            lines.append(f"{name:<8} {x['n']:>5} {level:<5} | {x['mrr@10']:>12.3f} {y.get('mrr@10', 0):>7.3f} "
                         f"{diff:>+7.3f} | {x['ndcg@10']:>13.3f} {y.get('ndcg@10', 0):>7.3f} | "
                         f"{x['hit@1']:>11.3f} {y.get('hit@1', 0):>7.3f} | "
                         + (f"{res:>10.3f}" if res is not None else f"{'-':>10}"))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", default="local", choices=["none", "hash", "local"])
    parser.add_argument("--match", choices=["exact", "leaf"], default="leaf")
    parser.add_argument("--no-descriptions", action="store_true",
                        help="register the corpora without descriptions (list_corpora then ranks by titles "
                             "and summaries alone; the sample's manifest still has one)")
    parser.add_argument("--work", help="directory for the database and builds, kept and reused (default: a "
                                       "temporary one, removed)")
    parser.add_argument("--corpora", default=",".join(c[0] for c in CORPORA),
                        help="which of k8s, pydocs and sample to include (comma-separated; sample is always the "
                             "default corpus and is always included)")
    parser.add_argument("--index", action="append", default=[], metavar="NAME=BUILD_DIR",
                        help="use this existing build directory for corpus NAME instead of building it")
    parser.add_argument("--json", help="write both runs' metrics and latency to this file")
    args = parser.parse_args(argv)
    wanted = {n.strip() for n in args.corpora.split(",") if n.strip()} | {"sample"}
    unknown = wanted - {c[0] for c in CORPORA}
    if unknown:
        parser.error(f"unknown corpus {', '.join(sorted(unknown))}; use k8s, pydocs, sample")
    corpora = [c for c in CORPORA if c[0] in wanted]
    indexes = {}
    for item in args.index:
        name, sep, path = item.partition("=")
        if not sep or name not in wanted or not (Path(path) / "metadata.json").is_file():
            parser.error(f"--index expects NAME=BUILD_DIR with NAME one of the corpora and a build directory "
                         f"holding metadata.json, got {item!r}")
        indexes[name] = Path(path).resolve()

    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="docsmcp-bench-xc-"))
    work.mkdir(parents=True, exist_ok=True)
    _configure(work, args.provider)
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from evals.models import EvalRun
        from evals.services import eval_run, suite_import

        call_command("migrate", verbosity=0)
        chunks = {}
        for name, source, _cases, description in corpora:
            corpus, build = _build(name, source, "" if args.no_descriptions else description, args.provider,
                                   indexes.get(name))
            chunks[name] = (build.stats or {}).get("total_chunks")
        default = corpus.__class__.objects.get(name="sample")
        cases = work / "cross_corpus_cases.jsonl"
        cases.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in combined_cases(corpora)), encoding="utf-8")
        suite = suite_import(name="cross-corpus", path=cases, corpus=default, match_mode=args.match)
        runs = {}
        for scope in (EvalRun.SCOPE_NAMED, EvalRun.SCOPE_ALL):
            bar, progress = _bar(scope)
            runs[scope] = eval_run(corpus=default, suite=suite, scope=scope, progress=progress,
                                   baseline=runs.get(EvalRun.SCOPE_NAMED), requested_by="bench/cross_corpus.py")
            bar.close()
            if runs[scope].status != EvalRun.COMPLETE:
                print(f"{scope} run failed: {runs[scope].error}", file=sys.stderr)
                return 1
        alone, across = runs[EvalRun.SCOPE_NAMED], runs[EvalRun.SCOPE_ALL]
        print(f"# {', '.join(f'{n} {c} chunks' for n, c in chunks.items())}; provider {args.provider}; "
              f"match {args.match}; alone = run {alone.pk} (scope named), across = run {across.pk} (scope all)")
        print(table(alone.metrics, across.metrics))
        for label, run in (("alone", alone), ("across", across)):
            s = run.latency.get("search") or {}
            line = f"# {label}: search p50 {s.get('p50')} ms p95 {s.get('p95')} ms"
            lc = run.latency.get("list_corpora")
            print(line + (f"; list_corpora p50 {lc['p50']} ms p95 {lc['p95']} ms" if lc else ""))
        if args.json:
            Path(args.json).write_text(json.dumps({
                "provider": args.provider, "match": args.match, "chunks": chunks,
                "alone": {"run": alone.pk, "metrics": alone.metrics, "latency": alone.latency},
                "across": {"run": across.pk, "metrics": across.metrics, "latency": across.latency,
                           "delta": across.delta},
            }, indent=2) + "\n", encoding="utf-8")
        return 0
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
