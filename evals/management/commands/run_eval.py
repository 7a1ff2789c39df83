import json
import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from corpus.errors import CorpusError
from corpus.selectors import corpus_get, default_corpus
from evals.errors import EvalError
from evals.models import EvalRun
from evals.selectors import headline, suite_get
from evals.services import eval_run, suite_import


def parse_pairs(items, sep, what):
    out = {}
    for item in items or []:
        if sep not in item:
            raise CommandError(f"{what} expects NAME{sep}VALUE, got {item!r}")
        key, _, value = item.partition(sep)
        out[key.strip()] = value.strip()
    return out


def summary_line(run: EvalRun) -> str:
    overall = run.metrics.get("overall") or {}
    on = run.corpus.name if run.scope == EvalRun.SCOPE_CORPUS else f"/mcp/ (scope {run.scope})"
    parts = [f"run {run.pk} {run.status}: suite {run.suite.name} on {on}",
             f"build {run.build_label or '-'}", run.mode + (f" {run.target_url}" if run.target_url else ""),
             f"{overall.get('passed', 0)}/{overall.get('cases', 0)} passed"]
    for level in ("chunk", "file"):
        agg = overall.get(level)
        if agg:
            parts.append(f"{level}: MRR@10 {agg['mrr@10']:.3f} nDCG@10 {agg['ndcg@10']:.3f} "
                         f"R@10 {agg['recall@10']:.3f} Hit@1 {agg['hit@1']:.3f} Hit@5 {agg['hit@5']:.3f}")
    unanswerable = overall.get("unanswerable")
    if unanswerable:
        parts.append(f"not answerable: {unanswerable['accuracy']:.3f} ok ({unanswerable['not_covered']} not_covered, "
                     f"{unanswerable['partial']} partial of {unanswerable['n']})")
    coverage = overall.get("coverage")
    if coverage:
        shown = " ".join(f"{k} {coverage[k]:.3f}" if coverage[k] is not None else f"{k} -"
                         for k in ("precision", "recall", "answerable_flagged"))
        parts.append(f"coverage {shown}")
    if overall.get("resolution"):
        parts.append(f"corpus resolution {overall['resolution']['accuracy']:.3f}")
    search = (run.latency or {}).get("search") or {}
    if search:
        parts.append(f"search p50 {search['p50']} ms p95 {search['p95']} ms p99 {search['p99']} ms")
    return " | ".join(parts)


class Command(BaseCommand):
    help = ("Run an eval suite against a corpus's active build, in-process through the docs profile's tools "
            "(default) or over HTTP against any MCP server; store per-case results and metrics. "
            "Exit 1 when the run fails.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", help="corpus name (default: the default corpus)")
        parser.add_argument("--suite", required=True, help="suite name, one of the corpus's suites (created by "
                                                            "--cases when new)")
        parser.add_argument("--cases", help="JSON/JSONL case file: imports or refreshes the suite first")
        parser.add_argument("--over-http", metavar="URL", help="MCP endpoint to measure, e.g. http://127.0.0.1:8001/mcp/")
        parser.add_argument("--baseline", type=int, metavar="RUN_ID", help="complete run to compute deltas against")
        parser.add_argument("--max-rounds", type=int, default=3, help="search_docs calls per case, following "
                                                                       "next_cursor (default 3)")
        parser.add_argument("--match", choices=["exact", "leaf"], help="chunk matching (default: the suite's)")
        parser.add_argument("--scope", choices=[s for s, _ in EvalRun.SCOPE_CHOICES], default=EvalRun.SCOPE_CORPUS,
                            help="corpus (default): search the run's corpus; all: ask /mcp/ without a corpus "
                                 "argument (a search across corpora) and measure corpus resolution with "
                                 "list_corpora; named: ask /mcp/ with each case's own corpus as the argument. "
                                 "all and named need a `corpus` on every case")
        parser.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                            help="filter sent with every case (repeatable); a case's own filters win")
        parser.add_argument("--header", action="append", default=[], metavar="'Name: value'",
                            help="extra HTTP header for --over-http (repeatable), e.g. an API key")
        parser.add_argument("--json", action="store_true", help="print the run's metrics and latency as JSON")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **options):
        try:
            corpus = corpus_get(options["corpus"]) if options["corpus"] else default_corpus()
            if options["cases"]:
                suite = suite_import(name=options["suite"], path=options["cases"], corpus=corpus)
                self.stderr.write(f"suite {suite.name}: {suite.cases.count()} cases from {options['cases']}")
            else:
                suite = suite_get(options["suite"], corpus=corpus)
            baseline = None
            if options["baseline"]:
                baseline = EvalRun.objects.filter(pk=options["baseline"]).first()
                if baseline is None:
                    raise CommandError(f"baseline run {options['baseline']} not found")
        except (CorpusError, EvalError) as exc:
            raise CommandError(str(exc)) from exc
        show = not options["no_progress"] and sys.stderr.isatty()
        bar = tqdm(total=0, desc="eval", unit="case", file=sys.stderr, disable=not show, dynamic_ncols=True)

        def progress(done, total):
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            run = eval_run(corpus=corpus, suite=suite,
                           mode=EvalRun.MODE_HTTP if options["over_http"] else EvalRun.MODE_IN_PROCESS,
                           url=options["over_http"], baseline=baseline, max_rounds=options["max_rounds"],
                           match=options["match"], extra_filters=parse_pairs(options["filter"], "=", "--filter"),
                           scope=options["scope"],
                           headers=parse_pairs(options["header"], ":", "--header"), progress=progress,
                           requested_by="manage.py")
        except EvalError as exc:
            raise CommandError(str(exc)) from exc
        except KeyboardInterrupt:
            bar.close()
            self.stderr.write("interrupted: the run is marked failed; no results were saved")
            raise SystemExit(130) from None
        finally:
            bar.close()
        if run.status != EvalRun.COMPLETE:
            self.stderr.write(f"run {run.pk} {run.status}: {run.error}")
            raise SystemExit(1)
        if options["json"]:
            self.stdout.write(json.dumps({"run": run.pk, "metrics": run.metrics, "latency": run.latency,
                                          "delta": run.delta}, indent=2))
        self.stdout.write(summary_line(run))
        for name, group in (run.metrics.get("by_category") or {}).items():
            h = headline({"overall": group})
            self.stdout.write(f"  {name:<20} {group['passed']}/{group['cases']} passed"
                              + (f"  {h['level']} MRR@10 {h['mrr@10']:.3f} Hit@1 {h['hit@1']:.3f}" if h["level"] else ""))
        for name, group in (run.metrics.get("by_corpus") or {}).items():
            h, res = headline({"overall": group}), group.get("resolution")
            self.stdout.write(f"  corpus {name:<13} {group['passed']}/{group['cases']} passed"
                              + (f"  {h['level']} MRR@10 {h['mrr@10']:.3f} Hit@1 {h['hit@1']:.3f}" if h["level"] else "")
                              + (f"  resolution {res['accuracy']:.3f}" if res else ""))
        if run.delta:
            cases = run.delta["cases"]
            self.stdout.write(f"vs baseline {run.delta['baseline']}: {len(cases['better'])} better, "
                              f"{len(cases['worse'])} worse, {cases['same']} same"
                              + (f"; worse: {', '.join(cases['worse'][:20])}" if cases["worse"] else ""))
