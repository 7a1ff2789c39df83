"""Dashboards: the overview per corpus, a run's page, and the comparison of two runs.

Staff only (the admin's login): eval cases and results show queries and document paths of
every corpus, which is internal. Each view runs a fixed number of queries whatever the number
of runs or cases (tests/evals/test_eval_dashboard.py counts them).
"""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404
from django.shortcuts import render

from . import charts, selectors
from .errors import RunNotFound
from .metrics import file_of, match_chunks
from .models import EvalRun

CHART_METRICS = ("mrr@10", "ndcg@10", "recall@10", "hit@1", "hit@5")
LATENCY_ROWS = (("search", "search_docs, every call"), ("search_first", "search_docs, first call of a case"),
                ("get_doc", "get_doc on the top hit"), ("list_corpora", "list_corpora with the case's query"))
COVERAGE_KEYS = ("precision", "recall", "precision_partial", "recall_partial", "answerable_flagged")
TABLE_METRICS = ("mrr@10", "ndcg@5", "ndcg@10", "recall@5", "recall@10", "hit@1", "hit@5")


def _run_or_404(pk: int) -> EvalRun:
    try:
        return selectors.run_get(pk)
    except RunNotFound as exc:
        raise Http404(str(exc)) from None


def _x_label(run: EvalRun) -> str:
    return f"{run.build_label or 'no build'} · {run.created_at:%Y-%m-%d %H:%M}"


def _level_values(run: EvalRun, level: str, key: str) -> float | None:
    return ((run.metrics.get("overall") or {}).get(level) or {}).get(key)


def _suite_charts(runs: list[EvalRun]) -> list:
    labels = [f"run #{r.pk} · {_x_label(r)}" for r in runs]
    axis = [f"{r.created_at:%m-%d %H:%M}" for r in runs]
    out = []
    for key in CHART_METRICS:
        series = [charts.Series(f"chunk {key}", [_level_values(r, "chunk", key) for r in runs]),
                  charts.Series(f"file {key}", [_level_values(r, "file", key) for r in runs])]
        series = [s for s in series if any(v is not None for v in s.values)]
        out.append(charts.line_chart(series, labels, title=key, axis_labels=axis))
    latency = [charts.Series("search p50", [((r.latency or {}).get("search") or {}).get("p50") for r in runs]),
               charts.Series("search p95", [((r.latency or {}).get("search") or {}).get("p95") for r in runs])]
    out.append(charts.line_chart(latency, labels, title="search latency", y_max=None, digits=1, unit=" ms",
                                 axis_labels=axis))
    coverage = [((r.metrics.get("overall") or {}).get("coverage") or {}) for r in runs]
    if any(coverage):
        out.append(charts.line_chart([charts.Series("precision", [x.get("precision") for x in coverage]),
                                      charts.Series("recall", [x.get("recall") for x in coverage]),
                                      charts.Series("answerable flagged", [x.get("answerable_flagged")
                                                                           for x in coverage])],
                                     labels, title="coverage verdict (not_covered flags)", axis_labels=axis))
    resolution = [((r.metrics.get("overall") or {}).get("resolution") or {}) for r in runs]
    if any(resolution):
        out.append(charts.line_chart([charts.Series("first", [x.get("accuracy") for x in resolution]),
                                      charts.Series("mrr", [x.get("mrr") for x in resolution])],
                                     labels, title="corpus resolution (list_corpora)", axis_labels=axis))
    return out


def _cards(current: dict, previous: dict | None) -> list[dict]:
    cards = []
    for key in CHART_METRICS:
        value = current.get(key)
        before = (previous or {}).get(key) if previous and previous.get("level") == current.get("level") else None
        cards.append({"key": key, "label": f"{current.get('level') or ''} {key}", "value": value,
                      "delta": round(value - before, 4) if value is not None and before is not None else None})
    return cards


@staff_member_required
def overview(request):
    corpora = selectors.overview()
    for corpus in corpora:
        for suite in corpus["suites"]:
            suite["charts"] = _suite_charts(suite["runs"])
            suite["cards"] = _cards(suite["headline"], suite["previous_headline"])
            now, before = suite["headline"]["resolution"], (suite["previous_headline"] or {}).get("resolution")
            suite["resolution_delta"] = round(now - before, 4) if now is not None and before is not None else None
            suite["recent"] = list(reversed(suite["runs"][-10:]))
    refresh = any(c["in_flight"] for c in corpora)
    return render(request, "evals/overview.html", {"corpora": corpora, "refresh": refresh,
                                                   "headline_keys": CHART_METRICS})


