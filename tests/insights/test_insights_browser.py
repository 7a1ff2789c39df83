"""The insights pages in a real headless browser: from the admin's index to a corpus's page, then a gap,
where the author picks the expected page among the search hits and makes it an eval case.

Debian's chromium driven by Playwright against pytest-django's live server; screenshots go to
test-artifacts/insights-*.png. Skipped, with the reason, only when chromium is absent.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.models import Feedback, QueryRecord
from evals.models import EvalCase
from insights.models import Gap

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ASKED = {"kubernetes helm chart": 9, "helm charts on kubernetes": 4, "graphql mutation resolver": 5,
         "how do I write a graphql mutation": 2, "retry backoff": 40, "RateLimitError": 25}


@pytest.fixture(autouse=True)
def fresh_aggregates(settings):
    """Every load recomputes: a cached page of another test's rows must not answer this one's."""
    settings.DOCSMCP_INSIGHTS_CACHE_SECONDS = 0


@pytest.fixture
def calls(sample_corpus):
    now = timezone.now()
    rows = []
    for n, (query, times) in enumerate(ASKED.items()):
        for i in range(times):
            missing = "kubernetes" in query or "graphql" in query
            rows.append(QueryRecord(at=now - timedelta(days=(i * 3 + n) % 14, hours=i), corpus="sample",
                                    version="3.2", build_id="sample-build", tool="search_docs", query=query,
                                    hits=0 if missing else 5, top=[] if missing else [["guides/retries.md#retries", 0.9]],
                                    top_score=None if missing else 0.9, client="claude-code/1.0"))
    rows += [QueryRecord(at=now - timedelta(days=d % 10), corpus="sample", version="3.2", build_id="sample-build",
                         tool="get_doc", target="guides/retries.md#retries", hits=1) for d in range(30)]
    QueryRecord.objects.bulk_create(rows)
    Feedback.objects.bulk_create([Feedback(at=now, corpus="sample", verdict=v, filepath="guides/retries.md",
                                           chunk_id="guides/retries.md#retries", query="retry backoff",
                                           comment="says 3 retries; the SDK does 5" if v == "wrong" else "")
                                  for v in ("wrong", "helpful", "helpful", "outdated")])
    return sample_corpus


@pytest.fixture
def page(browser, live_server, django_user_model):
    django_user_model.objects.create_superuser("author", "author@example.com", "correct-horse")
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto("/admin/")
    page.fill("#id_username", "author")
    page.fill("#id_password", "correct-horse")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")
    yield page
    assert errors == [], errors
    context.close()


def test_from_the_admin_to_a_gap_and_an_eval_case(page, calls, artifacts_dir):
    page.click("#dashboards >> text=Insights")
    page.wait_for_url("**/insights/")
    page.click("#corpora >> text=sample")
    page.wait_for_selector("#gap-table tbody tr[data-gap]")
    assert page.locator("svg.day-bars rect[fill]").count() > 10
    assert page.locator("#gap-table tbody tr[data-gap]").count() == 2
    assert "kubernetes" in page.locator("#gap-table").inner_text().lower()
    page.screenshot(path=str(artifacts_dir / "insights-corpus.png"), full_page=True)

    page.click("#gap-table tbody tr[data-gap] >> nth=0 >> a")
    page.wait_for_selector("#eval-case-form")
    hits = page.locator("#eval-case-form input[type=radio][name=filepath]")
    assert hits.count() >= 2  # the search hits, and "another page"
    page.check("#eval-case-form input[value='guides/retries.md']") if page.locator(
        "#eval-case-form input[value='guides/retries.md']").count() else hits.first.check()
    page.fill("#eval-case-form input[name=suite]", "sample-gaps")
    page.click("#eval-case-form button[value=eval-case]")
    page.wait_for_selector(".messages li.success")
    page.screenshot(path=str(artifacts_dir / "insights-gap.png"), full_page=True)
    case = EvalCase.objects.get(suite__name="sample-gaps")
    gap = Gap.objects.get(eval_case=case)
    assert case.query == gap.representative and len(case.expected_files) == 1
