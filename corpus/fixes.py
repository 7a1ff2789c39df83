"""Fix proposals: scan a corpus for fixes (heuristic, optionally LLM), approve (apply safely) or reject.

This module scans and stores proposals and records decisions; content fixes for unanswered questions
are proposed and written in content_fixes.py, approved or rejected in fix_decisions.py.

The admin, `manage.py fix_docs`, the Celery task `corpus.run_fix` and the REST API all call these.
Applying is the only place docsmcp writes to a corpus's source files, so its rules are strict:
the target must be inside the corpus root (no `..`, no absolute path, no symbolic link), and it
must still have the sha256 it had when the fix was proposed, or the proposal goes stale and
nothing is written. Every decision is recorded as a FixDecision (who, when, what).
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from retrieval.errors import ConfigError, LLMFixError, UnsafeTarget
from retrieval.fixes.apply import current_hash, resolve_target
from retrieval.fixes.base import ProposedFix, Thresholds
from retrieval.fixes.heuristics import analyse_corpus, heuristic_fixes
from retrieval.fixes.llm import LLMFixer, llm_candidates

from .errors import CorpusError, FixError
from .execution import source_root
from .gitfixes import export_tree
from .models import Corpus, FixDecision, FixProposal

log = logging.getLogger("docsmcp.fixes")
SYSTEM = "system"
Progress = Callable[[str, int, int], None]


@dataclass
class FixScanReport:
    proposals: list[FixProposal] = field(default_factory=list)  # new or already pending, in proposal order
    created: int = 0
    marked_stale: int = 0
    llm_failures: list[tuple[str, str]] = field(default_factory=list)  # (file, why)
    skipped: list[str] = field(default_factory=list)  # proposals not stored, with the reason


# Who decides: a Django user (admin), a plain name such as "api-key:ci" (REST API, scripts), or None (system).
Actor = AbstractBaseUser | str | None


def actor_name(user: Actor) -> str:
    if isinstance(user, str):
        return user.strip()[:150] or SYSTEM
    if user is None or not getattr(user, "is_authenticated", False):
        return SYSTEM
    return user.get_username()


def record_decision(proposal: FixProposal, *, action: str, status: str, user: Actor, note: str = "") -> None:
    proposal.status = status
    proposal.decided_by = actor_name(user)
    proposal.decided_at = timezone.now()
    proposal.decision_note = note
    proposal.save(update_fields=["status", "decided_by", "decided_at", "decision_note"])
    FixDecision.objects.create(proposal=proposal, action=action, status_after=status, note=note,
                               user=user if not isinstance(user, str) and getattr(user, "is_authenticated", False)
                               else None,
                               username=proposal.decided_by)


def fix_root(corpus: Corpus) -> Path:
    if corpus.kind == Corpus.KIND_MARKDOWN and corpus.git_url:
        return export_tree(corpus)
    if corpus.kind != Corpus.KIND_MARKDOWN or not corpus.source_dir:
        raise FixError(f"corpus {corpus.name!r} has no markdown source directory to fix")
    try:
        return source_root(corpus)  # checked on every read and write: a link put in its place is refused
    except CorpusError as exc:
        raise FixError(str(exc)) from None


def llm_fixer(*, corpus: Corpus | None = None, model: str | None = None) -> LLMFixer:
    """The configured LLM fixer: model from the argument, the corpus settings or DOCSMCP_FIX_MODEL."""
    chosen = model or (corpus.settings.get("fix_model") if corpus else None) or settings.DOCSMCP_FIX_MODEL
    try:
        return LLMFixer(model=chosen, base_url=settings.OPENAI_BASE_URL or None, api_key=settings.OPENAI_API_KEY)
    except LLMFixError as exc:
        raise FixError(str(exc)) from exc


def fix_thresholds(*, corpus: Corpus) -> Thresholds:
    """Heuristic thresholds, overridable per corpus with settings {"fix_thresholds": {"tiny_median": 150}}."""
    overrides = corpus.settings.get("fix_thresholds") or {}
    known = {f.name for f in dataclasses.fields(Thresholds)}
    bad = sorted(k for k, v in overrides.items() if k not in known or not isinstance(v, int) or isinstance(v, bool)
                 or v < 1)
    if bad:
        raise FixError(f"corpus {corpus.name!r} settings.fix_thresholds: invalid {', '.join(bad)}; "
                       f"use positive integers for {', '.join(sorted(known))}")
    return Thresholds(**overrides)


def fix_mark_stale(*, corpus: Corpus) -> int:
    """Open proposals whose target changed since they were proposed go stale (nothing is written)."""
    root = fix_root(corpus)
    count = 0
    for proposal in corpus.fix_proposals.filter(status__in=FixProposal.OPEN):
        try:
            digest = current_hash(resolve_target(root, proposal.target_path))
        except (UnsafeTarget, FileNotFoundError):
            continue
        if digest != proposal.base_hash:
            record_decision(proposal, action=FixDecision.STALE, status=FixProposal.STALE, user=None,
                    note=f"{proposal.target_path} changed since the proposal was made")
            count += 1
    return count


def fix_scan_report(*, corpus: Corpus, use_llm: bool = False, model: str | None = None,
                    files: list[str] | None = None, progress: Progress | None = None) -> FixScanReport:
    """Run the heuristic fixer (and the LLM fixer when asked) and store new pending proposals."""
    root = fix_root(corpus)
    thresholds = fix_thresholds(corpus=corpus)
    fixer = llm_fixer(corpus=corpus, model=model) if use_llm else None
    report = FixScanReport(marked_stale=fix_mark_stale(corpus=corpus))
    in_daemon = multiprocessing.current_process().daemon  # Celery prefork children cannot fork pools
    try:
        ctx = analyse_corpus(root, thresholds=thresholds, workers=1 if in_daemon else (os.cpu_count() or 1),
                             progress=(lambda d, t: progress("scan", d, t)) if progress else None)
    except ConfigError as exc:
        raise FixError(str(exc)) from exc
    found = heuristic_fixes(ctx, description=corpus.description)
    if fixer is not None:
        candidates = [f for f in files if f in ctx.results] if files else \
            llm_candidates(ctx, limit=settings.DOCSMCP_FIX_LLM_MAX_FILES)
        report.llm_failures += [(f, "not a markdown file of this corpus") for f in files or () if f not in ctx.results]
        for n, relpath in enumerate(candidates):
            if progress:
                progress("llm", n, len(candidates))
            outcome = fixer.propose(ctx, relpath)
            if outcome.failure:
                report.llm_failures.append((relpath, outcome.failure))
            elif outcome.fix is not None:
                found.append(outcome.fix)
        if progress:
            progress("llm", len(candidates), len(candidates))
    for n, fix in enumerate(found):
        if progress:
            progress("store", n, len(found))
        store_fix(corpus, root, fix, report)
    if progress:
        progress("store", len(found), len(found))
    log.info("fix scan of %s: %d proposal(s), %d new, %d went stale, %d LLM failure(s)", corpus.name,
             len(report.proposals), report.created, report.marked_stale, len(report.llm_failures))
    return report


def fix_scan(*, corpus: Corpus, use_llm: bool = False, model: str | None = None,
             progress: Progress | None = None) -> list[FixProposal]:
    """The corpus's current proposals: newly created ones and identical ones already pending."""
    return fix_scan_report(corpus=corpus, use_llm=use_llm, model=model, progress=progress).proposals


def store_fix(corpus: Corpus, root: Path, fix: ProposedFix, report: FixScanReport) -> None:
    try:
        resolve_target(root, fix.target_path)
    except UnsafeTarget as exc:
        report.skipped.append(f"{fix.kind} {fix.file}: {exc}")
        log.warning("fix for %s not stored: %s", fix.file, exc)
        return
    same = corpus.fix_proposals.filter(file=fix.file, kind=fix.kind, diff=fix.diff)
    existing = same.filter(status=FixProposal.PENDING).first()
    if existing is not None:
        report.proposals.append(existing)
        return
    if same.filter(status=FixProposal.REJECTED, base_hash=fix.base_hash).exists():
        report.skipped.append(f"{fix.kind} {fix.file}: the same change was rejected before")
        return
    proposal = FixProposal.objects.create(
        corpus=corpus, file=fix.file, kind=fix.kind, rationale=fix.rationale, diff=fix.diff,
        target_path=fix.target_path, old_content=fix.old_text or "", new_content=fix.new_text,
        base_hash=fix.base_hash, source=fix.source, finding=fix.finding)
    report.proposals.append(proposal)
    report.created += 1
