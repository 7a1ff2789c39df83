"""Fix proposals: scan a corpus for fixes (heuristic, optionally LLM), approve (apply safely) or reject.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from retrieval.errors import ConfigError, ContentFixError, LLMFixError, UnsafeTarget
from retrieval.fixes.apply import atomic_write, current_hash, resolve_target
from retrieval.fixes.base import ProposedFix, Thresholds
from retrieval.fixes.content import (
    DRAFT_KINDS,
    MAX_FEEDBACK,
    MAX_FEEDBACK_CHARS,
    MAX_QUESTION_CHARS,
    MAX_QUESTIONS,
    page_context,
    quoted,
)
from retrieval.fixes.drafts import Draft, check_draft, draft_text
from retrieval.fixes.edits import content_hash, unified_diff
from retrieval.fixes.heuristics import analyse_corpus, heuristic_fixes
from retrieval.fixes.llm import LLMFixer, llm_candidates
from retrieval.fixes.llm_content import llm_content_fix
from retrieval.fixes.outline import outline_fix, page_outline_fix, unwritten
from retrieval.fixes.preview import Preview, preview_change
from retrieval.fixes.questions import clean_texts
from retrieval.ingest.scan import MARKDOWN_SUFFIXES

from .errors import CorpusError, FixError, UnsafeFixTarget
from .execution import source_root
from .gitfixes import commit_fix, export_tree, fix_branch
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


def _username(user: Actor) -> str:
    if isinstance(user, str):
        return user.strip()[:150] or SYSTEM
    if user is None or not getattr(user, "is_authenticated", False):
        return SYSTEM
    return user.get_username()


def _record(proposal: FixProposal, *, action: str, status: str, user: Actor, note: str = "") -> None:
    proposal.status = status
    proposal.decided_by = _username(user)
    proposal.decided_at = timezone.now()
    proposal.decision_note = note
    proposal.save(update_fields=["status", "decided_by", "decided_at", "decision_note"])
    FixDecision.objects.create(proposal=proposal, action=action, status_after=status, note=note,
                               user=user if not isinstance(user, str) and getattr(user, "is_authenticated", False)
                               else None,
                               username=proposal.decided_by)


def _root(corpus: Corpus) -> Path:
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
    root = _root(corpus)
    count = 0
    for proposal in corpus.fix_proposals.filter(status__in=FixProposal.OPEN):
        try:
            digest = current_hash(resolve_target(root, proposal.target_path))
        except (UnsafeTarget, FileNotFoundError):
            continue
        if digest != proposal.base_hash:
            _record(proposal, action=FixDecision.STALE, status=FixProposal.STALE, user=None,
                    note=f"{proposal.target_path} changed since the proposal was made")
            count += 1
    return count


def fix_scan_report(*, corpus: Corpus, use_llm: bool = False, model: str | None = None,
                    files: list[str] | None = None, progress: Progress | None = None) -> FixScanReport:
    """Run the heuristic fixer (and the LLM fixer when asked) and store new pending proposals."""
    root = _root(corpus)
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
        _store(corpus, root, fix, report)
    if progress:
        progress("store", len(found), len(found))
    log.info("fix scan of %s: %d proposal(s), %d new, %d went stale, %d LLM failure(s)", corpus.name,
             len(report.proposals), report.created, report.marked_stale, len(report.llm_failures))
    return report


def fix_scan(*, corpus: Corpus, use_llm: bool = False, model: str | None = None,
             progress: Progress | None = None) -> list[FixProposal]:
    """The corpus's current proposals: newly created ones and identical ones already pending."""
    return fix_scan_report(corpus=corpus, use_llm=use_llm, model=model, progress=progress).proposals


