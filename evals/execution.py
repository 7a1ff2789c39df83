"""The worker's side of an eval run: run a queued run to the end and store every result.

`evals.services` checks and queues runs; the Celery task, the command and `eval_run` call
`eval_execute` here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from corpus import querylog
from corpus.errors import CorpusError
from corpus.selectors import active_build_pk
from mcp_endpoint.profiles import UnknownCorpus
from retrieval.errors import RetrievalError

from . import compare, runner
from .allowed_urls import check_eval_url, is_own_endpoint
from .errors import EvalError
from .models import EvalCase, EvalResult, EvalRun
from .selectors import case_scores
from .targets import HttpTarget, InProcessTarget, Target, TargetError

log = logging.getLogger("docsmcp.evals")
Progress = Callable[[int, int], None]
SCORE_DIGITS = 6  # per-case scores are stored, and compared, at this precision


class _ProgressWriter:
    """Saves progress on the run at most twice a second, and echoes every step to the caller."""

    def __init__(self, run: EvalRun, echo: Progress | None):
        self.run, self.echo, self.last = run, echo, 0.0

    def __call__(self, done: int, total: int) -> None:
        if self.echo:
            self.echo(done, total)
        now = time.monotonic()
        if now - self.last < 0.5 and done < total:
            return
        self.last = now
        EvalRun.objects.filter(pk=self.run.pk).update(progress_done=done, progress_total=total,
                                                      heartbeat_at=timezone.now())


def make_target(run: EvalRun, headers: dict[str, str] | None = None) -> Target:
    if run.mode == EvalRun.MODE_HTTP:
        check_eval_url(run.target_url)  # again at run time: the settings may have changed since the request
        # This server's own endpoints leave the run's calls out of the query-log analytics; another
        # server only learns that the calls are an eval run's, never a secret.
        mark = querylog.eval_token() if is_own_endpoint(run.target_url) else "1"
        return HttpTarget(run.target_url, headers={querylog.EVAL_HEADER: mark, **(headers or {})})
    # A run across corpora asks /mcp/ itself (no corpus in the URL), as an agent of several corpora does.
    return InProcessTarget(run.corpus.name if run.scope == EvalRun.SCOPE_CORPUS else None)


def _result_row(run: EvalRun, case: EvalCase, o: runner.CaseOutcome) -> EvalResult:
    return EvalResult(
        run=run, case=case, case_name=o.name, category=o.category, query=o.query, passed=o.passed,
        zero_result=o.zero_result, score=round(o.score, SCORE_DIGITS),
        chunk_rank=o.chunk_rank, file_rank=o.file_rank, rounds=o.rounds, file_rounds=o.file_rounds, calls=o.calls,
        hit_count=o.hit_count, top_hits=o.top_hits,
        search_ms=round(o.search_ms[0], 3) if o.search_ms else None,
        search_ms_total=round(sum(o.search_ms), 3) if o.search_ms else None,
        get_doc_ms=round(o.get_doc_ms, 3) if o.get_doc_ms is not None else None,
        metrics=o.metrics, error=o.error, coverage=o.coverage, coverage_score=o.coverage_score, why=o.why[:300],
    )


def _baseline_delta(run: EvalRun, outcomes: list[runner.CaseOutcome]) -> dict:
    baseline = run.baseline
    return compare.run_delta(
        baseline_id=baseline.pk, before_metrics=baseline.metrics, after_metrics=run.metrics,
        before_latency=baseline.latency, after_latency=run.latency,
        before_scores=case_scores(baseline), after_scores={o.name: round(o.score, SCORE_DIGITS) for o in outcomes})


def _fail(run: EvalRun, message: str) -> None:
    run.status, run.error, run.finished_at = EvalRun.FAILED, message[:5000], timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])


def eval_execute(*, run: EvalRun, progress: Progress | None = None, headers: dict[str, str] | None = None,
                 target: Target | None = None) -> EvalRun:
    """Run a queued run to the end. Never leaves it 'running': complete with every result, or failed.

    A target that cannot be reached (or offers no search tool) fails the run and returns it;
    any other exception, Ctrl-C included, fails the run and propagates.
    """
    cases = list(run.suite.cases.order_by("position", "pk"))
    run.status, run.progress_done, run.progress_total = EvalRun.RUNNING, 0, len(cases)
    run.started_at = run.heartbeat_at = timezone.now()
    run.save(update_fields=["status", "started_at", "heartbeat_at", "progress_done", "progress_total"])
    writer = _ProgressWriter(run, progress)
    try:
        target = target or make_target(run, headers)
        with target:
            outcomes = runner.run_cases(target, cases, match=run.match_mode, max_rounds=run.max_rounds,
                                        extra_filters=run.extra_filters, progress=writer, scope=run.scope)
        active = active_build_pk(run.corpus_id)
        if run.mode == EvalRun.MODE_IN_PROCESS and active != run.build_id:
            run.error = (f"warning: the corpus's active build changed during the run (was {run.build_label}); "
                         "later cases may have been answered by the new build")
        with transaction.atomic():
            EvalResult.objects.bulk_create([_result_row(run, c, o) for c, o in zip(cases, outcomes, strict=True)],
                                           batch_size=500)
            run.metrics = runner.summarize(outcomes)
            run.latency = runner.latency(outcomes)
            if run.baseline_id:
                run.delta = _baseline_delta(run, outcomes)
            run.status, run.finished_at, run.progress_done = EvalRun.COMPLETE, timezone.now(), len(cases)
            run.save()
    except (TargetError, RetrievalError, CorpusError, UnknownCorpus, EvalError) as exc:  # the target cannot serve this run
        _fail(run, f"{target.label if target else run.target_url or run.corpus.name}: {exc}")
    except BaseException as exc:  # Ctrl-C, SIGTERM as SystemExit, crashes: failed, never half-complete
        _fail(run, f"{type(exc).__name__}: {exc}" if str(exc) else f"interrupted ({type(exc).__name__})")
        if isinstance(exc, Exception):
            log.exception("eval run %s failed", run.pk)
        raise
    return run
