from common.celery import app

from .models import EvalRun


@app.task(name="evals.run_eval")
def run_eval(run_pk: int) -> str:
    """Execute a queued eval run (see evals.services.eval_start); returns its final status."""
    from .execution import eval_execute  # the engine's modules: imported by the first run, not an idle worker

    run = EvalRun.objects.select_related("suite", "corpus", "build", "baseline").get(pk=run_pk)
    if run.status != EvalRun.QUEUED:
        return run.status
    return eval_execute(run=run).status
