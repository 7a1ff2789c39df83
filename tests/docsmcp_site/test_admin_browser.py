"""The admin's review-and-apply flow and live build progress in a real headless browser.

Debian's chromium (/usr/bin/chromium) driven by Playwright's Python API against pytest-django's
live server. Screenshots go to test-artifacts/. Skipped, with the reason, when chromium is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus.fixes import fix_scan
from corpus.models import BuildRun, Corpus, FixDecision, FixProposal
from tests.corpus.test_fixes import ROOT_MANIFEST, big_file, manifest, normal_file, tiny_file, write_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]




@pytest.fixture
def page(browser, live_server, django_user_model):
    django_user_model.objects.create_superuser("reviewer", "reviewer@example.com", "correct-horse")
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", "correct-horse")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    yield page
    context.close()


@pytest.fixture
def corpus(transactional_db, tmp_path) -> Corpus:
    root = write_tree(tmp_path / "docs", {
        ".docs-mcp.json": manifest(ROOT_MANIFEST),
        "guides/big.md": big_file(),
        "guides/glossary.md": tiny_file(),
        "guides/typo.md": "---\ntitle: Typo\nmcp_metadata:\n  scope: Global_Guide\n---\n" + normal_file("Typo"),
    })
    corpus = Corpus.objects.create(name="drift", source_dir=str(root), description="Docs that drifted")
    fix_scan(corpus=corpus)
    return corpus


def test_review_filter_approve_and_reject_in_the_browser(page, corpus, artifacts_dir):
    root = Path(corpus.source_dir)
    manifest_before = (root / ".docs-mcp.json").read_text()

    page.goto("/admin/corpus/fixproposal/")
    assert page.locator("#result_list tbody tr").count() == 3
    page.screenshot(path=str(artifacts_dir / "fix-01-proposal-list.png"), full_page=True)

    page.click("#changelist-filter a[href='?kind=deeper-split']")
    page.wait_for_url("**kind=deeper-split**")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1 and "guides/big.md" in rows.first.inner_text()
    page.screenshot(path=str(artifacts_dir / "fix-02-filtered-by-kind.png"), full_page=True)

    rows.first.locator("th a, td a").first.click()
    page.wait_for_selector("#fix-diff")
    added = page.locator("#fix-diff span.add").all_inner_texts()
    assert '+      "pattern": "guides/big.md",' in added and '+      "strategy": {"chunk_by": "h3"}' in added
    assert page.locator("#fix-diff span.add").first.evaluate("e => getComputedStyle(e).backgroundColor") \
        == "rgb(230, 255, 236)"  # rendered green
    assert "larger than 8000 characters" in page.inner_text("#fix-rationale")
    before = page.locator(".fix-before").inner_text()
    after = page.locator(".fix-after").inner_text()
    assert "guides/big.md#big-guide/setup" in before and "chunk_by=h2" in before
    assert "guides/big.md#big-guide/setup/step-0" in after and "chunk_by=h3" in after
    assert page.locator(".fix-after tr.new").count() == 7  # the seven steps become chunks of their own
    page.screenshot(path=str(artifacts_dir / "fix-03-review-deeper-split.png"), full_page=True)

    page.click("#fix-approve")
    page.wait_for_selector(".messagelist .success")
    assert "Applied" in page.inner_text(".messagelist")
    assert page.inner_text("#fix-status") == "applied"
    assert "reviewer" in page.inner_text("#fix-decisions")
    page.screenshot(path=str(artifacts_dir / "fix-04-approved.png"), full_page=True)
    applied = FixProposal.objects.get(kind="deeper-split")
    assert applied.status == FixProposal.APPLIED and applied.decided_by == "reviewer"
    manifest_after = (root / ".docs-mcp.json").read_text()
    assert manifest_after != manifest_before and manifest_after == applied.new_content
    assert '"pattern": "guides/big.md"' in manifest_after

    # The glossary proposal targets the same manifest, which just changed: it went stale.
    glossary = FixProposal.objects.get(kind="shallower-split")
    assert glossary.status == FixProposal.STALE

    page.goto("/admin/corpus/fixproposal/?status__exact=pending")
    page.click("#result_list tbody tr >> nth=0 >> a")
    page.wait_for_selector("#fix-reject")
    assert "guides/typo.md" in page.inner_text(".fix-meta")
    assert "-  scope: Global_Guide" in page.locator("#fix-diff span.del").all_inner_texts()
    typo_before = (root / "guides/typo.md").read_text()
    page.fill("#fix-reason", "Global_Guide is what the importer emits; fix the importer instead.")
    page.screenshot(path=str(artifacts_dir / "fix-05-rejecting.png"), full_page=True)
    page.click("#fix-reject")
    page.wait_for_selector(".messagelist .success")
    assert page.inner_text("#fix-status") == "rejected"
    assert "fix the importer instead" in page.inner_text("#fix-decision-note")
    assert page.locator("#fix-approve").count() == 0
    page.screenshot(path=str(artifacts_dir / "fix-06-rejected.png"), full_page=True)
    rejected = FixProposal.objects.get(kind="taxonomy-value")
    decision = rejected.decisions.get()
    assert (decision.action, decision.username) == (FixDecision.REJECT, "reviewer")
    assert "fix the importer" in decision.note
    assert (root / "guides/typo.md").read_text() == typo_before


def test_build_progress_updates_live_in_the_browser(page, corpus, artifacts_dir):
    build = BuildRun.objects.create(corpus=corpus, build_id="live-1", status=BuildRun.RUNNING, stage="chunk",
                                    progress_done=1, progress_total=10, timings={"scan": 0.1})
    page.goto(f"/admin/corpus/buildrun/{build.pk}/change/")
    label = page.locator("#build-progress .label")
    assert label.inner_text() == "running: chunk 1/10 (10%)"
    BuildRun.objects.filter(pk=build.pk).update(stage="embed", progress_done=6)
    page.wait_for_function("document.querySelector('#build-progress .label').textContent.includes('6/10')")
    assert page.locator("#build-progress progress").evaluate("e => e.value") == 60
    page.screenshot(path=str(artifacts_dir / "build-01-live-progress.png"), full_page=True)
    BuildRun.objects.filter(pk=build.pk).update(status=BuildRun.COMPLETE, stage="done", progress_done=10,
                                                timings={"scan": 0.1, "total": 2.5},
                                                stats={"total_files": 3, "total_chunks": 20})
    page.wait_for_function("document.querySelector('#build-progress').dataset.inFlight === '0'")  # reloaded
    assert page.locator("#build-progress .label").inner_text() == "complete"
    assert "2.5s" in page.inner_text("body") and "total_chunks" in page.inner_text("body")
    page.screenshot(path=str(artifacts_dir / "build-02-complete.png"), full_page=True)
