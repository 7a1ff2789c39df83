"""Celery tasks of the insights app: gap grouping, and closing gaps when a build serves their fix."""

from __future__ import annotations

from celery.signals import task_postrun

from common.celery import app
from corpus.models import BuildRun, Corpus

# insights.gaps (NumPy, the grouping model's code) is imported by the first task that needs it: an idle
# worker holds none of it.


@app.task(name="insights.group_gaps")
def group_gaps(corpus_pk: int) -> dict:
    """Group a corpus's unanswered questions that no group holds yet (queued by the gap pages and API)."""
    corpus = Corpus.objects.filter(pk=corpus_pk).first()
    if corpus is None:
        return {"grouped": 0}
    from .gaps import group_pending

    report = group_pending(corpus)
    return {"grouped": report.grouped, "new_groups": report.new_groups, "regrouped": report.regrouped,
            "method": report.method}


def _after_build(sender=None, args=None, **kwargs) -> None:
    """A complete build closes the gaps whose applied fixes it now serves, without anyone opening a page."""
    if getattr(sender, "name", "") != "corpus.run_build" or not args:
        return
    build = BuildRun.objects.filter(pk=args[0]).select_related("corpus").first()
    if build is not None and build.status == BuildRun.COMPLETE:
        from .gaps import settle

        settle(build.corpus.family.name)


task_postrun.connect(_after_build, weak=False, dispatch_uid="docsmcp-insights-settle-gaps")
