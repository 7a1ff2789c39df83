"""Writes of the insights app: what an author does with a gap group or a feedback item.

- make it an eval case: a case in the suite of the author's choice, asking the gap's question and
  expecting the page(s) the author picked, so every later run of that suite says whether it is answered;
- ask for a content fix: `corpus.content_fixes.content_fix_propose`, with the questions and feedback as
  context; the proposal is reviewed and applied like every other fix;
- dismiss it, with a reason (a gap reappears when new queries of it arrive).

The staff pages and the REST API both call these.
"""

from __future__ import annotations

import re

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from corpus.models import Corpus, Feedback, FixProposal
from evals.models import EvalCase, EvalSuite

from . import served
from .errors import FixUnavailable, GapNotFound, InsightsError
from .gaps import settle_gap
from .models import Gap

SUITE_NAME = re.compile(r"^[-a-zA-Z0-9_]{1,100}$")
MAX_EXPECTED = 20
MAX_CONTEXT = 10  # questions and feedback comments sent with a fix request


def gap_get(*, corpus: Corpus, gap_id: int) -> Gap:
    gap = Gap.objects.filter(corpus=corpus.family.name, pk=gap_id).select_related("eval_case", "fix_proposal").first()
    if gap is None:
        raise GapNotFound(f"gap #{gap_id} not found in corpus {corpus.family.name!r}; list its gaps "
                          f"(GET /api/v1/corpora/{corpus.family.name}/gaps) to find the ID")
    return settle_gap(gap)


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise InsightsError("a dismissal needs a reason, e.g. 'out of scope: we do not document Kubernetes'")
    return reason[:2000]


def gap_dismiss(*, gap: Gap, reason: str, by: str) -> Gap:
    """Hide the group until a query of it arrives after now."""
    gap.status, gap.status_at, gap.dismissed_reason, gap.decided_by = Gap.DISMISSED, timezone.now(), \
        _reason(reason), by[:150]
    gap.save(update_fields=["status", "status_at", "dismissed_reason", "decided_by", "updated_at"])
    return gap


def feedback_dismiss(*, item: Feedback, reason: str) -> Feedback:
    item.dismissed_at, item.dismissed_reason = timezone.now(), _reason(reason)
    item.save(update_fields=["dismissed_at", "dismissed_reason"])
    return item


# --- eval cases ---------------------------------------------------------------------------------------


def _check_pages(corpus: Corpus, files: list[str], what: str) -> list[str]:
    files = list(dict.fromkeys(f.strip().lstrip("/") for f in files if f and f.strip()))
    if not files:
        raise InsightsError(f"{what} needs at least one page the question should find (a file path such as "
                            "guides/retries.md); search the corpus to pick it")
    if len(files) > MAX_EXPECTED:
        raise InsightsError(f"at most {MAX_EXPECTED} expected pages, not {len(files)}")
    known = served.pages(served.active_index(corpus.name))
    unknown = [f for f in files if known and f not in known]
    if unknown:
        close = sorted(p for p in known if any(u.rsplit("/", 1)[-1] in p for u in unknown))[:5]
        raise InsightsError(f"not a page of corpus {corpus.name!r}: {', '.join(unknown)}"
                            + (f"; did you mean {', '.join(close)}?" if close else "; paths are relative to the "
                               "corpus root, as search hits give them (filepath)"))
    return files


def _suite(corpus: Corpus, name: str) -> EvalSuite:
    """The suite `name` of `corpus` (of the corpus it is a version of), created for it when new. Names are
    per corpus: another corpus's suite of the same name is another suite, so no caller can claim a name
    before a corpus's author and no case reaches callers of another corpus."""
    if not SUITE_NAME.match(name or ""):
        raise InsightsError(f"suite must be a slug (letters, digits, '-', '_'), not {name!r}")
    suite, _created = EvalSuite.objects.select_for_update().get_or_create(
        corpus=corpus.family, name=name, defaults={"description": "Questions agents asked that the docs missed "
                                                                 "(made from the insights pages)."})
    return suite


GAP_CASE_MAX_RANK = 3  # an agent reads the first few hits: a gap is closed when the page is among them


