"""REST router of the insights app (mounted at /api/v1/ by docsmcp_site.api.assembly).

Every operation needs the `admin` scope (or a staff session): query texts and feedback comments
are what agents' users typed, so they are as sensitive as the API keys' owners decide, and reading
them is not the `read` scope's business (docs/api.md, docs/security.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Field, Path, Query, Router, Schema, Status

from common.api.pagination import Input, Page, PageParams, paginate
from corpus import selectors as corpus_selectors
from corpus.api.auth import ADMIN, caller
from corpus.api.fixes import FixOut, fix_out
from corpus.models import Feedback, QueryRecord
from evals.models import EvalCase

from . import selectors, services
from .feedback_reads import feedback_get, feedback_list
from .gaps import GapView, gap_list
from .models import Gap

router = Router(tags=["insights"])

GapId = Path(..., ge=1, le=2**63 - 1, description="The gap group's id.")
FeedbackId = Path(..., ge=1, le=2**63 - 1, description="The feedback item's id.")
Verdict = Literal[Feedback.VERDICTS]  # type: ignore[valid-type]
GapStatus = Literal["open", "dismissed", "closed", "all"]
GapVerdict = Literal["not_covered", "partial"]
Coverage = Literal["covered", "partial", "not_covered", "none"]


class QueryListParams(Input):
    zero_hits: bool | None = Field(None, description="true: only searches that found nothing; false: the others.")
    coverage: Coverage | None = Field(None, description="Only searches with this coverage verdict; none: searches "
                                                        "logged before verdicts.")
    tool: str | None = Field(None, max_length=64, description="Only calls of this tool, e.g. search_docs.")
    since: datetime | None = Field(None, description="Only calls at or after this time (ISO 8601).")
    include_eval: bool = Field(False, description="Include eval runs' calls (left out by default).")


class FeedbackListParams(Input):
    verdict: Verdict | None = Field(None, description="Only feedback with this verdict.")
    since: datetime | None = Field(None, description="Only feedback at or after this time (ISO 8601).")
    include_dismissed: bool = Field(False, description="Include dismissed items.")


class GapListParams(Input):
    days: int = Field(30, ge=1, le=selectors.MAX_DAYS, description="The period, in days up to now.")
    status: GapStatus = Field("open", description="open (default), dismissed, closed, or all.")
    verdict: GapVerdict | None = Field(None, description="Only groups the docs do not cover (not_covered) or cover "
                                                         "in part (partial); default both.")
    include_eval: bool = Field(False, description="Count eval runs' calls too.")


class EvalCaseIn(Input):
    suite: str = Field(..., min_length=1, max_length=100, pattern=r"^[-a-zA-Z0-9_]+$",
                       description="The corpus's eval suite to add the case to (created when new; suite names "
                                   "are per corpus).")
    expected_files: list[str] = Field(..., min_length=1, max_length=services.MAX_EXPECTED,
                                      description="Pages (file paths, as search hits give them) that should answer.")


class DismissIn(Input):
    reason: str = Field(..., min_length=1, max_length=2000, description="Why it needs no change (recorded).")


class FixIn(Input):
    filepath: str = Field(..., min_length=1, max_length=1000, description="The page that should answer (with "
                          "`new_page`, the path of the page to create).")
    llm: bool = Field(False, description="Draft the section with the LLM fixer (DOCSMCP_FIX_MODEL) instead of an "
                                         "outline for the author to write.")
    heading: str | None = Field(None, min_length=1, max_length=120, description="The section's heading; default: "
                                "named after what the group's questions ask about.")
    new_page: bool = Field(False, description="Outline a new page at `filepath` instead of a section of an "
                                              "existing page.")


class FeedbackFixIn(Input):
    filepath: str | None = Field(None, min_length=1, max_length=1000,
                                 description="The page to change; default: the page the feedback is about.")
    llm: bool = Field(False, description="Draft the section with the LLM fixer instead of an outline for the author "
                                         "to write.")


class FeedbackEvalCaseIn(Input):
    suite: str = Field(..., min_length=1, max_length=100, pattern=r"^[-a-zA-Z0-9_]+$")
    expected_files: list[str] = Field(default_factory=list, max_length=services.MAX_EXPECTED,
                                      description="Default: the page the feedback is about.")


class QueryOut(Schema):
    id: int
    at: datetime
    corpus: str
    version: str
    build_id: str
    profile: str
    tool: str
    surface: str
    query: str
    filters: dict[str, Any]
    target: str
    hits: int
    top: list[Any] = Field(description="The first hits as [id, score] pairs.")
    top_score: float | None
    coverage: str = Field(description="The search's verdict: covered, partial, not_covered; empty for reads and "
                                      "for searches logged before verdicts.")
    coverage_score: float | None
    latency_ms: float
    is_error: bool
    client: str
    key_name: str
    is_eval: bool


class FeedbackOut(Schema):
    id: int
    at: datetime
    corpus: str
    version: str
    build_id: str
    tool: str
    surface: str
    verdict: str
    chunk_id: str
    filepath: str
    query: str
    comment: str
    client: str
    key_name: str
    dismissed_at: datetime | None
    dismissed_reason: str


class ExampleOut(Schema):
    query: str
    count: int


class GapOut(Schema):
    id: int
    corpus: str
    representative: str = Field(description="The group's most asked question.")
    method: str = Field(description='"text", or "embedding:<provider>/<model>".')
    count: int = Field(description="Unanswered searches in the period.")
    verdict: str = Field(description="not_covered, or partial when every unanswered search of the group was judged "
                                     "partly covered.")
    not_covered: int = Field(description="Searches judged not_covered.")
    partial: int = Field(description="Searches judged partial.")
    unjudged: int = Field(description="Searches logged before verdicts, counted by the zero-hit/low-score rule.")
    missing_reports: int = Field(description='docs_feedback reports with verdict "missing" about its questions.')
    callers: int = Field(description="Distinct callers: API keys, tokens, anonymous clients.")
    signal: float = Field(description="What ranks the groups: each caller's one vote (two for a key or token) "
                                      "split over the questions it asked.")
    distinct_queries: int
    examples: list[ExampleOut]
    first_seen: datetime | None
    last_seen: datetime | None
    status: str
    status_at: datetime | None
    dismissed_reason: str
    eval_case: str | None = Field(description="suite:case made from it, if any.")
    fix_proposal: int | None
    fix_status: str | None
    closed_by: str = Field(description="The build that closed it (served its applied fix), if closed.")


class EvalCaseOut(Schema):
    suite: str
    name: str
    query: str
    expected_files: list[str]
    category: str
    suite_url: str


def query_out(r: QueryRecord) -> dict:
    return {f: getattr(r, f) for f in QueryOut.model_fields if f != "id"} | {"id": r.pk}


def feedback_out(f: Feedback) -> dict:
    return {k: getattr(f, k) for k in FeedbackOut.model_fields if k != "id"} | {"id": f.pk}


def gap_out(view: GapView) -> dict:
    gap = view.gap
    return {"id": gap.pk, "corpus": gap.corpus, "representative": gap.representative, "method": gap.method,
            "count": view.count, "distinct_queries": view.distinct, "examples": view.examples,
            "verdict": view.verdict, "not_covered": view.not_covered, "partial": view.partial,
            "unjudged": view.unjudged, "missing_reports": view.missing, "callers": view.callers,
            "signal": view.signal, "closed_by": gap.closed_by,
            "first_seen": view.first_seen, "last_seen": view.last_seen, "status": gap.status,
            "status_at": gap.status_at, "dismissed_reason": gap.dismissed_reason,
            "eval_case": str(gap.eval_case) if gap.eval_case_id else None, "fix_proposal": gap.fix_proposal_id,
            "fix_status": gap.fix_proposal.status if gap.fix_proposal_id else None}


def stored_gap_out(gap: Gap) -> dict:
    return gap_out(GapView(gap=gap, count=gap.count, distinct=gap.distinct_queries, examples=gap.examples or [],
                           first_seen=gap.first_seen, last_seen=gap.last_seen, missing=gap.missing_reports,
                           callers=gap.callers, not_covered=gap.count if gap.verdict == "not_covered" else 0,
                           partial=gap.count if gap.verdict == "partial" else 0))


def case_out(case: EvalCase) -> dict:
    return {"suite": case.suite.name, "name": case.name, "query": case.query, "expected_files": case.expected_files,
            "category": case.category,
            "suite_url": reverse("api:eval_suites") + "?" + urlencode({"corpus": case.suite.corpus.name})}


@router.get("/corpora/{name}/queries", response=Page[QueryOut], auth=ADMIN, url_name="insight_queries")
def list_queries(request: HttpRequest, name: str, filters: Query[QueryListParams], page: Query[PageParams]):
    """Agents' logged calls to the corpus (searches and reads), newest first. Eval runs' calls are left out
    unless `include_eval`."""
    corpus = corpus_selectors.corpus_get(name)
    return paginate(selectors.query_list(corpus=corpus, since=filters.since, zero_hits=filters.zero_hits,
                                         tool=filters.tool, include_eval=filters.include_eval,
                                         coverage=filters.coverage), page, query_out)


@router.get("/corpora/{name}/feedback", response=Page[FeedbackOut], auth=ADMIN, url_name="insight_feedback")
def list_feedback(request: HttpRequest, name: str, filters: Query[FeedbackListParams], page: Query[PageParams]):
    """Agents' reports on answers (docs_feedback and its equivalents), newest first; dismissed ones left out."""
    corpus = corpus_selectors.corpus_get(name)
    return paginate(feedback_list(corpus=corpus, since=filters.since, verdict=filters.verdict,
                                            include_dismissed=filters.include_dismissed), page, feedback_out)


