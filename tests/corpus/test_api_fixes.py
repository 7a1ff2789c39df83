"""REST API: reviewing fix proposals (list, read, approve, reject) through the same service as the admin."""

from __future__ import annotations

import pytest

from corpus.models import Corpus, FixProposal
from retrieval.fixes.apply import current_hash
from tests.api_helpers import assert_error, call


@pytest.fixture
def client(writer_client):
    """These tests write: every request carries an admin key (anonymous callers may only read)."""
    return writer_client

OLD = "# Title\n\nBody.\n"
NEW = "---\ndescription: A page\n---\n# Title\n\nBody.\n"


@pytest.fixture
def docs(db, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "page.md").write_text(OLD)
    corpus = Corpus.objects.create(name="docs", source_dir=str(root))
    return corpus, root


def propose(corpus: Corpus, root, **fields) -> FixProposal:
    values = {"file": "page.md", "kind": "frontmatter", "rationale": "pages need a description",
              "diff": "--- a/page.md\n+++ b/page.md\n", "target_path": "page.md", "old_content": OLD,
              "new_content": NEW, "base_hash": current_hash(root / "page.md")}
    return FixProposal.objects.create(corpus=corpus, **{**values, **fields})


def test_list_fixes_newest_first_filtered_by_status(client, docs):
    corpus, root = docs
    first = propose(corpus, root)
    second = propose(corpus, root, kind="hint", status=FixProposal.REJECTED)
    page = call(client, "get", "/corpora/docs/fixes").json()
    assert [p["id"] for p in page["items"]] == [second.pk, first.pk]
    assert page["total"] == 2
    pending = call(client, "get", "/corpora/docs/fixes?status=pending").json()
    assert [p["id"] for p in pending["items"]] == [first.pk]
    item = pending["items"][0]
    assert (item["file"], item["kind"], item["status"], item["corpus"]) == ("page.md", "frontmatter", "pending", "docs")
    assert item["url"] == f"/api/v1/corpora/docs/fixes/{first.pk}"
    assert_error(call(client, "get", "/corpora/docs/fixes?status=maybe"), 422, "validation_error", "status")


def test_get_fix_and_unknown_ids(client, docs):
    corpus, root = docs
    proposal = propose(corpus, root)
    assert call(client, "get", f"/corpora/docs/fixes/{proposal.pk}").json()["diff"].startswith("--- a/page.md")
    assert_error(call(client, "get", "/corpora/docs/fixes/999999"), 404, "fix_not_found")
    assert_error(call(client, "get", "/corpora/ghost/fixes"), 404, "corpus_not_found")


def test_approve_applies_the_change(client, docs):
    corpus, root = docs
    proposal = propose(corpus, root)
    response = call(client, "post", f"/corpora/docs/fixes/{proposal.pk}/approve")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "applied"
    assert (root / "page.md").read_text() == NEW
    assert_error(call(client, "post", f"/corpora/docs/fixes/{proposal.pk}/approve"), 400, "fix_error",
                 "only pending proposals")


def test_approve_after_the_file_changed_goes_stale_and_writes_nothing(client, docs):
    corpus, root = docs
    proposal = propose(corpus, root)
    (root / "page.md").write_text("# Edited meanwhile\n")
    body = call(client, "post", f"/corpora/docs/fixes/{proposal.pk}/approve").json()
    assert body["status"] == "stale" and "changed since" in body["decision_note"]
    assert (root / "page.md").read_text() == "# Edited meanwhile\n"


def test_reject_records_the_reason(client, docs):
    corpus, root = docs
    proposal = propose(corpus, root)
    body = call(client, "post", f"/corpora/docs/fixes/{proposal.pk}/reject", {"reason": "wrong description"}).json()
    assert (body["status"], body["decision_note"]) == ("rejected", "wrong description")
    assert (root / "page.md").read_text() == OLD


