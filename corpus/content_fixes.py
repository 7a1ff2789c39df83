"""Content fixes: a pending proposal that makes a page answer the questions agents asked, the author's
text written into it, and, once applied, how the active build answers those questions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

from retrieval.errors import ConfigError, ContentFixError, LLMFixError, UnsafeTarget
from retrieval.fixes.apply import resolve_target
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
from retrieval.fixes.edits import unified_diff
from retrieval.fixes.llm_content import llm_content_fix
from retrieval.fixes.outline import outline_fix, page_outline_fix, unwritten
from retrieval.fixes.questions import clean_texts
from retrieval.ingest.scan import MARKDOWN_SUFFIXES

from .errors import CorpusError, FixError
from .fixes import Actor, FixScanReport, actor_name, fix_root, llm_fixer, store_fix
from .models import Corpus, FixProposal

log = logging.getLogger("docsmcp.fixes")


def content_fix_propose(*, corpus: Corpus, filepath: str, questions: list[str], feedback: list[str],
                        use_llm: bool = False, heading: str | None = None) -> FixProposal:
    """A pending proposal that makes `filepath` answer `questions` (a gap group's, a feedback item's).

    Without the LLM: an outline, a section named after the questions' intent (or `heading`) at the end of
    the page, or a new page when `filepath` does not exist yet, that the author completes on the review
    page (`content_fix_write`) before it can be approved. With `use_llm`: the model's section, which the
    author may edit too. Never words added to a page that does not answer. The same change still pending
    is returned again rather than duplicated. FixError says why no proposal could be made."""
    root = fix_root(corpus)
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
    store_fix(corpus, root, fix, report)
    if not report.proposals:
        raise FixError(report.skipped[0] if report.skipped else f"no proposal stored for {filepath}")
    log.info("content fix for %s of %s: proposal #%s (%s, %s)", filepath, corpus.name, report.proposals[0].pk,
             fix.kind, fix.source)
    return report.proposals[0]


def proposal_draft(proposal: FixProposal) -> Draft | None:
    data = (proposal.finding or {}).get("draft")
    return Draft.from_dict(data) if proposal.kind in DRAFT_KINDS and isinstance(data, dict) else None


def content_fix_unwritten(*, proposal: FixProposal) -> str | None:
    """Why a drafted content fix cannot be approved yet (an outline without a written answer), or None."""
    draft = proposal_draft(proposal)
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
        draft = proposal_draft(locked)
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
        finding["written_by"] = actor_name(user)
        drafted = "" if locked.source == FixProposal.SOURCE_HEURISTIC else f", from {locked.source}'s draft"
        locked.rationale = (f"Agents asked what the docs did not answer: {quoted(finding.get('questions') or [])}. "
                            f"The {'page' if written.new_page else 'section'} \"{heading}\" answers them, written "
                            f"by {actor_name(user)}{drafted}.")
        locked.new_content, locked.finding = new, finding
        locked.diff = unified_diff(locked.target_path, locked.old_content if locked.target_existed else None, new)
        locked.save(update_fields=["new_content", "finding", "diff", "rationale"])
    log.info("fix #%s text written by %s", locked.pk, actor_name(user))
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
