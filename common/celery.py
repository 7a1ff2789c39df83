import os
import sys
import threading

from celery import Celery
from celery.signals import task_postrun, task_prerun

from retrieval.boot import boot

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
# Celery's Django fix-up runs every system check when a worker starts and discards what they find, and
# the URL checks import the whole site (the REST API, OAuth, pydantic, the build's Arrow): 30 MB a worker
# that serves no request never frees. `manage.py check` and the web server run them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")
boot()  # a worker runs builds; a process that only queues tasks imports this module too, harmlessly

app = Celery("docsmcp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# Tasks running in this worker process: the embedding model is let go when the last one ends.
_running = 0
_running_lock = threading.Lock()


def _eager(task) -> bool:
    return bool(getattr(getattr(task, "request", None), "is_eager", False))


@task_prerun.connect(weak=False, dispatch_uid="docsmcp-task-count")
def _task_started(sender=None, **kwargs) -> None:
    global _running
    if not _eager(sender):
        with _running_lock:
            _running += 1


@task_postrun.connect(weak=False, dispatch_uid="docsmcp-release-model")
def _task_ended(sender=None, **kwargs) -> None:
    """A worker loads the local embedding model for a build or an eval and, once no task is running,
    gives its memory back, so it does not hold the model between tasks. An eager task runs in a
    serving process, which keeps the model it shares with its siblings."""
    global _running
    if _eager(sender):
        return
    with _running_lock:  # held while releasing, so a task starting now loads a fresh model
        _running = max(0, _running - 1)
        local = sys.modules.get("retrieval.embeddings.local")
        if _running == 0 and local is not None:
            local.release_runtime()