def content_fix_propose(*, corpus: Corpus, filepath: str, questions: list[str], feedback: list[str],
                        use_llm: bool = False, heading: str | None = None) -> FixProposal:
    """A pending proposal that makes `filepath` answer `questions` (a gap group's, a feedback item's).

    Without the LLM: an outline, a section named after the questions' intent (or `heading`) at the end of
    the page, or a new page when `filepath` does not exist yet, that the author completes on the review
    page (`content_fix_write`) before it can be approved. With `use_llm`: the model's section, which the
    author may edit too. Never words added to a page that does not answer. The same change still pending
    is returned again rather than duplicated. FixError says why no proposal could be made."""
    root = _root(corpus)
    try:
        target = resolve_target(root, filepath)
    except UnsafeTarget as exc:
        raise FixError(str(exc)) from exc
    if not filepath.endswith(MARKDOWN_SUFFIXES) or (target.exists() and not target.is_file()):
        raise FixError(f"{filepath!r} is not a markdown page of corpus {corpus.name!r}")
    asked = clean_texts(questions, limit=MAX_QUESTIONS, max_chars=MAX_QUESTION_CHARS)
    said = clean_texts(feedback, limit=MAX_FEEDBACK, max_chars=MAX_FEEDBACK_CHARS)
    if not asked:
        raise FixError("a content fix needs at least one question the page should answer")
    if heading is not None:
        try:
            heading = check_draft(heading, "-")[0]
        except ContentFixError as exc:
            raise FixError(str(exc)) from exc
    new_page = not target.exists()
    if new_page and use_llm:
        raise FixError(f"{filepath} does not exist yet: ask for its outline without the LLM and write the page")
    fixer = llm_fixer(corpus=corpus) if use_llm else None
    try:
        if new_page:
            fix = page_outline_fix(filepath, asked, said, heading)
        else:
            ctx = page_context(root, filepath)
            fix = llm_content_fix(fixer, ctx, filepath, asked, said) if fixer else \
                outline_fix(ctx, filepath, asked, said, heading)
    except LLMFixError as exc:
        raise FixError(f"the LLM fixer made no proposal for {filepath}: {exc}") from exc
    except (ContentFixError, ConfigError) as exc:
        raise FixError(str(exc)) from exc
    report = FixScanReport()
    _store(corpus, root, fix, report)
    if not report.proposals:
        raise FixError(report.skipped[0] if report.skipped else f"no proposal stored for {filepath}")
    log.info("content fix for %s of %s: proposal #%s (%s, %s)", filepath, corpus.name, report.proposals[0].pk,
             fix.kind, fix.source)
    return report.proposals[0]


def _draft(proposal: FixProposal) -> Draft | None:
    data = (proposal.finding or {}).get("draft")
    return Draft.from_dict(data) if proposal.kind in DRAFT_KINDS and isinstance(data, dict) else None


def content_fix_unwritten(*, proposal: FixProposal) -> str | None:
    """Why a drafted content fix cannot be approved yet (an outline without a written answer), or None."""
    draft = _draft(proposal)
    if draft is None:
        return None
    return unwritten(proposal.new_content, draft.body)


def content_fix_write(*, proposal: FixProposal, heading: str, body: str, user: Actor) -> FixProposal:
    """The author's own text for a drafted section or page (an outline to complete, or the model's draft to
    correct): the proposal's change is made again from it, against the page as it was proposed, so the
    diff and the chunks before and after show exactly what approving will write. FixError says what is
    wrong with the text."""
    with transaction.atomic():
        locked = FixProposal.objects.select_for_update().get(pk=proposal.pk)
        draft = _draft(locked)
        if draft is None:
            raise FixError(f"proposal #{locked.pk} ({locked.kind}) has no text to write; only content sections and "
                           "pages do")
        if locked.status != FixProposal.PENDING:
            raise FixError(f"proposal #{locked.pk} is {locked.status}; only a pending proposal's text can be edited")
        try:
            heading, body = check_draft(heading, body)
            written = Draft(heading, body, draft.after, draft.new_page, draft.keywords)
            new = draft_text(locked.old_content if locked.target_existed else None, locked.target_path, written)
        except ContentFixError as exc:
            raise FixError(str(exc)) from exc
        finding = dict(locked.finding or {})
        finding["draft"] = written.as_dict()
        finding["written_by"] = _username(user)
        drafted = "" if locked.source == FixProposal.SOURCE_HEURISTIC else f", from {locked.source}'s draft"
        locked.rationale = (f"Agents asked what the docs did not answer: {quoted(finding.get('questions') or [])}. "
                            f"The {'page' if written.new_page else 'section'} \"{heading}\" answers them, written "
                            f"by {_username(user)}{drafted}.")
        locked.new_content, locked.finding = new, finding
        locked.diff = unified_diff(locked.target_path, locked.old_content if locked.target_existed else None, new)
        locked.save(update_fields=["new_content", "finding", "diff", "rationale"])
    log.info("fix #%s text written by %s", locked.pk, _username(user))
    return locked


@dataclass(frozen=True)
class QuestionVerdict:
    question: str
    verdict: str  # covered | partial | not_covered
    score: float
    page_rank: int | None  # the proposal's page among the first 10 hits (1-based); None: not there


@dataclass(frozen=True)
class FixVerdicts:
    """How the corpus's active build answers a content fix's questions: the judgement of the fix."""

    build_id: str
    rebuilt: bool  # the active build was made after the fix was applied
    questions: list[QuestionVerdict]

    @property
    def covered(self) -> int:
        return sum(q.verdict == "covered" for q in self.questions)


