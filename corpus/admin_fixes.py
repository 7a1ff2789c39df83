"""Review of fix proposals in the admin: list, diff, chunks before/after, approve and reject."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from common.admin_base import ReadOnlyAdmin
from retrieval.fixes.content import DRAFT_KINDS

from .content_fixes import content_fix_unwritten, content_fix_verdicts, content_fix_write
from .errors import FixError
from .fix_decisions import fix_approve, fix_approve_many, fix_preview, fix_reject, fix_reject_many
from .models import FixDecision, FixProposal

STATUS_COLOURS = {
    FixProposal.PENDING: "#ba7a00", FixProposal.APPROVED: "#0b6bcb", FixProposal.APPLIED: "#2e7d32",
    FixProposal.REJECTED: "#b00020", FixProposal.STALE: "#6b6b6b",
}


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, line) for the template, which escapes the text."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            css = "meta"
        elif line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        else:
            css = "ctx"
        out.append((css, line))
    return out


def agent_supplied(proposal: FixProposal) -> list[tuple[str, str]]:
    """(what, text) of every agent-supplied text the proposal was made from (and, for a model's proposal,
    that the model read): agents' questions and readers' feedback, unchecked, shown marked as such."""
    finding = proposal.finding or {}
    if finding.get("code") != "unanswered-questions":
        return []
    return ([("question", str(q)) for q in finding.get("questions") or []]
            + [("feedback", str(f)) for f in finding.get("feedback") or []])


def _summary(proposals: list[FixProposal]) -> str:
    counts: dict[str, int] = {}
    for proposal in proposals:
        counts[proposal.status] = counts.get(proposal.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing changed"


@admin.register(FixProposal)
class FixProposalAdmin(ReadOnlyAdmin):
    """Proposals are decided, never edited or deleted: the change page is a review page, and the
    decision history stays."""

    list_display = ("id", "corpus", "file", "kind", "status_badge", "source", "created_at", "decided_by",
                    "decided_at")
    list_display_links = ("id", "file")
    list_filter = ("corpus", "kind", "status", "source")
    search_fields = ("file", "target_path", "rationale")
    list_select_related = ("corpus",)
    actions = ["approve_selected", "reject_selected"]
    change_form_template = "admin/corpus/fixproposal/change_form.html"

    def has_review_permission(self, request) -> bool:
        return request.user.has_perm("corpus.change_fixproposal")

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj):
        return format_html('<span class="fix-status" style="color:{};font-weight:bold">{}</span>',
                           STATUS_COLOURS.get(obj.status, "inherit"), obj.status)

    def get_urls(self):
        return [
            path("<path:object_id>/approve/", self.admin_site.admin_view(self.approve_view),
                 name="corpus_fixproposal_approve"),
            path("<path:object_id>/reject/", self.admin_site.admin_view(self.reject_view),
                 name="corpus_fixproposal_reject"),
            path("<path:object_id>/write/", self.admin_site.admin_view(self.write_view),
                 name="corpus_fixproposal_write"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        proposal = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if proposal is not None:
            preview = fix_preview(proposal=proposal)
            files = []
            for item in preview.files:
                before_ids = {c.chunk_id for c in item.before}
                after_ids = {c.chunk_id for c in item.after}
                files.append({"file": item, "gone": before_ids - after_ids, "new": after_ids - before_ids})
            context.update({
                "proposal": proposal,
                "diff_lines": diff_lines(proposal.diff),
                "preview": preview,
                "preview_files": files,
                "decisions": proposal.decisions.all(),
                "draft": (proposal.finding or {}).get("draft") if proposal.kind in DRAFT_KINDS else None,
                "unwritten": content_fix_unwritten(proposal=proposal),
                "supplied": agent_supplied(proposal),
                "prompt": (proposal.finding or {}).get("prompt"),
                "verdicts": content_fix_verdicts(proposal=proposal),
                "can_write": self.has_review_permission(request) and proposal.status == FixProposal.PENDING,
                "can_review": self.has_review_permission(request) and proposal.status in FixProposal.OPEN,
                "status_colour": STATUS_COLOURS.get(proposal.status, "inherit"),
                "title": f"Fix proposal #{proposal.pk}: {proposal.kind} {proposal.file}",
            })
        return super().change_view(request, object_id, form_url, extra_context=context)

    def _decide(self, request, object_id):
        if request.method != "POST":
            return None, HttpResponseNotAllowed(["POST"])
        if not self.has_review_permission(request):
            raise PermissionDenied
        return get_object_or_404(FixProposal, pk=unquote(object_id)), None

    def _back(self, proposal: FixProposal) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:corpus_fixproposal_change", args=[proposal.pk]))

    def approve_view(self, request, object_id):
        proposal, refused = self._decide(request, object_id)
        if refused:
            return refused
        try:
            proposal = fix_approve(proposal=proposal, user=request.user)
        except FixError as exc:
            messages.error(request, str(exc))
            proposal.refresh_from_db()
        else:
            if proposal.status == FixProposal.APPLIED:
                messages.success(request, f"Applied: {proposal.target_path} was written.")
            else:
                messages.warning(request, f"Not applied, the proposal is {proposal.status}: {proposal.decision_note}")
        self.log_change(request, proposal, f"approve -> {proposal.status}")
        return self._back(proposal)

    def write_view(self, request, object_id):
        proposal, refused = self._decide(request, object_id)
        if refused:
            return refused
        try:
            proposal = content_fix_write(proposal=proposal, heading=request.POST.get("heading", ""),
                                         body=request.POST.get("body", ""), user=request.user)
        except FixError as exc:
            messages.error(request, f"The text was not saved: {exc}")
            return self._back(proposal)
        missing = content_fix_unwritten(proposal=proposal)
        if missing:
            messages.warning(request, f"Saved, but it cannot be approved yet: {missing}.")
        else:
            messages.success(request, "Saved: the change below is what approving will write.")
        self.log_change(request, proposal, "text written")
        return self._back(proposal)

    def reject_view(self, request, object_id):
        proposal, refused = self._decide(request, object_id)
        if refused:
            return refused
        try:
            proposal = fix_reject(proposal=proposal, user=request.user, reason=request.POST.get("reason", ""))
        except FixError as exc:
            messages.error(request, str(exc))
            return self._back(proposal)
        messages.success(request, f"Rejected proposal #{proposal.pk}.")
        self.log_change(request, proposal, f"reject: {proposal.decision_note}")
        return self._back(proposal)

    @admin.action(description="Approve and apply selected proposals", permissions=["review"])
    def approve_selected(self, request, queryset):
        done = fix_approve_many(proposals=list(queryset.filter(status__in=FixProposal.OPEN)), user=request.user)
        for proposal in done:
            self.log_change(request, proposal, f"bulk approve -> {proposal.status}")
        level = messages.SUCCESS if all(p.status == FixProposal.APPLIED for p in done) else messages.WARNING
        self.message_user(request, f"Approve: {_summary(done)}. Stale proposals were not written; "
                                   "run Propose fixes again to refresh them.", level)

    @admin.action(description="Reject selected proposals…", permissions=["review"])
    def reject_selected(self, request, queryset):
        if "confirm" in request.POST:
            reason = request.POST.get("reason", "").strip()
            if reason:
                done = fix_reject_many(proposals=list(queryset.filter(status__in=FixProposal.OPEN)),
                                       user=request.user, reason=reason)
                for proposal in done:
                    self.log_change(request, proposal, f"bulk reject: {reason}")
                self.message_user(request, f"Reject: {_summary(done)}.", messages.SUCCESS)
                return None
            self.message_user(request, "A rejection needs a reason.", messages.ERROR)
        context = {
            **self.admin_site.each_context(request),
            "title": "Reject fix proposals",
            "opts": self.opts,
            "queryset": queryset,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "action_name": "reject_selected",
        }
        return TemplateResponse(request, "admin/corpus/fixproposal/reject_selected.html", context)


@admin.register(FixDecision)
class FixDecisionAdmin(ReadOnlyAdmin):
    """The audit trail: every approve, reject, refusal and staleness, with who and when (read-only)."""

    list_display = ("at", "username", "action", "status_after", "proposal_link", "note")
    list_filter = ("action", "username", "proposal__corpus")
    search_fields = ("username", "note", "proposal__file")
    list_select_related = ("proposal",)

    @admin.display(description="proposal")
    def proposal_link(self, obj):
        return format_html('<a href="{}">#{} {} {}</a>', reverse("admin:corpus_fixproposal_change", args=[obj.proposal_id]),
                           obj.proposal_id, obj.proposal.kind, obj.proposal.file)
