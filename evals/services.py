"""Writes of the evals app: import suites, request and execute runs.

The management command, the Celery task, the admin action (and the REST API, later) are thin
callers of these functions. A run's per-case results are written in the same transaction that
marks it complete; a run that is interrupted or crashes is marked failed with nothing half-saved.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from corpus.models import Corpus
from mcp_endpoint.profiles import UnknownCorpus
from retrieval.errors import RetrievalError

from . import compare, runner
from .cases import CaseFormatError, CaseSpec, parse_cases, read_cases
from .errors import EvalError, RunStateConflict
from .metrics import MATCH_MODES
from .models import EvalCase, EvalResult, EvalRun, EvalSuite
from .targets import HttpTarget, InProcessTarget, Target, TargetError

log = logging.getLogger("docsmcp.evals")
Progress = Callable[[int, int], None]
MAX_ROUNDS_LIMIT = 10
SCORE_DIGITS = 6  # per-case scores are stored, and compared, at this precision
MODES = tuple(dict(EvalRun.MODE_CHOICES))


# --- suites ------------------------------------------------------------------------------------


def suite_import(*, name: str, path: str | Path | None = None, text: str | None = None,
                 corpus: Corpus | None = None, description: str | None = None, match_mode: str | None = None,
                 prune: bool = True) -> EvalSuite:
    """Create or refresh a suite from a case file (either spelling). Cases are matched by name:
    changed ones are updated in place, new ones added, and (with `prune`) missing ones deleted.
    Old runs keep their results either way."""
    if (path is None) == (text is None):
        raise EvalError("give exactly one of path or text")
    if match_mode is not None and match_mode not in MATCH_MODES:
        raise EvalError(f"unknown match mode {match_mode!r}; use one of {', '.join(MATCH_MODES)}")
    try:
        specs = read_cases(path) if path is not None else parse_cases(text or "", "<upload>")
    except CaseFormatError as exc:
        raise EvalError(str(exc)) from None
    if not specs:
        raise EvalError(f"{path or 'the upload'} has no cases")
    with transaction.atomic():
        suite, _created = EvalSuite.objects.select_for_update().get_or_create(name=name)
        if corpus is not None:
            suite.corpus = corpus
        if description is not None:
            suite.description = description
        if match_mode is not None:
            suite.match_mode = match_mode
        if path is not None:
            suite.source_file = str(path)
        suite.save()
        _sync_cases(suite, specs, prune=prune)
    return suite


def _sync_cases(suite: EvalSuite, specs: list[CaseSpec], *, prune: bool) -> None:
    existing = {c.name: c for c in suite.cases.all()}
    fields = ["position", "category", "query", "filters", "expected_chunk_ids", "expected_files", "extra"]
    create, update = [], []
    for position, spec in enumerate(specs):
        values = {"position": position, "category": spec.category, "query": spec.query, "filters": spec.filters,
                  "expected_chunk_ids": spec.expected_chunk_ids, "expected_files": spec.expected_files,
                  "extra": spec.extra}
        case = existing.pop(spec.name, None)
        if case is None:
            create.append(EvalCase(suite=suite, name=spec.name, **values))
        elif any(getattr(case, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(case, k, v)
            update.append(case)
    EvalCase.objects.bulk_create(create, batch_size=500)
    if update:
        EvalCase.objects.bulk_update(update, fields, batch_size=500)
    if prune and existing:
        EvalCase.objects.filter(pk__in=[c.pk for c in existing.values()]).delete()


# --- runs --------------------------------------------------------------------------------------


def _dir_bytes(path: str) -> int | None:
    if not path or not os.path.isdir(path):
        return None
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                continue
    return total


def eval_request(*, corpus: Corpus, suite: EvalSuite, mode: str = EvalRun.MODE_IN_PROCESS, url: str | None = None,
                 baseline: EvalRun | None = None, max_rounds: int = 3, match: str | None = None,
                 extra_filters: dict | None = None, requested_by: str = "") -> EvalRun:
    """Check the request and record a queued run tied to the corpus's active build."""
    if mode not in MODES:
        raise EvalError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if mode == EvalRun.MODE_HTTP and not (url or "").startswith(("http://", "https://")):
        raise EvalError("an HTTP run needs the MCP server's URL, e.g. http://127.0.0.1:8001/mcp/")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or not 1 <= max_rounds <= MAX_ROUNDS_LIMIT:
        raise EvalError(f"max_rounds must be a whole number from 1 to {MAX_ROUNDS_LIMIT}, not {max_rounds!r}")
    match = match or suite.match_mode
    if match not in MATCH_MODES:
        raise EvalError(f"unknown match mode {match!r}; use one of {', '.join(MATCH_MODES)}")
    if baseline is not None and baseline.status != EvalRun.COMPLETE:
        raise RunStateConflict(f"baseline run {baseline.pk} is {baseline.status}; only a complete run can be a "
                               "baseline")
    if not suite.cases.exists():
        raise EvalError(f"suite {suite.name!r} has no cases; import some with --cases FILE")
    runs_fail_stale()
    build = corpus.active_build
    if build is None and mode == EvalRun.MODE_IN_PROCESS:
        raise EvalError(f"corpus {corpus.name!r} has no active build to evaluate; run "
                        f"`manage.py build_index --corpus {corpus.name}` first")
    return EvalRun.objects.create(
        suite=suite, corpus=corpus, build=build, build_label=build.build_id if build else "", mode=mode,
        target_url=url or "", match_mode=match, max_rounds=max_rounds, extra_filters=extra_filters or {},
        baseline=baseline, requested_by=requested_by,
        build_seconds=(build.timings or {}).get("total") if build else None,
        index_bytes=_dir_bytes(build.index_path) if build else None,
        progress_total=suite.cases.count(),
    )


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
        return HttpTarget(run.target_url, headers=headers)
    return InProcessTarget(run.corpus.name)


