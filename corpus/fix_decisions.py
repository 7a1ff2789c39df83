"""Approve (apply safely) or reject a fix proposal, one at a time or many, and preview its chunks.

Applying is the only place docsmcp writes to a corpus's source files: the target must be inside the
corpus root and still have the sha256 it had when the fix was proposed, or the proposal goes stale and
nothing is written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction

from retrieval.errors import ConfigError, UnsafeTarget
from retrieval.fixes.apply import atomic_write, current_hash, resolve_target
from retrieval.fixes.edits import content_hash
from retrieval.fixes.preview import Preview, preview_change

from .content_fixes import content_fix_unwritten, proposal_draft
from .errors import FixError, UnsafeFixTarget
from .fixes import Actor, actor_name, fix_root, record_decision
from .gitfixes import commit_fix, fix_branch
from .models import Corpus, FixDecision, FixProposal

log = logging.getLogger("docsmcp.fixes")


def fix_approve(*, proposal: FixProposal, user: Actor) -> FixProposal:
    """Apply the change if the target still has its base hash; otherwise the proposal goes stale.

    Raises FixError when the proposal is not open, UnsafeFixTarget when the target is outside the
    corpus root (the proposal is then rejected), and FixError when the write itself fails (the
    proposal stays approved, so it can be approved again).
    """
    failure: FixError | None = None
    with transaction.atomic():
        corpus = Corpus.objects.select_for_update().get(pk=proposal.corpus_id)  # one apply per corpus at a time
        locked = FixProposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status not in FixProposal.OPEN:
            raise FixError(f"proposal #{locked.pk} is {locked.status}; only pending proposals can be approved")
        missing = content_fix_unwritten(proposal=locked)
        if missing:
            raise FixError(f"proposal #{locked.pk} cannot be approved: {missing}. Write the answer under "
                           f"\"{proposal_draft(locked).heading}\" on the proposal's page (or POST its text to "
                           f"/api/v1/corpora/{corpus.name}/fixes/{locked.pk}/text), then approve")
        try:
            root = fix_root(corpus)
            target = resolve_target(root, locked.target_path)
            current = current_hash(target)
        except UnsafeTarget as exc:
            record_decision(locked, action=FixDecision.REFUSE, status=FixProposal.REJECTED, user=user, note=str(exc))
            failure = UnsafeFixTarget(f"proposal #{locked.pk} refused: {exc}")
        else:
            if current != locked.base_hash:
                record_decision(locked, action=FixDecision.STALE, status=FixProposal.STALE, user=user,
                        note=f"{locked.target_path} changed since the proposal was made; nothing was written")
            else:
                try:
                    if corpus.git_url:  # never written into a checkout: a commit on a branch instead
                        commit = commit_fix(corpus, locked)
                        new_hash, note = content_hash(locked.new_content.encode()), (
                            f"committed {commit[:12]} on branch {fix_branch(locked)} of the server's git cache; "
                            f"download it as a patch: GET /api/v1/corpora/{corpus.name}/fixes/{locked.pk}/patch")
                    else:
                        new_hash, note = atomic_write(target, locked.new_content, root=root), ""
                except (OSError, FixError, UnsafeTarget) as exc:
                    record_decision(locked, action=FixDecision.APPROVE, status=FixProposal.APPROVED, user=user,
                            note=f"approved, but writing {locked.target_path} failed: {exc}")
                    failure = FixError(f"proposal #{locked.pk}: writing {locked.target_path} failed: {exc}")
                else:
                    record_decision(locked, action=FixDecision.APPROVE, status=FixProposal.APPLIED, user=user, note=note)
                    _stale_siblings(locked, new_hash)
    log.info("fix #%s (%s %s) %s by %s", locked.pk, locked.kind, locked.target_path, locked.status,
             actor_name(user))
    if failure is not None:
        raise failure
    return locked


def _stale_siblings(applied: FixProposal, new_hash: str) -> None:
    others = FixProposal.objects.filter(corpus_id=applied.corpus_id, target_path=applied.target_path,
                                        status__in=FixProposal.OPEN).exclude(pk=applied.pk)
    for other in others:
        if other.base_hash != new_hash:
            record_decision(other, action=FixDecision.STALE, status=FixProposal.STALE, user=None,
                    note=f"{applied.target_path} changed when proposal #{applied.pk} was applied")


def fix_reject(*, proposal: FixProposal, user: Actor, reason: str) -> FixProposal:
    reason = (reason or "").strip()
    if not reason:
        raise FixError("a rejection needs a reason")
    with transaction.atomic():
        locked = FixProposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status not in FixProposal.OPEN:
            raise FixError(f"proposal #{locked.pk} is {locked.status}; only pending proposals can be rejected")
        record_decision(locked, action=FixDecision.REJECT, status=FixProposal.REJECTED, user=user, note=reason)
    log.info("fix #%s rejected by %s: %s", locked.pk, actor_name(user), reason)
    return locked


def fix_approve_many(*, proposals: Iterable[FixProposal], user: Actor) -> list[FixProposal]:
    """Oldest first. Each is applied, goes stale or is refused on its own; the statuses tell which."""
    out = []
    for proposal in sorted(proposals, key=lambda p: (p.created_at, p.pk)):
        try:
            out.append(fix_approve(proposal=proposal, user=user))
        except FixError as exc:
            log.warning("bulk approve: %s", exc)
            proposal.refresh_from_db()
            out.append(proposal)
    return out


def fix_reject_many(*, proposals: Iterable[FixProposal], user: Actor, reason: str) -> list[FixProposal]:
    if not (reason or "").strip():
        raise FixError("a rejection needs a reason")
    out = []
    for proposal in proposals:
        try:
            out.append(fix_reject(proposal=proposal, user=user, reason=reason))
        except FixError as exc:
            log.warning("bulk reject: %s", exc)
            proposal.refresh_from_db()
            out.append(proposal)
    return out


def fix_preview(*, proposal: FixProposal, limit: int = 10) -> Preview:
    """Chunks before and after the change, per affected file: what the agent will see (read-only)."""
    try:
        root = fix_root(proposal.corpus)
    except FixError as exc:
        return Preview(error=str(exc))
    old = proposal.old_content if proposal.target_existed else None
    try:
        return preview_change(root, proposal.target_path, old, proposal.new_content, focus=proposal.file, limit=limit)
    except (OSError, ConfigError, ValueError) as exc:
        return Preview(error=f"preview unavailable: {exc}")
