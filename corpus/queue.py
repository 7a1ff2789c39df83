"""Handing work to Celery from a web request: at once, or a clear failure at once."""

from __future__ import annotations

from .errors import TaskQueueUnavailable


def enqueue(task_name: str, *args) -> None:
    """Queue the task named `task_name` for a worker; TaskQueueUnavailable (HTTP 503) when the
    broker cannot be reached.

    Publishing retries once with a short connect timeout (CELERY_TASK_PUBLISH_RETRY_POLICY), so a
    broker that is down answers the caller in about two seconds instead of hanging the request. No
    result is asked for: the result backend would retry for 20 s on its own and then raise a
    RuntimeError, and a task's outcome is recorded on its row anyway.
    """
    # Celery loads here, with the first work queued, never with the site.
    from kombu.exceptions import OperationalError

    from common.celery import app

    app.loader.import_default_modules()  # registers the apps' tasks modules, as a worker does when it starts
    try:
        app.tasks[task_name].apply_async(args, ignore_result=True)
    except OperationalError as exc:
        raise TaskQueueUnavailable(
            f"the task queue is unreachable, so nothing was started ({exc}); check that the broker in "
            "CELERY_BROKER_URL is running, then try again") from exc