@pytest.mark.parametrize("body, status", [({}, 422), ({"reason": ""}, 422), ({"reason": "   "}, 400),
                                          ({"reason": "x", "force": True}, 422), ({"reason": 5}, 422)])
def test_reject_needs_a_reason_and_nothing_else(client, docs, body, status):
    corpus, root = docs
    proposal = propose(corpus, root)
    assert_error(call(client, "post", f"/corpora/docs/fixes/{proposal.pk}/reject", body), status)
    proposal.refresh_from_db()
    assert proposal.status == FixProposal.PENDING


def test_a_proposal_of_another_corpus_is_404(client, docs, sample_corpus):
    corpus, root = docs
    proposal = propose(corpus, root)
    for method, suffix, body in (("get", "", None), ("post", "/approve", None), ("post", "/reject", {"reason": "r"})):
        assert_error(call(client, method, f"/corpora/sample/fixes/{proposal.pk}{suffix}", body), 404, "fix_not_found")


def test_an_outline_gets_its_text_over_rest_before_it_can_be_approved(client, docs):
    from corpus.content_fixes import content_fix_propose

    corpus, root = docs
    outline = content_fix_propose(corpus=corpus, filepath="page.md", questions=["Can customers pay with Apple Pay?"],
                                  feedback=[])
    assert_error(call(client, "post", f"/corpora/docs/fixes/{outline.pk}/approve"), 400, "fix_error",
                 "still an outline")
    assert_error(call(client, "post", f"/corpora/docs/fixes/{outline.pk}/text",
                      {"heading": "Apple Pay", "body": "## Apple Pay\n\nNot a subsection."}), 400, "fix_error",
                 "heading of level 2 or above")
    body = "Apple Pay is not supported: customers pay by card or bank transfer."
    written = call(client, "post", f"/corpora/docs/fixes/{outline.pk}/text", {"heading": "Apple Pay", "body": body})
    assert written.status_code == 200, written.content
    assert "+## Apple Pay" in written.json()["diff"] and "outline" not in written.json()["diff"]
    assert call(client, "post", f"/corpora/docs/fixes/{outline.pk}/approve").json()["status"] == "applied"
    assert (root / "page.md").read_text() == f"{OLD}\n## Apple Pay\n\n{body}\n"
    other = propose(corpus, root)  # not a content section: it has no text to write
    assert_error(call(client, "post", f"/corpora/docs/fixes/{other.pk}/text", {"heading": "X", "body": "y"}), 400,
                 "fix_error", "has no text to write")


def test_a_decision_over_rest_records_the_key_that_made_it(client, docs):
    from corpus.models import FixDecision

    corpus, root = docs
    approved, rejected = propose(corpus, root), propose(corpus, root, kind="hint")
    body = call(client, "post", f"/corpora/docs/fixes/{rejected.pk}/reject", {"reason": "not needed"}).json()
    assert body["decided_by"] == "api-key:test-writer"
    assert call(client, "post", f"/corpora/docs/fixes/{approved.pk}/approve").json()["decided_by"] \
        == "api-key:test-writer"
    decisions = FixDecision.objects.filter(proposal__in=[approved, rejected]).order_by("pk")
    assert [(d.action, d.username, d.user_id) for d in decisions] == [
        (FixDecision.REJECT, "api-key:test-writer", None), (FixDecision.APPROVE, "api-key:test-writer", None)]


def test_a_decision_from_an_admin_session_records_the_staff_member(docs, admin_user):
    from django.test import Client

    from corpus.models import FixDecision

    corpus, root = docs
    proposal = propose(corpus, root)
    staff = Client()
    staff.force_login(admin_user)
    body = call(staff, "post", f"/corpora/docs/fixes/{proposal.pk}/reject", {"reason": "wrong"}).json()
    assert body["decided_by"] == "admin"
    decision = FixDecision.objects.get(proposal=proposal)
    assert (decision.username, decision.user_id) == ("admin", admin_user.pk)
