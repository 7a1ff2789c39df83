"""The admin's review pages through Django's test client (the browser flow is in test_admin_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from corpus.fixes import fix_scan
from corpus.models import BuildRun, Corpus, FixProposal
from tests.corpus.test_fixes import ROOT_MANIFEST, big_file, manifest, normal_file, tiny_file, write_tree


@pytest.fixture
def corpus(db, tmp_path) -> Corpus:
    root = write_tree(tmp_path / "docs", {
        ".docs-mcp.json": manifest(ROOT_MANIFEST),
        "guides/big.md": big_file(),
        "guides/glossary.md": tiny_file(),
        "guides/typo.md": "---\nmcp_metadata:\n  scope: Global_Guide\n---\n" + normal_file("Typo"),
    })
    return Corpus.objects.create(name="drift", source_dir=str(root), description="Drift docs", version="1.0")


@pytest.fixture
def staff(client, django_user_model):
    user = django_user_model.objects.create_superuser("admin", "admin@example.com", None)
    client.force_login(user)
    return user


def test_the_proposal_list_filters_by_corpus_kind_status_and_source(client, staff, corpus):
    fix_scan(corpus=corpus)
    other = Corpus.objects.create(name="other", source_dir=corpus.source_dir)
    FixProposal.objects.create(corpus=other, file="a.md", kind="strategy-tune", rationale="r", diff="", target_path="a.md",
                               new_content="x", source="stub-model")
    url = reverse("admin:corpus_fixproposal_changelist")
    page = client.get(url).content.decode()
    for label in ("By corpus", "By kind", "By status", "By source", "deeper-split", "heuristic"):
        assert label in page
    filtered = client.get(url, {"kind": "shallower-split"}).content.decode()
    assert "guides/glossary.md" in filtered and "guides/big.md" not in filtered
    by_source = client.get(url, {"source": "stub-model", "corpus__id__exact": other.pk}).content.decode()
    assert "strategy-tune" in by_source and "guides/glossary.md" not in by_source


def test_the_review_page_shows_diff_rationale_and_chunks(client, staff, corpus):
    fix_scan(corpus=corpus)
    proposal = corpus.fix_proposals.get(kind="deeper-split")
    page = client.get(reverse("admin:corpus_fixproposal_change", args=[proposal.pk])).content.decode()
    assert '<span class="add">+      &quot;pattern&quot;: &quot;guides/big.md&quot;,</span>' in page
    assert proposal.rationale.split(" (")[0] in page
    assert "guides/big.md#big-guide/setup/step-0" in page  # a chunk that exists only after the change
    assert 'id="fix-approve"' in page and 'id="fix-reject"' in page


def test_approve_and_reject_views_apply_record_and_log(client, staff, corpus):
    fix_scan(corpus=corpus)
    typo = corpus.fix_proposals.get(kind="taxonomy-value")
    response = client.post(reverse("admin:corpus_fixproposal_approve", args=[typo.pk]))
    assert response.status_code == 302
    typo.refresh_from_db()
    assert typo.status == FixProposal.APPLIED and typo.decided_by == "admin"
    assert "scope: global-guide" in (Path(corpus.source_dir) / "guides/typo.md").read_text()
    glossary = corpus.fix_proposals.get(kind="shallower-split")
    client.post(reverse("admin:corpus_fixproposal_reject", args=[glossary.pk]), {"reason": ""})
    glossary.refresh_from_db()
    assert glossary.status == FixProposal.PENDING
    client.post(reverse("admin:corpus_fixproposal_reject", args=[glossary.pk]), {"reason": "granular on purpose"})
    glossary.refresh_from_db()
    assert (glossary.status, glossary.decision_note) == (FixProposal.REJECTED, "granular on purpose")
    messages = set(LogEntry.objects.values_list("change_message", flat=True))
    assert {"approve -> applied", "reject: granular on purpose"} <= messages
    trail = client.get(reverse("admin:corpus_fixdecision_changelist")).content.decode()
    assert "granular on purpose" in trail and "admin" in trail and f"#{typo.pk} taxonomy-value" in trail
    assert client.get(reverse("admin:corpus_fixproposal_approve", args=[typo.pk])).status_code == 405


def test_bulk_actions(client, staff, corpus):
    proposals = fix_scan(corpus=corpus)
    url = reverse("admin:corpus_fixproposal_changelist")
    ids = [str(p.pk) for p in proposals]
    confirm = client.post(url, {"action": "reject_selected", "_selected_action": ids})
    assert b"Reason" in confirm.content and b"bulk-reason" in confirm.content
    client.post(url, {"action": "reject_selected", "_selected_action": ids[:1], "confirm": "1", "reason": "no"})
    assert FixProposal.objects.get(pk=ids[0]).status == FixProposal.REJECTED
    client.post(url, {"action": "approve_selected", "_selected_action": ids[1:]})
    statuses = sorted(FixProposal.objects.filter(pk__in=ids[1:]).values_list("status", flat=True))
    assert FixProposal.PENDING not in statuses and FixProposal.APPLIED in statuses


def test_staff_without_permission_cannot_decide(client, corpus, django_user_model):
    fix_scan(corpus=corpus)
    user = django_user_model.objects.create_user("viewer", is_staff=True)
    from django.contrib.auth.models import Permission

    user.user_permissions.add(Permission.objects.get(codename="view_fixproposal"))
    client.force_login(user)
    proposal = corpus.fix_proposals.first()
    page = client.get(reverse("admin:corpus_fixproposal_change", args=[proposal.pk])).content.decode()
    assert 'id="fix-approve"' not in page
    assert client.post(reverse("admin:corpus_fixproposal_approve", args=[proposal.pk])).status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == FixProposal.PENDING


def test_corpus_admin_shows_source_taxonomy_builds_and_fix_action(client, staff, corpus):
    page = client.get(reverse("admin:corpus_corpus_change", args=[corpus.pk])).content.decode()
    for text in (corpus.source_dir, "Drift docs", "1.0", "0 pending"):
        assert text in page
    response = client.post(reverse("admin:corpus_corpus_changelist"),
                           {"action": "propose_fixes", "_selected_action": [corpus.pk]}, follow=True)
    assert "Corpus drift: 3 proposal(s), 3 new" in response.content.decode()
    assert corpus.fix_proposals.count() == 3


def test_build_progress_json_is_staff_only(client, corpus, staff):
    build = BuildRun.objects.create(corpus=corpus, build_id="b1", status=BuildRun.RUNNING, stage="chunk",
                                    progress_done=3, progress_total=12)
    url = reverse("admin:corpus_buildrun_progress", args=[build.pk])
    data = client.get(url).json()
    assert data == {"status": "running", "stage": "chunk", "done": 3, "total": 12, "percent": 25,
                    "in_flight": True, "error": ""}
    page = client.get(reverse("admin:corpus_buildrun_change", args=[build.pk])).content.decode()
    assert 'id="build-progress"' in page and 'data-in-flight="1"' in page and url in page
    client.logout()
    assert client.get(url).status_code == 302  # to the admin login


def test_build_change_page_shows_timings_counts_and_findings(client, staff, corpus):
    build = BuildRun.objects.create(
        corpus=corpus, build_id="b2", status=BuildRun.FAILED, error="validation found 1 error(s)",
        timings={"scan": 0.25, "total": 1.5}, stats={"total_files": 3, "total_chunks": 9},
        findings=[{"severity": "error", "code": "hint-dangling", "file": "a.md", "line": 7, "message": "dangling",
                   "suggestion": "remove it"}])
    page = client.get(reverse("admin:corpus_buildrun_change", args=[build.pk])).content.decode()
    for text in ("0.250", "1.5s", "total_chunks", "<code>a.md:7</code>", "validation found 1 error(s)",
                 'data-in-flight="0"'):
        assert text in page


def test_only_a_reviewer_writes_an_outlines_text_and_bad_text_is_refused_with_the_reason(client, corpus,
                                                                                        django_user_model):
    from django.contrib.auth.models import Permission

    from corpus.content_fixes import content_fix_propose

    outline = content_fix_propose(corpus=corpus, filepath="guides/typo.md", questions=["Is there a PHP SDK?"],
                                  feedback=[])
    write = reverse("admin:corpus_fixproposal_write", args=[outline.pk])
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_fixproposal"))
    client.force_login(viewer)
    page = client.get(reverse("admin:corpus_fixproposal_change", args=[outline.pk])).content.decode()
    assert 'id="fix-write"' not in page and 'id="fix-unwritten"' in page  # the text shown, no form
    assert client.post(write, {"heading": "PHP SDK", "body": "There is no PHP SDK; use the REST API."}).status_code == 403

    client.force_login(django_user_model.objects.create_superuser("author", "a@example.com", None))
    assert client.get(write).status_code == 405
    refused = client.post(write, {"heading": "PHP SDK", "body": "# PHP\n\nA title inside."}, follow=True)
    assert "The text was not saved: the section&#x27;s text has a heading of level" in refused.content.decode()
    outline.refresh_from_db()
    assert "docsmcp outline" in outline.new_content
    saved = client.post(write, {"heading": "PHP SDK", "body": "There is no PHP SDK; call the REST API directly."},
                        follow=True).content.decode()
    assert "Saved: the change below is what approving will write." in saved and "+## PHP SDK" in saved
    outline.refresh_from_db()
    assert outline.finding["written_by"] == "author" and "docsmcp outline" not in outline.new_content
    assert LogEntry.objects.filter(object_id=str(outline.pk), change_message="text written").exists()
