"""The eval dashboards without a browser: access, content, and a bounded number of queries at volume."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from corpus.models import BuildRun, Corpus
from evals import charts, runner
from evals.models import EvalCase, EvalResult, EvalRun, EvalSuite
from evals.selectors import latest_scores_for_builds, overview

N_RUNS, N_CASES = 100, 1000


def _outcome(rng: random.Random, name: str, category: str) -> runner.CaseOutcome:
    rank = rng.choice([1, 1, 1, 2, 3, 7, 12, None])
    zero = category == "zero-result"
    o = runner.CaseOutcome(name=name, category=category, query=f"how do I {name}?", zero_result=zero)
    o.coverage = rng.choice(["covered", "partial", "not_covered"] if zero else ["covered"] * 4 + ["not_covered"])
    o.coverage_score = {"covered": 0.8, "partial": 0.4, "not_covered": 0.1}[o.coverage]
    if zero:
        o.passed = o.coverage != "covered"
        o.metrics = {"chunk": None, "file": None, "unanswerable": float(o.passed)}
        o.hit_count = 3
    else:
        ranked = [f"x{i}.md#n" for i in range(10)]
        if rank and rank <= 10:
            ranked[rank - 1] = f"{name}.md#want"
        from evals import metrics as m

        o.metrics = {"chunk": m.rank_metrics(ranked, {f"{name}.md#want"}),
                     "file": m.rank_metrics(ranked, {f"{name}.md#want"})}
        o.chunk_rank = o.file_rank = rank
        o.rounds = o.file_rounds = (1 if rank <= 10 else 2) if rank else None
        o.passed = rank is not None
    o.top_hits = [f"doc{rng.randint(0, 50)}.md#h{i}" for i in range(10)]
    o.search_ms, o.get_doc_ms, o.calls = [rng.uniform(2, 30)], rng.uniform(1, 5), 1
    return o


@pytest.fixture(scope="module")
def volume(django_db_setup, django_db_blocker):
    """100 complete runs over 10 builds of one corpus; the last two have 1,000 case results each. Made once
    for the module (committed, each test's own writes roll back) and deleted after it: made per test, it
    was most of the fast tier's time in this file."""
    with django_db_blocker.unblock(), transaction.atomic():  # a failure part way leaves nothing behind
        made = _volume()
    yield made
    with django_db_blocker.unblock():
        made["corpus"].delete()


@pytest.fixture(autouse=True)
def _db(db):
    """Every test here reads the database: the module's data is seen through each test's transaction."""


def _volume() -> dict:
    rng = random.Random(3)
    corpus = Corpus.objects.create(name="volume", source_dir="/x")
    builds = [BuildRun.objects.create(corpus=corpus, build_id=f"b{i:02d}", status=BuildRun.COMPLETE,
                                      timings={"total": 10 + i}) for i in range(10)]
    corpus.active_build = builds[-1]
    corpus.save()
    suite = EvalSuite.objects.create(name="big", corpus=corpus)
    categories = ["identifier", "paraphrase", "filtered", "zero-result"]
    cases = EvalCase.objects.bulk_create([
        EvalCase(suite=suite, name=f"case-{i:04d}", position=i, category=categories[i % 4], query=f"q{i}",
                 expected_chunk_ids=[] if i % 4 == 3 else [f"case-{i:04d}.md#want"]) for i in range(N_CASES)])
    now = timezone.now()
    runs = []
    for i in range(N_RUNS):
        sample = [_outcome(rng, c.name, c.category) for c in cases[:40]]
        runs.append(EvalRun(suite=suite, corpus=corpus, build=builds[i // 10], build_label=builds[i // 10].build_id,
                            status=EvalRun.COMPLETE, metrics=runner.summarize(sample), latency=runner.latency(sample),
                            build_seconds=10 + i // 10, index_bytes=1 << 20, progress_done=N_CASES,
                            progress_total=N_CASES))
    runs = EvalRun.objects.bulk_create(runs)
    for i, run in enumerate(runs):  # created_at is auto_now_add: spread the history over 100 days
        EvalRun.objects.filter(pk=run.pk).update(created_at=now - timedelta(days=N_RUNS - i),
                                                 started_at=now - timedelta(days=N_RUNS - i),
                                                 finished_at=now - timedelta(days=N_RUNS - i, seconds=-30))
    detailed = runs[-2:]
    for run in detailed:
        outcomes = [_outcome(rng, c.name, c.category) for c in cases]
        EvalResult.objects.bulk_create([
            EvalResult(run=run, case=c, case_name=o.name, category=o.category, query=o.query, passed=o.passed,
                       zero_result=o.zero_result, score=o.score, chunk_rank=o.chunk_rank, file_rank=o.file_rank,
                       rounds=o.rounds, calls=1, hit_count=o.hit_count, top_hits=o.top_hits,
                       search_ms=o.search_ms[0], search_ms_total=o.search_ms[0], get_doc_ms=o.get_doc_ms,
                       metrics=o.metrics, coverage=o.coverage, coverage_score=o.coverage_score)
            for c, o in zip(cases, outcomes, strict=True)], batch_size=500)
        EvalRun.objects.filter(pk=run.pk).update(metrics=runner.summarize(outcomes),
                                                 latency=runner.latency(outcomes))
    EvalRun.objects.filter(pk=detailed[1].pk).update(baseline=detailed[0])
    return {"corpus": corpus, "suite": suite, "runs": runs, "detailed": detailed, "builds": builds}


def test_dashboards_need_a_staff_login(client, volume):
    run = volume["detailed"][1]
    for url in ["/evals/", f"/evals/runs/{run.pk}/", f"/evals/runs/{run.pk}/compare/{volume['detailed'][0].pk}/"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/?next=/evals/")


def test_overview_is_bounded_with_100_runs(admin_client, volume, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        response = admin_client.get("/evals/")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("<svg") >= 6  # a chart per headline metric and latency
    assert "suite <code>big</code>" in html and f"run #{volume['detailed'][1].pk}" in html
    assert html.count("<circle") >= 60 * 5  # 60 runs drawn per metric (HISTORY_PER_SERIES)


def test_run_page_is_bounded_with_1000_cases(admin_client, volume, django_assert_max_num_queries):
    run = volume["detailed"][1]
    with django_assert_max_num_queries(8):
        response = admin_client.get(f"/evals/runs/{run.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('data-status="') == N_CASES
    first_row = html.index('data-status="')
    assert html[first_row:first_row + 20].startswith('data-status="fail"')  # failures first
    assert "Metrics by category" in html and "paraphrase" in html and "<rect" in html


def test_compare_is_bounded_with_1000_cases(admin_client, volume, django_assert_max_num_queries):
    a, b = volume["detailed"][1], volume["detailed"][0]
    with django_assert_max_num_queries(8):
        response = admin_client.get(f"/evals/runs/{a.pk}/compare/{b.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('data-status="') == N_CASES
    first_row = html.index('data-status="')
    assert html[first_row:first_row + 21].startswith('data-status="worse"')  # regressions first


def test_coverage_precision_and_recall_stand_beside_mrr(admin_client, volume):
    run = EvalRun.objects.get(pk=volume["detailed"][1].pk)
    coverage = run.metrics["overall"]["coverage"]
    results = list(run.results.values_list("zero_result", "coverage"))
    flagged = [zero for zero, verdict in results if verdict == "not_covered"]
    assert coverage["precision"] == round(sum(flagged) / len(flagged), 4)
    assert coverage["recall"] == round(sum(flagged) / sum(zero for zero, _v in results), 4)

    def card(html: str, metric: str) -> str:
        start = html.index(f'data-metric="{metric}"')
        return html[start:html.index("</div></div>", start)]

    overview = admin_client.get("/evals/").content.decode()
    assert f'{coverage["precision"]:.3f}' in card(overview, "coverage-precision")
    assert f'{coverage["recall"]:.3f}' in card(overview, "coverage-recall")
    assert "coverage verdict (not_covered flags)" in overview  # its chart across runs
    page = admin_client.get(f"/evals/runs/{run.pk}/").content.decode()
    assert f'{coverage["precision"]:.3f}' in card(page, "coverage-precision")
    assert f'{coverage["recall"]:.3f}' in card(page, "coverage-recall")
    assert page.count('class="verdict not_covered"') == sum(v == "not_covered" for _z, v in results)
    compare = admin_client.get(f"/evals/runs/{run.pk}/compare/{volume['detailed'][0].pk}/").content.decode()
    assert "<th>coverage</th>" in compare and "<td>recall</td>" in compare


def test_unknown_run_is_404(admin_client, db):
    assert admin_client.get("/evals/runs/999/").status_code == 404
    assert admin_client.get("/evals/runs/999/compare/998/").status_code == 404


def test_latest_scores_for_builds_takes_one_query(volume, django_assert_num_queries):
    ids = [b.pk for b in volume["builds"]]
    with django_assert_num_queries(1):
        scores = latest_scores_for_builds(ids)
    assert set(scores) == set(ids)
    latest_of_last_build = max((r for r in volume["runs"] if r.build_id == ids[-1]), key=lambda r: r.pk)
    assert scores[ids[-1]][0]["run"] == latest_of_last_build.pk
    assert scores[ids[-1]][0]["suite"] == "big" and scores[ids[-1]][0]["level"] == "chunk"
    assert latest_scores_for_builds([]) == {}


def test_overview_groups_in_flight_runs(volume):
    EvalRun.objects.create(suite=volume["suite"], corpus=volume["corpus"], status=EvalRun.RUNNING,
                           progress_done=3, progress_total=10)
    (entry,) = overview()
    assert entry["in_flight"][0].progress_done == 3 and len(entry["suites"][0]["runs"]) == 60


def test_pages_escape_what_cases_contain(admin_client, volume):
    run = volume["detailed"][1]
    EvalResult.objects.filter(run=run, case_name="case-0000").update(
        query="<script>alert(1)</script>", top_hits=["<img src=x onerror=alert(1)>"], passed=False)
    html = admin_client.get(f"/evals/runs/{run.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html


def test_charts_are_plain_svg_with_escaped_labels():
    svg = charts.line_chart([charts.Series("mrr <b>", [0.5, None, 0.75])], ["b1 <i>", "b2", "b3"], title="t&t")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "<b>" not in svg and "&lt;b&gt;" in svg and "t&amp;t" in svg
    assert svg.count("<circle") == 2 and "<polyline" not in svg  # a gap splits the line into single points
    bars = charts.rank_bars([("a", 1, True, False), ("b", None, False, False), ("z", None, True, True)])
    assert bars.count("<rect") == 3 and "not found" in bars and "not answered, as expected" in bars
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    assert "no runs yet" in charts.line_chart([], [])