@router.get("/corpora/{name}/gaps", response=Page[GapOut], auth=ADMIN, url_name="insight_gaps")
def list_gaps(request: HttpRequest, response: HttpResponse, name: str, filters: Query[GapListParams],
              page: Query[PageParams]):
    """The questions of the period the docs do not answer (searches judged not_covered or partial, older
    searches without a verdict by the zero-hit/low-score rule, docs_feedback "missing" reports), grouped by
    meaning, strongest signal first (distinct callers; keys and tokens over anonymous clients; asked again over
    asked once). A group keeps its id as new questions join it. Grouping runs in a worker: questions asked
    since the last run appear once it has grouped them (the `X-Docsmcp-Gaps-Pending` header counts them)."""
    corpus = corpus_selectors.corpus_get(name)
    period = selectors.period_for(corpus, days=filters.days, include_eval=filters.include_eval)
    statuses = tuple(s for s, _ in Gap.STATUS_CHOICES) if filters.status == "all" else (filters.status,)
    found = gap_list(corpus=corpus, period=period, statuses=statuses, verdict=filters.verdict)
    response["X-Docsmcp-Gaps-Pending"] = str(found.pending)
    return paginate(found.groups, page, gap_out)


@router.post("/corpora/{name}/gaps/{int:gap_id}/eval-case", response={201: EvalCaseOut}, auth=ADMIN)
def gap_eval_case(request: HttpRequest, name: str, payload: EvalCaseIn, gap_id: int = GapId):
    """Make the group's question an eval case of `suite` expecting `expected_files`: every later run of the
    suite tells whether the gap stays closed."""
    corpus = corpus_selectors.corpus_get(name)
    gap = services.gap_get(corpus=corpus, gap_id=gap_id)
    case = services.gap_eval_case(corpus=corpus, gap=gap, suite=payload.suite, expected_files=payload.expected_files)
    return Status(201, case_out(case))


