"""The insights pages: what agents ask each corpus, what the docs miss, and the actions on a gap.

Staff only (the admin's login), like the eval dashboards: query texts and feedback are internal.
The corpus page runs a fixed number of queries whatever the number of logged calls (aggregates in
SQL; tests/insights/test_insights.py counts them), and bench/insights.py times it with 100,000 calls.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from corpus import selectors as corpus_selectors
from corpus.errors import CorpusError, CorpusNotFound
from evals import charts as eval_charts
from evals.models import EvalSuite

from . import charts, selectors, served, services
from .errors import InsightsError
from .feedback_reads import feedback, feedback_by_page, feedback_get
from .gaps import gap_list
from .models import Gap
from .traffic import cached_aggregates

PERIODS = (1, 7, 30, 90, 365)


def _corpus_or_404(name: str):
    try:
        return corpus_selectors.corpus_get(name)
    except CorpusNotFound as exc:
        raise Http404(str(exc)) from None


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _period(request: HttpRequest, corpus):
    return selectors.period_for(corpus, version=request.GET.get("version", "")[:100],
                                days=_int(request.GET.get("days"), 30), include_eval=request.GET.get("eval") == "1")


@staff_member_required
def index(request: HttpRequest):
    return render(request, "insights/index.html", {"corpora": selectors.corpora_overview()})


def _trend_chart(trend: list[dict]):
    """Per build, the share of its searches judged covered, partial and not covered; builds served before
    verdicts existed show the zero-hit/low-score share of their searches without one."""
    labels = [f"build {t['build_id']} · from {t['first']:%Y-%m-%d} · {t['searches']} searches" for t in trend]
    axis = [t["build_id"][:16] for t in trend]
    series = [eval_charts.Series("covered", [t["covered_share"] for t in trend], charts.PASS),
              eval_charts.Series("partial", [t["partial_share"] for t in trend], charts.NEAR),
              eval_charts.Series("not covered", [t["not_covered_share"] for t in trend], charts.MISS)]
    if any(t["unjudged"] for t in trend):
        series.append(eval_charts.Series("no verdict, zero-hit/low-score", [t["old_unanswered_share"] for t in trend],
                                         charts.OLD_MISS))
    return eval_charts.line_chart(series, labels, title="searches by verdict, per build", axis_labels=axis,
                                  width=420, height=200, digits=3)


@staff_member_required
def corpus_detail(request: HttpRequest, name: str):
    corpus = _corpus_or_404(name)
    period = _period(request, corpus)
    found = cached_aggregates(period)
    seen = found["traffic"]
    trend = seen.builds
    feedback_pages = feedback_by_page(period)
    for row in feedback_pages:
        row["bar"] = charts.verdict_bar(row["verdicts"])
    top = [dict(q) for q in found["top_queries"]]
    peak = max((q["calls"] for q in top), default=1)
    for q in top:
        q["width"] = round(100 * q["calls"] / peak)
    found_gaps = gap_list(corpus=corpus, period=period)
    gaps = found_gaps.groups
    gap_peak = max((g.count + g.missing for g in gaps), default=1) or 1
    shown = [(g, round(100 * (g.count + g.missing) / gap_peak)) for g in gaps]
    versions = [m.version for m in corpus_selectors.family_members(corpus) if m.version]
    return render(request, "insights/corpus.html", {
        "corpus": corpus.family, "period": period, "periods": PERIODS, "versions": versions,
        "summary": seen.summary, "day_chart": charts.day_bars(seen.days),
        "trend": trend, "trend_chart": _trend_chart(trend) if trend else "", "top_queries": top,
        "gaps": [row for row in shown if row[0].verdict == "not_covered"][:50],
        "partial_gaps": [row for row in shown if row[0].verdict == "partial"][:50], "gap_total": len(gaps),
        "gaps_pending": found_gaps.pending, "unjudged": found_gaps.unjudged or seen.summary["unjudged"],
        "pages": found["pages"], "feedback_pages": feedback_pages,
        "feedback_items": list(feedback(period)[:30]), "tools": seen.tools,
        "verdict_colors": charts.VERDICT_COLORS,
        "dismissed": Gap.objects.filter(corpus=corpus.family.name, status=Gap.DISMISSED).count(),
    })


def _act(request: HttpRequest, corpus, *, eval_case, fix, dismiss):
    """Run the POSTed action; a refusal is shown on the page, never a 500."""
    action = request.POST.get("action")
    page = request.POST.get("filepath") or request.POST.get("filepath_other", "")
    who = f"staff:{request.user.get_username()}"
    try:
        if action == "eval-case":
            case = eval_case(suite=request.POST.get("suite", "").strip(), files=[page] if page else [])
            messages.success(request, f"eval case {case.suite.name}:{case.name} saved: every run of suite "
                                      f"{case.suite.name} now asks it")
        elif action == "fix":
            proposal = fix(filepath=page, use_llm=request.POST.get("llm") == "1")
            url = reverse("admin:corpus_fixproposal_change", args=[proposal.pk])
            messages.success(request, f"fix proposal #{proposal.pk} ({proposal.kind}) is waiting for review: {url}")
        elif action == "dismiss":
            dismiss(reason=request.POST.get("reason", ""), by=who)
            messages.success(request, "dismissed")
        else:
            messages.error(request, f"unknown action {action!r}")
    except (CorpusError, InsightsError) as exc:
        messages.error(request, str(exc))


def _suites(corpus):
    return EvalSuite.objects.filter(corpus=corpus.family).order_by("name").values_list("name", flat=True)


@staff_member_required
@require_http_methods(["GET", "POST"])
def gap_detail(request: HttpRequest, name: str, gap_id: int):
    corpus = _corpus_or_404(name)
    try:
        gap = services.gap_get(corpus=corpus, gap_id=gap_id)
    except (CorpusError, InsightsError) as exc:
        raise Http404(str(exc)) from None
    if request.method == "POST":
        _act(request, corpus,
             eval_case=lambda suite, files: services.gap_eval_case(corpus=corpus, gap=gap, suite=suite,
                                                                   expected_files=files),
             fix=lambda filepath, use_llm: services.gap_fix(corpus=corpus, gap=gap, filepath=filepath,
                                                            use_llm=use_llm),
             dismiss=lambda reason, by: services.gap_dismiss(gap=gap, reason=reason, by=by))
        return redirect(request.get_full_path())
    return render(request, "insights/item.html", {
        "corpus": corpus.family, "gap": gap, "question": gap.representative, "examples": gap.examples,
        "hits": served.search_pages(corpus.name, gap.representative), "suites": _suites(corpus),
        "default_suite": f"{corpus.family.name}-gaps", "kind": "gap"})


@staff_member_required
@require_http_methods(["GET", "POST"])
def feedback_detail(request: HttpRequest, name: str, feedback_id: int):
    corpus = _corpus_or_404(name)
    try:
        item = feedback_get(corpus=corpus, feedback_id=feedback_id)
    except (CorpusError, InsightsError) as exc:
        raise Http404(str(exc)) from None
    if request.method == "POST":
        _act(request, corpus,
             eval_case=lambda suite, files: services.feedback_eval_case(corpus=corpus, item=item, suite=suite,
                                                                        expected_files=files),
             fix=lambda filepath, use_llm: services.feedback_fix(corpus=corpus, item=item, filepath=filepath or None,
                                                                 use_llm=use_llm),
             dismiss=lambda reason, by: services.feedback_dismiss(item=item, reason=reason))
        return redirect(request.get_full_path())
    hits = served.search_pages(corpus.name, item.query) if item.query else []
    return render(request, "insights/item.html", {
        "corpus": corpus.family, "item": item, "question": item.query, "hits": hits, "suites": _suites(corpus),
        "default_suite": f"{corpus.family.name}-gaps", "kind": "feedback"})