def _result_row(run: EvalRun, case: EvalCase, o: runner.CaseOutcome) -> EvalResult:
    return EvalResult(
        run=run, case=case, case_name=o.name, category=o.category, query=o.query, passed=o.passed,
        zero_result=o.zero_result, score=round(o.score, SCORE_DIGITS),
        chunk_rank=o.chunk_rank, file_rank=o.file_rank, rounds=o.rounds, file_rounds=o.file_rounds, calls=o.calls,
        hit_count=o.hit_count, top_hits=o.top_hits,
        search_ms=round(o.search_ms[0], 3) if o.search_ms else None,
        search_ms_total=round(sum(o.search_ms), 3) if o.search_ms else None,
        get_doc_ms=round(o.get_doc_ms, 3) if o.get_doc_ms is not None else None,
        metrics=o.metrics, error=o.error,
    )


def _baseline_delta(run: EvalRun, outcomes: list[runner.CaseOutcome]) -> dict:
    from .selectors import case_scores

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
                                        extra_filters=run.extra_filters, progress=writer)
        active = Corpus.objects.filter(pk=run.corpus_id).values_list("active_build_id", flat=True).first()
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
    except (TargetError, RetrievalError, UnknownCorpus) as exc:  # the target cannot serve this run
        _fail(run, f"{target.label if target else run.target_url or run.corpus.name}: {exc}")
    except BaseException as exc:  # Ctrl-C, SIGTERM as SystemExit, crashes: failed, never half-complete
        _fail(run, f"{type(exc).__name__}: {exc}" if str(exc) else f"interrupted ({type(exc).__name__})")
        if isinstance(exc, Exception):
            log.exception("eval run %s failed", run.pk)
        raise
    return run


def eval_run(*, corpus: Corpus, suite: EvalSuite, mode: str = EvalRun.MODE_IN_PROCESS, url: str | None = None,
             baseline: EvalRun | None = None, max_rounds: int = 3, progress: Progress | None = None,
             match: str | None = None, extra_filters: dict | None = None, headers: dict[str, str] | None = None,
             requested_by: str = "") -> EvalRun:
    """Request and execute a run in the calling process (the command, the Celery task, tests)."""
    run = eval_request(corpus=corpus, suite=suite, mode=mode, url=url, baseline=baseline, max_rounds=max_rounds,
                       match=match, extra_filters=extra_filters, requested_by=requested_by)
    return eval_execute(run=run, progress=progress, headers=headers)


def eval_start(*, corpus: Corpus, suite: EvalSuite, mode: str = EvalRun.MODE_IN_PROCESS, url: str | None = None,
               baseline: EvalRun | None = None, max_rounds: int = 3, requested_by: str = "") -> EvalRun:
    """Queue a run for a Celery worker (inline when no broker is configured)."""
    from .tasks import run_eval

    run = eval_request(corpus=corpus, suite=suite, mode=mode, url=url, baseline=baseline, max_rounds=max_rounds,
                       requested_by=requested_by)
    transaction.on_commit(lambda: run_eval.delay(run.pk))
    return run


def runs_fail_stale(*, quiet_minutes: int = 15, queued_hours: int = 24) -> int:
    """A worker killed mid-run (SIGKILL, OOM) leaves a 'running' row that no longer reports progress,
    and a lost task a 'queued' row; mark them failed. Called before each new run is requested."""
    now = timezone.now()
    stale_running = EvalRun.objects.filter(status=EvalRun.RUNNING).filter(
        Q(heartbeat_at__lt=now - timedelta(minutes=quiet_minutes))
        | Q(heartbeat_at__isnull=True, created_at__lt=now - timedelta(minutes=quiet_minutes)))
    stale_queued = EvalRun.objects.filter(status=EvalRun.QUEUED, created_at__lt=now - timedelta(hours=queued_hours))
    return sum(qs.update(status=EvalRun.FAILED, finished_at=now,
                         error="the worker stopped before the run finished; marked failed")
               for qs in (stale_running, stale_queued))
