"""REST router of the evals app (mounted at /api/v1/ by docsmcp_site.api.assembly).

Each operation parses input, calls one evals service or selector, and formats the answer; errors
are the services' own (`evals.errors`, `corpus.errors`), rendered by common.api.errors.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Field, Path, Query, Router, Schema, Status

from common.api.auth import BUILD, READ, caller
from common.api.pagination import Input, Page, PageParams, paginate
from corpus import selectors as corpus_selectors
from evals import selectors, services
from evals.errors import RunStateConflict
from evals.models import EvalResult, EvalRun, EvalSuite

router = Router(tags=["evals"])

RunMode = Literal[tuple(dict(EvalRun.MODE_CHOICES))]  # type: ignore[valid-type]
RunScope = Literal[tuple(dict(EvalRun.SCOPE_CHOICES))]  # type: ignore[valid-type]
RunStatus = Literal[tuple(dict(EvalRun.STATUS_CHOICES))]  # type: ignore[valid-type]
RunId = Path(..., ge=1, le=2**63 - 1, description="The run's id.")
OtherId = Path(..., ge=1, le=2**63 - 1, description="The id of the run compared against (the reference).")
SLUG = r"^[-a-zA-Z0-9_]+$"


class RunIn(Input):
    corpus: str = Field(..., min_length=1, max_length=100, description="The corpus to evaluate (name or alias).")
    suite: str = Field(..., min_length=1, max_length=100, pattern=SLUG, description="The eval suite to run, one "
                       "of the corpus's own (a corpus's versions share its suites).")
    mode: RunMode = Field(EvalRun.MODE_IN_PROCESS, description="in-process: the corpus's active build through "
                          "the docs profile tools; http: any MCP server at `url`.")
    url: str | None = Field(None, max_length=1000, description="The MCP server's URL (mode http).")
    baseline: int | None = Field(None, ge=1, le=2**63 - 1, description="A complete run to compare against.")
    scope: RunScope = Field(EvalRun.SCOPE_CORPUS, description="corpus: search `corpus` only; all: ask /mcp/ without "
                            "a corpus argument (a search across every corpus) and measure corpus resolution with "
                            "list_corpora; named: ask /mcp/ with each case's own corpus. all and named need a "
                            "`corpus` on every case of the suite, and `corpus` is then the default corpus.")


class RunListParams(Input):
    corpus: str | None = Field(None, max_length=100, description="Only runs on this corpus.")
    suite: str | None = Field(None, max_length=100, pattern=SLUG, description="Only runs of this suite: the "
                              "corpus's suite of that name with `corpus`, else every readable corpus's.")
    status: RunStatus | None = Field(None, description="Only runs in this status.")


class ProgressOut(Schema):
    done: int
    total: int
    percent: int


class RunOut(Schema):
    id: int
    suite: str
    corpus: str
    build_id: str
    mode: str
    target_url: str
    scope: str = Field(description="corpus, all (across corpora) or named (each case's corpus).")
    match_mode: str
    max_rounds: int
    status: str
    progress: ProgressOut
    metrics: dict[str, Any]
    latency: dict[str, Any]
    build_seconds: float | None
    index_bytes: int | None
    baseline: int | None
    delta: dict[str, Any] = Field(description="Against the baseline: per metric and per case.")
    embedding_note: str = Field(description="Set when the baseline measured a build with other embeddings.")
    error: str
    requested_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    url: str
    results_url: str


class ResultOut(Schema):
    case: str
    category: str
    query: str
    passed: bool
    zero_result: bool = Field(description="The case is not answerable (the old name: it expects no hits).")
    answerable: bool = Field(description="False: the docs do not answer it, and it passes when the search says so.")
    coverage: str | None = Field(description="The first search's coverage verdict: covered, partial, not_covered "
                                             "(null: the target gave none).")
    coverage_score: float | None
    why: str = Field(description="Why a case that found its page still failed (its verdict, or its rank limit).")
    score: float
    rank: int | None
    chunk_rank: int | None
    file_rank: int | None
    rounds: int | None
    calls: int
    hit_count: int
    top_hits: list[Any]
    search_ms: float | None
    get_doc_ms: float | None
    metrics: dict[str, Any]
    error: str


class CaseDeltaOut(Schema):
    name: str
    status: str = Field(description="worse, better, same, new or removed (this run against the other).")
    category: str
    query: str
    rank: int | None
    other_rank: int | None
    score: float | None
    other_score: float | None
    delta: float | None
    passed: bool | None
    other_passed: bool | None


class CompareOut(Schema):
    run: int
    other: int
    metrics: dict[str, Any] = Field(description="This run's metrics minus the other's, overall and by category.")
    latency: dict[str, Any]
    counts: dict[str, int]
    embedding_note: str = Field(description="Set when the two runs measured builds with different embeddings.")
    cases: list[CaseDeltaOut] = Field(description="One row per case, worse first.")


class SuiteListParams(Input):
    corpus: str | None = Field(None, max_length=100, description="Only this corpus's suites.")


class SuiteOut(Schema):
    name: str = Field(description="Unique within its corpus; two corpora may each have a suite of one name.")
    corpus: str
    description: str
    match_mode: str
    case_count: int
    updated_at: datetime


def run_url(run: EvalRun) -> str:
    return reverse("api:eval_run", kwargs={"run_id": run.pk})


def run_out(run: EvalRun) -> dict:
    return {
        "id": run.pk, "suite": run.suite.name, "corpus": run.corpus.name, "build_id": run.build_label,
        "mode": run.mode, "target_url": run.target_url, "scope": run.scope, "match_mode": run.match_mode, "max_rounds": run.max_rounds,
        "status": run.status,
        "progress": {"done": run.progress_done, "total": run.progress_total, "percent": run.progress_percent},
        "metrics": run.metrics or {}, "latency": run.latency or {}, "build_seconds": run.build_seconds,
        "index_bytes": run.index_bytes, "baseline": run.baseline_id, "delta": run.delta or {},
        "embedding_note": selectors.embedding_note(run, run.baseline),
        "error": run.error, "requested_by": run.requested_by, "created_at": run.created_at,
        "started_at": run.started_at, "finished_at": run.finished_at, "url": run_url(run),
        "results_url": reverse("api:eval_results", kwargs={"run_id": run.pk}),
    }


def result_out(result: EvalResult) -> dict:
    return {
        "case": result.case_name, "category": result.category, "query": result.query, "passed": result.passed,
        "zero_result": result.zero_result, "answerable": not result.zero_result, "score": result.score,
        "rank": result.rank, "coverage": result.coverage or None, "coverage_score": result.coverage_score,
        "why": result.why,
        "chunk_rank": result.chunk_rank, "file_rank": result.file_rank, "rounds": result.rounds,
        "calls": result.calls, "hit_count": result.hit_count, "top_hits": result.top_hits or [],
        "search_ms": result.search_ms, "get_doc_ms": result.get_doc_ms, "metrics": result.metrics or {},
        "error": result.error,
    }


def suite_out(suite: EvalSuite) -> dict:
    return {"name": suite.name, "corpus": suite.corpus.name,
            "description": suite.description, "match_mode": suite.match_mode, "case_count": suite.case_count,
            "updated_at": suite.updated_at}


@router.post("/evals/runs", response={202: RunOut}, auth=BUILD)
def start_run(request: HttpRequest, response: HttpResponse, payload: RunIn):
    """Queue an eval run of a suite against a corpus; poll the returned `url` for progress and metrics."""
    corpus = corpus_selectors.corpus_get(payload.corpus)
    suite = selectors.suite_get(payload.suite, corpus=corpus)
    baseline = selectors.run_get(payload.baseline) if payload.baseline is not None else None
    run = services.eval_start(corpus=corpus, suite=suite, mode=payload.mode, url=payload.url, baseline=baseline,
                              requested_by=caller(request), scope=payload.scope)
    run.refresh_from_db()  # a worker may already have picked it up
    response["Location"] = run_url(run)
    return Status(202, run_out(run))


@router.get("/evals/runs", response=Page[RunOut], auth=READ, url_name="eval_runs")
def list_runs(request: HttpRequest, filters: Query[RunListParams], page: Query[PageParams]):
    """Eval runs, newest first."""
    corpus = corpus_selectors.corpus_get(filters.corpus) if filters.corpus else None
    suites = None
    if filters.suite:
        suites = ([selectors.suite_get(filters.suite, corpus=corpus)] if corpus is not None
                  else selectors.suites_named(filters.suite))
    return paginate(selectors.run_list(corpus=corpus, suites=suites, status=filters.status), page, run_out)


@router.get("/evals/runs/{int:run_id}", response=RunOut, auth=READ, url_name="eval_run")
def get_run(request: HttpRequest, run_id: int = RunId):
    """Status, progress, metrics and latency of a run."""
    return run_out(selectors.run_get(run_id))


@router.get("/evals/runs/{int:run_id}/results", response=Page[ResultOut], auth=READ, url_name="eval_results")
def list_results(request: HttpRequest, page: Query[PageParams], run_id: int = RunId):
    """A run's per-case results: failures first, then worst score first."""
    return paginate(selectors.run_results(selectors.run_get(run_id)), page, result_out)


@router.get("/evals/runs/{int:run_id}/compare/{int:other_id}", response=CompareOut, auth=READ)
def compare_runs(request: HttpRequest, run_id: int = RunId, other_id: int = OtherId):
    """Per-metric and per-case deltas of run `run_id` against run `other_id`; both must be complete (409)."""
    run, other = selectors.run_get(run_id), selectors.run_get(other_id)
    for r in (run, other):
        if r.status != EvalRun.COMPLETE:
            raise RunStateConflict(f"run {r.pk} is {r.status}; only complete runs can be compared")
    diff = selectors.compare_runs(run, other)
    return {"run": run.pk, "other": other.pk, "metrics": diff["metrics"], "latency": diff["latency"],
            "counts": diff["counts"], "embedding_note": diff["embedding_note"], "cases": diff["rows"]}


@router.get("/evals/suites", response=Page[SuiteOut], auth=READ, url_name="eval_suites")
def list_suites(request: HttpRequest, filters: Query[SuiteListParams], page: Query[PageParams]):
    """Eval suites of the corpora the caller may read, by name, with their corpus and number of cases."""
    corpus = corpus_selectors.corpus_get(filters.corpus) if filters.corpus else None
    return paginate(selectors.suite_list(corpus=corpus), page, suite_out)
