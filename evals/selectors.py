"""Reads of the evals app: what the dashboards, the admin and other apps show.

Every function here runs a fixed number of queries whatever the number of runs or cases
(window functions keep "the latest N per group" in the database).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber

from corpus.access import visible_only
from corpus.models import Corpus

from . import compare
from .cases import CaseSpec, dump_cases
from .errors import RunNotFound, SuiteNotFound
from .metrics import HEADLINE_KEYS
from .models import EvalResult, EvalRun, EvalSuite

HISTORY_PER_SERIES = 60  # runs per (corpus, suite) drawn in the overview's charts
RUN_FIELDS = ("id", "suite_id", "corpus_id", "build_id", "build_label", "mode", "target_url", "status",
              "progress_done", "progress_total", "metrics", "latency", "build_seconds", "index_bytes",
              "created_at", "started_at", "finished_at", "baseline_id", "error")


def _latest_per(queryset, partition: list[str], n: int):
    """The newest `n` runs of each partition (one query)."""
    return queryset.annotate(
        row_number=Window(RowNumber(), partition_by=[F(p) for p in partition],
                          order_by=[F("created_at").desc(), F("id").desc()]),
    ).filter(row_number__lte=n)


def headline(metrics: dict | None) -> dict:
    """Headline numbers of a run: chunk level when it has one, file level otherwise, plus pass rate."""
    overall = (metrics or {}).get("overall") or {}
    level = "chunk" if overall.get("chunk") else "file"
    values = overall.get(level) or {}
    out = {"level": level if values else None, **{k: values.get(k) for k in HEADLINE_KEYS}}
    out["file_mrr@10"] = (overall.get("file") or {}).get("mrr@10")
    out["file_hit@1"] = (overall.get("file") or {}).get("hit@1")
    out["pass_rate"] = overall.get("pass_rate")
    # runs before coverage verdicts called the cases the docs do not answer "zero_result"
    out["unanswerable"] = (overall.get("unanswerable") or overall.get("zero_result") or {}).get("accuracy")
    coverage = overall.get("coverage") or {}
    out["coverage_precision"], out["coverage_recall"] = coverage.get("precision"), coverage.get("recall")
    out["coverage_flagged"] = coverage.get("answerable_flagged")
    out["resolution"] = (overall.get("resolution") or {}).get("accuracy")
    return out


def latest_scores_for_builds(build_ids: Iterable[int]) -> dict[int, list[dict]]:
    """{build pk: [headline scores of the latest complete run of each suite on that build]} (one query).

    For the build list in the admin: `{"suite", "run", "mode", "level", "mrr@10", "ndcg@10",
    "recall@10", "hit@1", "hit@5", "pass_rate", ...}` per suite, suites by name.
    """
    ids = [int(i) for i in build_ids if i is not None]
    if not ids:
        return {}
    runs = _latest_per(
        EvalRun.objects.filter(build_id__in=ids, status=EvalRun.COMPLETE).values(
            "id", "build_id", "mode", "metrics", "created_at", suite_name=F("suite__name")),
        ["build_id", "suite_id", "mode"], 1)
    out: dict[int, list[dict]] = defaultdict(list)
    for run in runs:
        out[run["build_id"]].append({"suite": run["suite_name"], "run": run["id"], "mode": run["mode"],
                                     **headline(run["metrics"])})
    for scores in out.values():
        scores.sort(key=lambda s: (s["suite"], s["mode"]))
    return dict(out)


def _visible_suites():
    """Suites of the corpora the caller may see: a key limited to some corpora learns neither the names nor
    the cases of another corpus's suites."""
    return visible_only(EvalSuite.objects.all(), "corpus__name")


def _visible_runs():
    """Runs on a corpus the caller may see, of a suite of a corpus the caller may see (a run's results
    quote its suite's cases)."""
    return visible_only(visible_only(EvalRun.objects, "corpus__name"), "suite__corpus__name")


def suite_get(name: str, *, corpus: Corpus) -> EvalSuite:
    """The suite `name` of `corpus` (of the corpus it is a version of): a name means nothing outside its corpus."""
    family = corpus.family
    suite = _visible_suites().filter(corpus=family, name=name).select_related("corpus").first()
    if suite is None:
        names = ", ".join(_visible_suites().filter(corpus=family).order_by("name")
                          .values_list("name", flat=True)[:50]) or "none yet"
        raise SuiteNotFound(f"eval suite {name!r} not found in corpus {family.name!r}; its suites: {names} "
                            "(import one with --cases FILE)")
    return suite


def suites_named(name: str) -> list[EvalSuite]:
    """Every suite called `name` in the corpora the caller may see (one per corpus at most)."""
    suites = list(_visible_suites().filter(name=name).select_related("corpus"))
    if not suites:
        raise SuiteNotFound(f"eval suite {name!r} not found in any corpus you may read")
    return suites


def suite_list(*, corpus: Corpus | None = None):
    suites = _visible_suites()
    if corpus is not None:
        suites = suites.filter(corpus=corpus.family)
    return suites.select_related("corpus").annotate(case_count=Count("cases")).order_by("name", "corpus__name")


def suite_export(*, suite: EvalSuite, fmt: str = "jsonl", style: str | None = None) -> str:
    specs = [CaseSpec(name=c.name, query=c.query, category=c.category, filters=c.filters,
                      expected_chunk_ids=c.expected_chunk_ids, expected_files=c.expected_files, extra=c.extra,
                      corpus=c.corpus, answerable=c.answerable, max_rank=c.max_rank,
                      require_covered=c.require_covered)
             for c in suite.cases.order_by("position", "pk")]
    return dump_cases(specs, fmt, style)