@router.post("/corpora/{name}/gaps/{int:gap_id}/dismiss", response=GapOut, auth=ADMIN)
def gap_dismiss(request: HttpRequest, name: str, payload: DismissIn, gap_id: int = GapId):
    """Hide the group, with a reason, until new queries of it arrive."""
    gap = services.gap_get(corpus=corpus_selectors.corpus_get(name), gap_id=gap_id)
    return stored_gap_out(services.gap_dismiss(gap=gap, reason=payload.reason, by=caller(request)))


@router.post("/corpora/{name}/gaps/{int:gap_id}/fix", response={201: FixOut}, auth=ADMIN)
def gap_fix(request: HttpRequest, name: str, payload: FixIn, gap_id: int = GapId):
    """Ask for a content fix proposal of `filepath` answering the group's questions; review and approve it like
    any fix (`/corpora/{name}/fixes/{id}`)."""
    corpus = corpus_selectors.corpus_get(name)
    gap = services.gap_get(corpus=corpus, gap_id=gap_id)
    return Status(201, fix_out(services.gap_fix(corpus=corpus, gap=gap, filepath=payload.filepath,
                                                use_llm=payload.llm, heading=payload.heading,
                                                new_page=payload.new_page)))


@router.post("/corpora/{name}/feedback/{int:feedback_id}/eval-case", response={201: EvalCaseOut}, auth=ADMIN)
def feedback_eval_case(request: HttpRequest, name: str, payload: FeedbackEvalCaseIn,
                       feedback_id: int = FeedbackId):
    """Make the feedback's question an eval case (expected: `expected_files`, default the page it is about)."""
    corpus = corpus_selectors.corpus_get(name)
    item = feedback_get(corpus=corpus, feedback_id=feedback_id)
    case = services.feedback_eval_case(corpus=corpus, item=item, suite=payload.suite,
                                       expected_files=payload.expected_files)
    return Status(201, case_out(case))


@router.post("/corpora/{name}/feedback/{int:feedback_id}/dismiss", response=FeedbackOut, auth=ADMIN)
def feedback_dismiss(request: HttpRequest, name: str, payload: DismissIn, feedback_id: int = FeedbackId):
    """Hide the feedback item, with a reason."""
    item = feedback_get(corpus=corpus_selectors.corpus_get(name), feedback_id=feedback_id)
    return feedback_out(services.feedback_dismiss(item=item, reason=payload.reason))


@router.post("/corpora/{name}/feedback/{int:feedback_id}/fix", response={201: FixOut}, auth=ADMIN)
def feedback_fix(request: HttpRequest, name: str, payload: FeedbackFixIn, feedback_id: int = FeedbackId):
    """Ask for a content fix proposal of the page, with the feedback (and the page's other feedback) as context."""
    corpus = corpus_selectors.corpus_get(name)
    item = feedback_get(corpus=corpus, feedback_id=feedback_id)
    proposal = services.feedback_fix(corpus=corpus, item=item, filepath=payload.filepath, use_llm=payload.llm)
    return Status(201, fix_out(proposal))