def _group_rows(groups: dict) -> list[dict]:
    rows = []
    for name, g in groups.items():
        rows.append({
            "name": name, "cases": g.get("cases"), "passed": g.get("passed"), "pass_rate": g.get("pass_rate"),
            "errors": g.get("errors"),
            "chunk": [(g.get("chunk") or {}).get(k) for k in TABLE_METRICS] if g.get("chunk") else None,
            "file": [(g.get("file") or {}).get(k) for k in TABLE_METRICS] if g.get("file") else None,
            "rounds": ((g.get("rounds") or {}).get("chunk") or {}),
            "zero": g.get("unanswerable") or g.get("zero_result"),
            "coverage": g.get("coverage"),
            "resolution": g.get("resolution"),
        })
    return rows


@staff_member_required
def run_detail(request, pk: int):
    run = _run_or_404(pk)
    results = selectors.run_results(run) if run.status == EvalRun.COMPLETE else []
    for r in results:
        expected = list(r.case.expected_chunk_ids or r.case.expected_files) if r.case else []
        r.expected = expected
        shown = r.top_hits[:5]
        matched = match_chunks(shown, expected, run.match_mode) if r.case and r.case.expected_chunk_ids else None
        r.hit_rows = [(hit, (matched[i] in expected) if matched else file_of(hit) in expected)
                      for i, hit in enumerate(shown)]
    metrics = run.metrics or {}
    groups = {"all cases": metrics["overall"]} if metrics.get("overall") else {}
    groups.update(metrics.get("by_category") or {})
    categories = sorted({r.category for r in results})
    bars = charts.rank_bars([(r.case_name, r.rank, r.passed, r.zero_result) for r in results],
                            title="rank of the expected chunk, per case") if results else ""
    delta = run.delta or {}
    return render(request, "evals/run.html", {
        "run": run, "results": results, "group_rows": _group_rows(groups),
        "corpus_rows": _group_rows(metrics.get("by_corpus") or {}),
        "resolution": (metrics.get("overall") or {}).get("resolution"),
        "coverage": (metrics.get("overall") or {}).get("coverage"),
        "delta_coverage": ((delta.get("metrics") or {}).get("overall") or {}).get("coverage") or {},
        "delta_resolution": ((delta.get("metrics") or {}).get("overall") or {}).get("resolution") or {}, "metric_keys": TABLE_METRICS,
        "categories": categories, "bars": bars, "choices": selectors.compare_choices(run),
        "delta": delta, "delta_overall": (delta.get("metrics") or {}).get("overall") or {},
        "embedding_note": selectors.embedding_note(run, run.baseline),
        "refresh": run.status in EvalRun.IN_FLIGHT, "failures": sum(1 for r in results if not r.passed),
        "latency_rows": [(label, (run.latency or {}).get(key) or {}) for key, label in LATENCY_ROWS
                         if key != "list_corpora" or (run.latency or {}).get(key)],
    })


@staff_member_required
def run_compare(request, pk: int, other_pk: int):
    run, other = _run_or_404(pk), _run_or_404(other_pk)
    data = selectors.compare_runs(run, other)
    levels = []
    overall_a, overall_b = (run.metrics or {}).get("overall") or {}, (other.metrics or {}).get("overall") or {}
    for level in ("chunk", "file"):
        a, b = overall_a.get(level) or {}, overall_b.get(level) or {}
        if not a and not b:
            continue
        levels.append({"level": level, "rows": [
            {"key": k, "value": a.get(k), "other": b.get(k),
             "delta": round(a[k] - b[k], 4) if k in a and k in b else None} for k in TABLE_METRICS]})
    category_rows = []
    coverage_a, coverage_b = overall_a.get("coverage") or {}, overall_b.get("coverage") or {}
    if coverage_a or coverage_b:
        levels.append({"level": "coverage", "rows": [
            {"key": k, "value": coverage_a.get(k), "other": coverage_b.get(k),
             "delta": round(coverage_a[k] - coverage_b[k], 4)
             if coverage_a.get(k) is not None and coverage_b.get(k) is not None else None}
            for k in COVERAGE_KEYS]})
    for cat, d in (data["metrics"].get("by_category") or {}).items():
        category_rows.append({"name": cat, "chunk_mrr": (d.get("chunk") or {}).get("mrr@10"),
                              "file_mrr": (d.get("file") or {}).get("mrr@10"), "pass_rate": d.get("pass_rate")})
    return render(request, "evals/compare.html", {
        "run": run, "other": other, "levels": levels, "rows": data["rows"], "counts": data["counts"],
        "category_rows": category_rows, "latency": data["latency"], "embedding_note": data["embedding_note"],
        "categories": sorted({r["category"] for r in data["rows"]}),
    })