def run_get(pk: int) -> EvalRun:
    run = (_visible_runs()
           .select_related("suite", "corpus", "build", "baseline", "baseline__build").filter(pk=pk).first())
    if run is None:
        raise RunNotFound(f"eval run {pk} not found")
    return run


def run_results(run: EvalRun) -> list[EvalResult]:
    """Failures first, then worst rank first: what someone opening a run wants to see."""
    return list(run.results.select_related("case").order_by("passed", "score", "case_name"))


def case_scores(run: EvalRun) -> dict[str, float]:
    return dict(run.results.values_list("case_name", "score"))


def run_list(*, corpus=None, suites: Iterable[EvalSuite] | None = None, status: str | None = None):
    runs = _visible_runs().select_related("suite", "corpus").order_by("-created_at", "-pk")
    if corpus is not None:
        runs = runs.filter(corpus=corpus)
    if suites is not None:
        runs = runs.filter(suite__in=list(suites))
    return runs.filter(status=status) if status else runs


def compare_choices(run: EvalRun, limit: int = 50) -> list[EvalRun]:
    """Other complete runs of the same suite, newest first, to compare this run against."""
    return list(_visible_runs()
                .filter(suite_id=run.suite_id, status=EvalRun.COMPLETE).exclude(pk=run.pk)
                .select_related("corpus").only("id", "created_at", "build_label", "mode", "corpus__name")
                .order_by("-created_at", "-pk")[:limit])


ACROSS = "/mcp/ across corpora"  # the overview's heading for runs of scope all and named


def _heading(run: EvalRun) -> str:
    return run.corpus.name if run.scope == EvalRun.SCOPE_CORPUS else ACROSS


def overview() -> list[dict]:
    """Per corpus, per suite: the latest complete run's headline, history for the charts, runs in flight.
    Runs across corpora (scope all or named) are one more group, a series per suite and scope."""
    history = list(_latest_per(
        EvalRun.objects.filter(status=EvalRun.COMPLETE).select_related("suite", "corpus").only(
            "id", "suite__name", "corpus__name", "build_label", "mode", "scope", "metrics", "latency", "created_at",
            "build_seconds", "index_bytes", "finished_at", "suite_id", "corpus_id"),
        ["corpus_id", "suite_id", "scope"], HISTORY_PER_SERIES))
    in_flight = list(EvalRun.objects.filter(status__in=EvalRun.IN_FLIGHT).select_related("suite", "corpus")
                     .only("id", "suite__name", "corpus__name", "status", "progress_done", "progress_total",
                           "created_at", "mode", "scope", "suite_id", "corpus_id")
                     .order_by("-created_at")[:20])
    groups: dict[tuple[str, str, int, str], list[EvalRun]] = defaultdict(list)
    for run in history:  # by suite row: two corpora's suites of one name are two series
        groups[(_heading(run), run.suite.name, run.suite_id, run.scope)].append(run)
    corpora: dict[str, dict] = {}
    for (corpus_name, suite_name, _suite_id, scope), runs in sorted(groups.items()):
        runs.sort(key=lambda r: (r.created_at, r.pk))
        latest = runs[-1]
        previous = runs[-2] if len(runs) > 1 else None
        entry = corpora.setdefault(corpus_name, {"corpus": corpus_name, "suites": [], "in_flight": []})
        entry["suites"].append({
            "suite": suite_name, "scope": scope, "latest": latest, "headline": headline(latest.metrics),
            "previous_headline": headline(previous.metrics) if previous else None,
            "runs": runs, "count": len(runs),
        })
    for run in in_flight:
        corpora.setdefault(_heading(run), {"corpus": _heading(run), "suites": [], "in_flight": []})[
            "in_flight"].append(run)
    return [corpora[name] for name in sorted(corpora)]


def compare_runs(run: EvalRun, other: EvalRun) -> dict:
    """`run` against `other` (the reference): metric deltas and one row per case, worse first."""
    mine = {r.case_name: r for r in run.results.all()}
    theirs = {r.case_name: r for r in other.results.all()}
    statuses = compare.case_statuses({n: r.score for n, r in theirs.items()}, {n: r.score for n, r in mine.items()})
    order = {s: i for i, s in enumerate(compare.STATUSES)}
    rows = []
    for name, status in statuses.items():
        a, b = mine.get(name), theirs.get(name)
        rows.append({"name": name, "status": status, "category": (a or b).category, "query": (a or b).query,
                     "zero": (a or b).zero_result,
                     "coverage": a.coverage if a else "", "other_coverage": b.coverage if b else "",
                     "rank": a.rank if a else None, "other_rank": b.rank if b else None,
                     "score": a.score if a else None, "other_score": b.score if b else None,
                     "delta": round(a.score - b.score, 4) if a and b else None,
                     "passed": a.passed if a else None, "other_passed": b.passed if b else None,
                     "top_hit": (a.top_hits or [""])[0] if a else "", "other_top_hit": (b.top_hits or [""])[0] if b else ""})
    rows.sort(key=lambda r: (order[r["status"]], r["delta"] if r["delta"] is not None else 0, r["name"]))
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in compare.STATUSES}
    return {"metrics": compare.metric_delta(other.metrics or {}, run.metrics or {}),
            "embedding_note": embedding_note(run, other),
            "latency": compare.diff_numbers(other.latency or {}, run.latency or {}) or {},
            "rows": rows, "counts": counts}


def embedding_note(run: EvalRun, other: EvalRun | None) -> str:
    """'' unless both runs' builds are known and were embedded differently."""
    if other is None or run.build is None or other.build is None:
        return ""
    return compare.embedding_note(other.build.embedding, run.build.embedding)
