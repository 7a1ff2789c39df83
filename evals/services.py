"""Writes of the evals app: import suites, request and execute runs.

The management command, the Celery task, the admin action (and the REST API, later) are thin
callers of these functions. A run's per-case results are written in the same transaction that
marks it complete; a run that is interrupted or crashes is marked failed with nothing half-saved.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from corpus.access import limited
from corpus.errors import TaskQueueUnavailable
from corpus.models import Corpus
from corpus.queue import enqueue
from retrieval import storage

from .allowed_urls import check_eval_url
from .cases import CaseFormatError, CaseSpec, parse_cases, read_cases
from .errors import EvalError, RunStateConflict
from .execution import Progress, eval_execute
from .metrics import MATCH_MODES
from .models import EvalCase, EvalRun, EvalSuite

log = logging.getLogger("docsmcp.evals")
MAX_ROUNDS_LIMIT = 10
MODES = tuple(dict(EvalRun.MODE_CHOICES))
SCOPES = tuple(dict(EvalRun.SCOPE_CHOICES))


# --- suites ------------------------------------------------------------------------------------


def suite_import(*, name: str, corpus: Corpus, path: str | Path | None = None, text: str | None = None,
                 description: str | None = None, match_mode: str | None = None, prune: bool = True) -> EvalSuite:
    """Create or refresh the suite `name` of `corpus` (of the corpus it is a version of) from a case file
    (either spelling). Cases are matched by name: changed ones are updated in place, new ones added, and
    (with `prune`) missing ones deleted. Old runs keep their results either way."""
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
        suite, _created = EvalSuite.objects.select_for_update().get_or_create(corpus=corpus.family, name=name)
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
    fields = ["position", "category", "query", "filters", "expected_chunk_ids", "expected_files", "extra", "corpus",
              "answerable", "max_rank", "require_covered"]
    create, update = [], []
    for position, spec in enumerate(specs):
        values = {"position": position, "category": spec.category, "query": spec.query, "filters": spec.filters,
                  "expected_chunk_ids": spec.expected_chunk_ids, "expected_files": spec.expected_files,
                  "extra": spec.extra, "corpus": spec.corpus, "answerable": spec.answerable,
                  "max_rank": spec.max_rank, "require_covered": spec.require_covered}
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
    if path and storage.is_remote(path):
        return sum(storage.list_tree(path).values()) or None
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


def _check_scope(scope: str, suite: EvalSuite) -> None:
    """A run across corpora scores a hit by the corpus it comes from, so every case must name one."""
    if scope not in SCOPES:
        raise EvalError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
    if scope == EvalRun.SCOPE_CORPUS:
        return
    if limited():  # the run's calls carry no key, so they would read every corpus
        raise EvalError(f"a run with scope {scope!r} searches every corpus, and this API key is limited to some "
                        "corpora; run the suite on one corpus (scope 'corpus') instead")
    missing = list(suite.cases.filter(corpus="").order_by("position").values_list("name", flat=True)[:6])
    if missing:
        shown = ", ".join(missing[:5]) + (" and more" if len(missing) > 5 else "")
        raise EvalError(f"a run with scope {scope!r} needs the corpus that answers each case, and suite "
                        f"{suite.name!r} has cases without one ({shown}): add \"corpus\": \"<name>\" to each case "
                        "in the case file and import it again")


def eval_request(*, corpus: Corpus, suite: EvalSuite, mode: str = EvalRun.MODE_IN_PROCESS, url: str | None = None,
                 baseline: EvalRun | None = None, max_rounds: int = 3, match: str | None = None,
                 extra_filters: dict | None = None, requested_by: str = "",
                 scope: str = EvalRun.SCOPE_CORPUS) -> EvalRun:
    """Check the request and record a queued run tied to the corpus's active build.

    A run across corpora (scope `all` or `named`) asks /mcp/; `corpus` is then the default corpus,
    the one /mcp/ serves, whose build the run is tied to."""
    if mode not in MODES:
        raise EvalError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if mode == EvalRun.MODE_HTTP and not (url or "").startswith(("http://", "https://")):
        raise EvalError("an HTTP run needs the MCP server's URL, e.g. http://127.0.0.1:8001/mcp/")
    if mode == EvalRun.MODE_HTTP:
        check_eval_url(url or "")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or not 1 <= max_rounds <= MAX_ROUNDS_LIMIT:
        raise EvalError(f"max_rounds must be a whole number from 1 to {MAX_ROUNDS_LIMIT}, not {max_rounds!r}")
    match = match or suite.match_mode
    if match not in MATCH_MODES:
        raise EvalError(f"unknown match mode {match!r}; use one of {', '.join(MATCH_MODES)}")
    if baseline is not None and baseline.status != EvalRun.COMPLETE:
        raise RunStateConflict(f"baseline run {baseline.pk} is {baseline.status}; only a complete run can be a "
                               "baseline")
    if suite.corpus_id != corpus.family.pk:
        raise EvalError(f"suite {suite.name!r} belongs to another corpus; run a suite of corpus "
                        f"{corpus.family.name!r} (import the cases into it with --cases FILE)")
    if not suite.cases.exists():
        raise EvalError(f"suite {suite.name!r} has no cases; import some with --cases FILE")
    _check_scope(scope, suite)
    runs_fail_stale()
    build = corpus.active_build
    if build is None and mode == EvalRun.MODE_IN_PROCESS:
        raise EvalError(f"corpus {corpus.name!r} has no active build to evaluate; run "
                        f"`manage.py build_index --corpus {corpus.name}` first")
    return EvalRun.objects.create(
        suite=suite, corpus=corpus, build=build, build_label=build.build_id if build else "", mode=mode,
        target_url=url or "", scope=scope, match_mode=match, max_rounds=max_rounds, extra_filters=extra_filters or {},
        baseline=baseline, requested_by=requested_by,
        build_seconds=(build.timings or {}).get("total") if build else None,
        index_bytes=_dir_bytes(build.index_path) if build else None,
        progress_total=suite.cases.count(),
    )


def eval_run(*, corpus: Corpus, suite: EvalSuite, mode: str = EvalRun.MODE_IN_PROCESS, url: str | None = None,
             baseline: EvalRun | None = None, max_rounds: int = 3, progress: Progress | None = None,
             match: str | None = None, extra_filters: dict | None = None, headers: dict[str, str] | None = None,
             requested_by: str = "", scope: str = EvalRun.SCOPE_CORPUS) -> EvalRun:
    """Request and execute a run in the calling process (the command, the Celery task, tests)."""
    run = eval_request(corpus=corpus, suite=suite, mode=mode, url=url, baseline=baseline, max_rounds=max_rounds,
                       match=match, extra_filters=extra_filters, requested_by=requested_by, scope=scope)
    return eval_execute(run=run, progress=progress, headers=headers)


def eval_start(*, corpus: Corpus, suite: EvalSuite, mode: str = EvalRun.MODE_IN_PROCESS, url: str | None = None,
               baseline: EvalRun | None = None, max_rounds: int = 3, requested_by: str = "",
               scope: str = EvalRun.SCOPE_CORPUS) -> EvalRun:
    """Queue a run for a Celery worker; the caller returns at once.

    A broker that cannot take the task fails the run and raises TaskQueueUnavailable (HTTP 503).
    """
    run = eval_request(corpus=corpus, suite=suite, mode=mode, url=url, baseline=baseline, max_rounds=max_rounds,
                       requested_by=requested_by, scope=scope)
    transaction.on_commit(lambda: _dispatch(run.pk))
    return run


def _dispatch(run_pk: int) -> None:
    try:
        enqueue("evals.run_eval", run_pk)
    except TaskQueueUnavailable as exc:
        EvalRun.objects.filter(pk=run_pk, status=EvalRun.QUEUED).update(
            status=EvalRun.FAILED, error=f"could not start the run: {exc}", finished_at=timezone.now())
        raise


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
