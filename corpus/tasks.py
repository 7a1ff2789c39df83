from celery.signals import task_postrun, worker_ready

from common.celery import app

from .models import BuildRun, Corpus

# The build's modules (Arrow, markdown-it, LanceDB) are imported by the first task that runs one: an idle
# worker holds none of them.


# acks_late + reject_on_worker_lost: a worker killed mid-build leaves its message to be redelivered;
# build_execute's claim (queued -> running) makes the redelivery a no-op once the build has run or failed.
@app.task(name="corpus.run_build", acks_late=True, reject_on_worker_lost=True)
def run_build(build_pk: int) -> str:
    from .execution import build_execute

    build = BuildRun.objects.select_related("corpus").get(pk=build_pk)
    return build_execute(build=build).status


@app.task(name="corpus.prune_query_log")
def prune_query_log() -> dict:
    """For a Celery beat schedule, where one is run: serving processes also prune once an hour."""
    from . import querylog

    return querylog.prune()


@app.task(name="corpus.reap_builds")
def reap_builds() -> int:
    """Marks dead builds failed (corpus/reaping.py): on Celery beat's schedule where beat runs."""
    from .reaping import reap_once

    return reap_once()


@worker_ready.connect(weak=False, dispatch_uid="docsmcp-build-reaper")
def _reap_in_worker(sender=None, **kwargs) -> None:
    """Every worker reaps dead builds on a timer, so no GET has to (the directory queue has no beat)."""
    from .reaping import start_reaper

    start_reaper()


@app.task(name="corpus.run_fix")
def run_fix(corpus_pk: int, use_llm: bool = False, model: str | None = None) -> dict:
    from .fixes import fix_scan_report

    report = fix_scan_report(corpus=Corpus.objects.get(pk=corpus_pk), use_llm=use_llm, model=model)
    return {"proposals": [p.pk for p in report.proposals], "created": report.created,
            "stale": report.marked_stale, "llm_failures": len(report.llm_failures)}


def _after_build(sender=None, args=None, **kwargs) -> None:
    """A push that arrived while a build ran gets its own build once that one is done (corpus.webhooks)."""
    if getattr(sender, "name", "") != "corpus.run_build" or not args:
        return
    from corpus.webhooks import build_followup

    build = BuildRun.objects.filter(pk=args[0]).first()
    if build is not None:
        build_followup(build)


task_postrun.connect(_after_build, weak=False, dispatch_uid="docsmcp-build-followup")
