"""REST router for fix proposals: list, read, approve (apply) and reject, through corpus.fixes like the admin."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Field, Path, Query, Router, Schema

from common.api.pagination import Input, Page, PageParams, paginate
from common.callers import Principal
from corpus import gitfixes, selectors
from corpus.api.auth import BUILD, READ
from corpus.content_fixes import content_fix_write
from corpus.fix_decisions import fix_approve, fix_reject
from corpus.fixes import Actor
from corpus.models import FixProposal

router = Router(tags=["fixes"])

ProposalId = Path(..., ge=1, le=2**63 - 1, description="The proposal's id.")
FixStatus = Literal[tuple(dict(FixProposal.STATUS_CHOICES))]  # type: ignore[valid-type]


class FixListParams(Input):
    status: FixStatus | None = Field(None, description="Only proposals in this status.")


class RejectIn(Input):
    reason: str = Field(..., min_length=1, max_length=2000, description="Why the change is refused (recorded).")


class TextIn(Input):
    heading: str = Field(..., min_length=1, max_length=120, description="The section's heading (a new page's title).")
    body: str = Field(..., min_length=1, max_length=6000, description="The section's (or page's) markdown text: "
                      "the answer, written in place of the outline.")


class FixOut(Schema):
    id: int
    corpus: str
    file: str = Field(description="The file the fix is about, relative to the corpus root.")
    kind: str
    rationale: str
    diff: str = Field(description="Unified diff of target_path.")
    target_path: str = Field(description="The file written on approval.")
    source: str = Field(description='"heuristic" or the LLM model name.')
    finding: dict[str, Any] | None
    status: str
    decided_by: str
    decided_at: datetime | None
    decision_note: str
    created_at: datetime
    url: str


def fix_out(proposal: FixProposal) -> dict:
    return {
        "id": proposal.pk, "corpus": proposal.corpus.name, "file": proposal.file, "kind": proposal.kind,
        "rationale": proposal.rationale, "diff": proposal.diff, "target_path": proposal.target_path,
        "source": proposal.source, "finding": proposal.finding, "status": proposal.status,
        "decided_by": proposal.decided_by, "decided_at": proposal.decided_at,
        "decision_note": proposal.decision_note, "created_at": proposal.created_at,
        "url": reverse("api:fix", kwargs={"name": proposal.corpus.name, "proposal_id": proposal.pk}),
    }


def _decider(request: HttpRequest) -> Actor:
    """Who the decision is recorded for: the staff member of an admin session, else the key by its name
    ("api-key:ci"; an OAuth token's principal is already named "oauth:<user>:<client>"), so the proposal's
    history says which key applied or refused a change."""
    principal = getattr(request, "auth", None)
    if not isinstance(principal, Principal):
        return None
    if principal.name.startswith("staff:") and principal.key_id is None and not principal.token:
        return getattr(request, "user", None)
    if principal.token or principal.name.startswith("oauth:"):
        return principal.name
    return f"api-key:{principal.name}"


def _proposal(name: str, proposal_id: int) -> FixProposal:
    return selectors.fix_get(corpus=selectors.corpus_get(name), proposal_id=proposal_id)


@router.get("/corpora/{name}/fixes", response=Page[FixOut], auth=READ)
def list_fixes(request: HttpRequest, name: str, filters: Query[FixListParams], page: Query[PageParams]):
    """A corpus's fix proposals, newest first (create them with `manage.py fix_docs` or the admin)."""
    return paginate(selectors.fix_list(corpus=selectors.corpus_get(name), status=filters.status), page, fix_out)


@router.get("/corpora/{name}/fixes/{int:proposal_id}", response=FixOut, auth=READ, url_name="fix")
def get_fix(request: HttpRequest, name: str, proposal_id: int = ProposalId):
    """One proposal with its diff."""
    return fix_out(_proposal(name, proposal_id))


@router.post("/corpora/{name}/fixes/{int:proposal_id}/approve", response=FixOut, auth=BUILD)
def approve_fix(request: HttpRequest, name: str, proposal_id: int = ProposalId):
    """Apply the change. `status` tells the outcome: applied, or stale when the file changed since (nothing
    written). The corpus is not rebuilt: trigger a build to serve the change."""
    return fix_out(fix_approve(proposal=_proposal(name, proposal_id), user=_decider(request)))


@router.post("/corpora/{name}/fixes/{int:proposal_id}/text", response=FixOut, auth=BUILD)
def write_fix_text(request: HttpRequest, name: str, payload: TextIn, proposal_id: int = ProposalId):
    """Write (or correct) the text of a pending content section or page: an outline must get its answer
    this way (or on the admin's proposal page) before it can be approved. The diff is made again from it."""
    return fix_out(content_fix_write(proposal=_proposal(name, proposal_id), heading=payload.heading,
                                     body=payload.body, user=_decider(request)))


@router.get("/corpora/{name}/fixes/{int:proposal_id}/patch", auth=READ, response={200: str},
            url_name="fix-patch")
def fix_patch_download(request: HttpRequest, name: str, proposal_id: int = ProposalId):
    """An applied fix of a git-sourced corpus as a patch for `git am` (the commit on its `docsmcp/fix-<id>` branch)."""
    patch = gitfixes.fix_patch(_proposal(name, proposal_id))
    response = HttpResponse(patch, content_type="text/x-patch; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="docsmcp-fix-{proposal_id}.patch"'
    return response


@router.post("/corpora/{name}/fixes/{int:proposal_id}/reject", response=FixOut, auth=BUILD)
def reject_fix(request: HttpRequest, name: str, payload: RejectIn, proposal_id: int = ProposalId):
    """Refuse the change, with a reason; the same change is not proposed again."""
    return fix_out(fix_reject(proposal=_proposal(name, proposal_id), user=_decider(request), reason=payload.reason))
