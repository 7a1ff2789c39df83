"""The eval dashboards in a real headless browser: overview, run page (sort, filter), compare view.

Debian's chromium (/usr/bin/chromium) driven by Playwright's Python API against pytest-django's
live server, with two real runs of the bundled suite on the sample corpus. Screenshots go to
test-artifacts/. Skipped, with the reason, only when chromium is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.services import eval_run, suite_import

SAMPLE_SUITE = Path(__file__).resolve().parents[2] / "corpus" / "sample_docs_eval.json"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]




@pytest.fixture
def runs(sample_corpus):
    """Two runs of the bundled suite: one following no cursor, one following up to 3 rounds."""
    suite = suite_import(name="sample", path=SAMPLE_SUITE, corpus=sample_corpus)
    first = eval_run(corpus=sample_corpus, suite=suite, max_rounds=1)
    second = eval_run(corpus=sample_corpus, suite=suite, max_rounds=3, baseline=first)
    assert first.status == second.status == "complete"
    return first, second


@pytest.fixture
def page(browser, live_server, django_user_model):
    django_user_model.objects.create_superuser("evals", "evals@example.com", "correct-horse")
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(30_000)  # generous: CI machines run several suites at once
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto("/evals/")  # staff only: lands on the admin login
    assert "/admin/login/" in page.url
    page.fill("#id_username", "evals")
    page.fill("#id_password", "correct-horse")
    page.click("input[type=submit]")
    page.wait_for_url("**/evals/")
    yield page
    assert errors == [], errors  # no JavaScript error on any page
    context.close()


def _visible_statuses(page) -> list[str]:
    return page.eval_on_selector_all("#cases tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.status)")


def _visible_ranks(page) -> list[str]:
    return page.eval_on_selector_all("#cases tbody tr:not([hidden])", "rows => rows.map(r => r.cells[4].dataset.v)")


def test_overview_run_page_and_compare(page, runs, artifacts_dir):
    first, second = runs
    # overview: headline cards and server-side SVG charts
    page.goto("/evals/")
    page.wait_for_selector(".suite[data-suite=sample] .headline .card")
    assert page.locator(".suite[data-suite=sample] .charts svg").count() == 7  # six retrieval metrics and coverage precision and recall
    assert page.locator(".suite[data-suite=sample] .charts svg circle").count() >= 2 * 5
    page.screenshot(path=str(artifacts_dir / "evals-overview.png"), full_page=True)

    # run page: failures first, then sort by rank and filter
    page.click(f"text=run #{second.pk}")
    page.wait_for_selector("#cases tbody tr")
    assert page.url.endswith(f"/evals/runs/{second.pk}/")
    total = second.results.count()
    statuses = _visible_statuses(page)
    assert len(statuses) == total
    failures = statuses.count("fail")
    assert failures > 0 and statuses[:failures] == ["fail"] * failures
    assert page.locator("#categories").inner_text().count("paraphrase") == 1
    page.screenshot(path=str(artifacts_dir / "evals-run.png"))

    page.click("#cases th:has-text('rank') >> nth=0")
    ranks = [int(r) for r in _visible_ranks(page) if r]
    assert ranks == sorted(ranks) and ranks[0] == 1
    assert all(r == "" for r in _visible_ranks(page)[len(ranks):])  # not found: last
    page.click("#cases th:has-text('rank') >> nth=0")
    ranks_desc = [int(r) for r in _visible_ranks(page) if r]
    assert ranks_desc == sorted(ranks_desc, reverse=True)
    assert page.get_attribute("#cases th:has-text('rank') >> nth=0", "aria-sort") == "descending"

    page.fill(".filters input[type=search]", "ratelimiterror")
    shown = page.eval_on_selector_all("#cases tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.text)")
    assert shown and all("ratelimiterror" in text for text in shown)  # case name, query or a top hit
    assert len(shown) < total
    assert page.inner_text(".filters .count") == f"{len(shown)} of {total} shown"
    page.fill(".filters input[type=search]", "")
    page.select_option(".filters select.category", "zero-result")
    assert len(_visible_statuses(page)) == second.results.filter(category="zero-result").count()
    page.select_option(".filters select.category", "")
    page.check(".filters input.failures-only")
    assert set(_visible_statuses(page)) == {"fail"} and len(_visible_statuses(page)) == failures
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts_dir / "evals-run-sorted-filtered.png"), full_page=True)

    # compare against the baseline (the first run), chosen from the select
    page.select_option("#compare-with", f"/evals/runs/{second.pk}/compare/{first.pk}/")
    page.click("#compare-go")
    page.wait_for_url(f"**/evals/runs/{second.pk}/compare/{first.pk}/")
    page.wait_for_selector("#compare-cases tbody tr")
    counts = page.inner_text("#case-counts")
    better = len(second.delta["cases"]["better"])
    assert f"{better} better" in counts and f"{len(second.delta['cases']['worse'])} worse" in counts
    page.select_option(".filters select.status", "better")
    changed = page.eval_on_selector_all("#compare-cases tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.status)")
    assert changed == ["better"] * better
    assert page.locator("table.metric-delta").count() == 3  # chunk and file level, and coverage
    page.screenshot(path=str(artifacts_dir / "evals-compare.png"), full_page=True)
    for name in ("evals-overview.png", "evals-run.png", "evals-run-sorted-filtered.png", "evals-compare.png"):
        assert (artifacts_dir / name).stat().st_size > 10_000