def content_fix_verdicts(*, proposal: FixProposal, limit: int = 10) -> FixVerdicts | None:
    """An applied content fix judged as its gap is: each of its questions searched on the active build,
    with the coverage verdict and the rank of the page it changed. None for another kind of proposal, one
    not applied, or a corpus that cannot be searched now. Outside a tool call, nothing is logged."""
    from retrieval.errors import RetrievalError
    from retrieval.search.engine import SearchRequest

    from .serving import corpus_search_batch

    questions = [str(q) for q in (proposal.finding or {}).get("questions") or []][:limit]
    if proposal.kind not in DRAFT_KINDS or proposal.status != FixProposal.APPLIED or not questions:
        return None
    try:
        served = corpus_search_batch(proposal.corpus.name, [SearchRequest(q, limit=10) for q in questions])
    except (RetrievalError, CorpusError) as exc:
        log.info("content fix #%s not judged: %s", proposal.pk, exc)
        return None
    build = proposal.corpus.active_build
    rebuilt = bool(build and build.finished_at and proposal.decided_at and build.finished_at > proposal.decided_at)
    rows = []
    for question, search in zip(questions, served, strict=True):
        pages = [h.filepath for h in search.result.hits]
        coverage = search.result.coverage
        rows.append(QuestionVerdict(question, coverage.verdict if coverage else "", coverage.score if coverage else 0.0,
                                    pages.index(proposal.file) + 1 if proposal.file in pages else None))
    return FixVerdicts(served[0].build_id, rebuilt, rows)


def _store(corpus: Corpus, root: Path, fix: ProposedFix, report: FixScanReport) -> None:
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
                           f"\"{_draft(locked).heading}\" on the proposal's page (or POST its text to "
                           f"/api/v1/corpora/{corpus.name}/fixes/{locked.pk}/text), then approve")
        try:
            root = _root(corpus)
            target = resolve_target(root, locked.target_path)
            current = current_hash(target)
        except UnsafeTarget as exc:
            _record(locked, action=FixDecision.REFUSE, status=FixProposal.REJECTED, user=user, note=str(exc))
            failure = UnsafeFixTarget(f"proposal #{locked.pk} refused: {exc}")
        else:
            if current != locked.base_hash:
                _record(locked, action=FixDecision.STALE, status=FixProposal.STALE, user=user,
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
                    _record(locked, action=FixDecision.APPROVE, status=FixProposal.APPROVED, user=user,
                            note=f"approved, but writing {locked.target_path} failed: {exc}")
                    failure = FixError(f"proposal #{locked.pk}: writing {locked.target_path} failed: {exc}")
                else:
                    _record(locked, action=FixDecision.APPROVE, status=FixProposal.APPLIED, user=user, note=note)
                    _stale_siblings(locked, new_hash)
    log.info("fix #%s (%s %s) %s by %s", locked.pk, locked.kind, locked.target_path, locked.status,
             _username(user))
    if failure is not None:
        raise failure
    return locked


def _stale_siblings(applied: FixProposal, new_hash: str) -> None:
    others = FixProposal.objects.filter(corpus_id=applied.corpus_id, target_path=applied.target_path,
                                        status__in=FixProposal.OPEN).exclude(pk=applied.pk)
    for other in others:
        if other.base_hash != new_hash:
            _record(other, action=FixDecision.STALE, status=FixProposal.STALE, user=None,
                    note=f"{applied.target_path} changed when proposal #{applied.pk} was applied")


def fix_reject(*, proposal: FixProposal, user: Actor, reason: str) -> FixProposal:
    reason = (reason or "").strip()
    if not reason:
        raise FixError("a rejection needs a reason")
    with transaction.atomic():
        locked = FixProposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status not in FixProposal.OPEN:
            raise FixError(f"proposal #{locked.pk} is {locked.status}; only pending proposals can be rejected")
        _record(locked, action=FixDecision.REJECT, status=FixProposal.REJECTED, user=user, note=reason)
    log.info("fix #%s rejected by %s: %s", locked.pk, _username(user), reason)
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
        root = _root(proposal.corpus)
    except FixError as exc:
        return Preview(error=str(exc))
    old = proposal.old_content if proposal.target_existed else None
    try:
        return preview_change(root, proposal.target_path, old, proposal.new_content, focus=proposal.file, limit=limit)
    except (OSError, ConfigError, ValueError) as exc:
        return Preview(error=f"preview unavailable: {exc}")