def eval_case_make(*, corpus: Corpus, suite: str, name: str, query: str, expected_files: list[str],
                   category: str, note: dict) -> EvalCase:
    """Create (or refresh) the case `name` in `suite`; the suite is created for the corpus when new.

    The case stays answerable and is strict: it passes only when an expected page is among the first
    GAP_CASE_MAX_RANK hits and the search says the docs cover the question, so it fails until the
    content is written (a gap's question always finds some page somewhere in the first ten)."""
    query = (query or "").strip()
    if not query:
        raise InsightsError("this item has no question to ask (no query text was recorded); it cannot become an "
                            "eval case")
    files = _check_pages(corpus, expected_files, "an eval case")
    with transaction.atomic():
        chosen = _suite(corpus, suite)
        position = (chosen.cases.aggregate(m=Max("position"))["m"] or 0) + 1
        case, created = EvalCase.objects.get_or_create(
            suite=chosen, name=name, defaults={"position": position, "category": category, "query": query[:2000],
                                               "expected_files": files, "extra": note, "answerable": True,
                                               "max_rank": GAP_CASE_MAX_RANK, "require_covered": True})
        if not created:
            case.query, case.expected_files, case.expected_chunk_ids, case.extra = query[:2000], files, [], note
            case.answerable, case.max_rank, case.require_covered = True, GAP_CASE_MAX_RANK, True
            case.save(update_fields=["query", "expected_files", "expected_chunk_ids", "extra", "answerable",
                                     "max_rank", "require_covered"])
        EvalSuite.objects.filter(pk=chosen.pk).update(updated_at=timezone.now())
    return case


def gap_eval_case(*, corpus: Corpus, gap: Gap, suite: str, expected_files: list[str]) -> EvalCase:
    case = eval_case_make(corpus=corpus, suite=suite, name=f"gap-{gap.pk}", query=gap.representative,
                          expected_files=expected_files, category="gap", note={"gap": gap.pk})
    gap.eval_case = case
    gap.save(update_fields=["eval_case", "updated_at"])
    return case


def feedback_eval_case(*, corpus: Corpus, item: Feedback, suite: str, expected_files: list[str]) -> EvalCase:
    return eval_case_make(corpus=corpus, suite=suite, name=f"feedback-{item.pk}", query=item.query,
                          expected_files=expected_files or [item.filepath], category="feedback",
                          note={"feedback": item.pk, "verdict": item.verdict})


# --- content fixes ------------------------------------------------------------------------------------


def _propose(*, corpus: Corpus, filepath: str, questions: list[str], feedback: list[str],
             use_llm: bool, heading: str | None = None) -> FixProposal:
    try:
        from corpus.content_fixes import content_fix_propose
    except ImportError:
        raise FixUnavailable("this server has no content fixer (corpus.content_fixes.content_fix_propose); upgrade "
                             "docsmcp, or edit the page by hand") from None
    return content_fix_propose(corpus=corpus, filepath=filepath, questions=questions, feedback=feedback,
                               use_llm=use_llm, heading=heading)


def _page_feedback(corpus: Corpus, filepath: str) -> list[str]:
    rows = (Feedback.objects.filter(corpus=corpus.family.name, filepath=filepath, dismissed_at__isnull=True)
            .exclude(verdict=Feedback.HELPFUL).exclude(comment="").order_by("-at")
            .values_list("verdict", "comment")[:MAX_CONTEXT])
    return [f"{verdict}: {comment}" for verdict, comment in rows]


def gap_fix(*, corpus: Corpus, gap: Gap, filepath: str, use_llm: bool, heading: str | None = None,
            new_page: bool = False) -> FixProposal:
    """A content fix proposal for the page that should answer the group's questions: a section (or with
    `new_page`, a page) outlined for the author to write, or drafted by the LLM."""
    if new_page:
        filepath = filepath.strip().lstrip("/")
        if filepath in served.pages(served.active_index(corpus.name)):
            raise InsightsError(f"{filepath} is already a page of corpus {corpus.name!r}; ask for a section of it")
    else:
        filepath = _check_pages(corpus, [filepath], "a content fix")[0]
    questions = list(dict.fromkeys([gap.representative, *(e["query"] for e in gap.examples or [])]))[:MAX_CONTEXT]
    proposal = _propose(corpus=corpus, filepath=filepath, questions=questions,
                        feedback=[] if new_page else _page_feedback(corpus, filepath), use_llm=use_llm,
                        heading=heading)
    gap.fix_proposal = proposal
    gap.save(update_fields=["fix_proposal", "updated_at"])
    return proposal


def feedback_fix(*, corpus: Corpus, item: Feedback, filepath: str | None, use_llm: bool) -> FixProposal:
    filepath = _check_pages(corpus, [filepath or item.filepath], "a content fix")[0]
    comments = [f"{item.verdict}: {item.comment}" if item.comment else item.verdict]
    others = [c for c in _page_feedback(corpus, filepath) if c not in comments]
    return _propose(corpus=corpus, filepath=filepath, questions=[item.query] if item.query else [],
                    feedback=(comments + others)[:MAX_CONTEXT], use_llm=use_llm)
