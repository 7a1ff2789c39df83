"""Handing work to Celery from a web request: at once, or a clear failure at once."""

from __future__ import annotations

from celery import Task
from kombu.exceptions import OperationalError

from .errors import TaskQueueUnavailable


def enqueue(task: Task, *args) -> None:
    """Queue `task` for a worker; TaskQueueUnavailable (HTTP 503) when the broker cannot be reached.

    Publishing retries once with a short connect timeout (CELERY_TASK_PUBLISH_RETRY_POLICY), so a
    broker that is down answers the caller in about two seconds instead of hanging the request.
    """
    try:
        task.delay(*args)
    except OperationalError as exc:
        raise TaskQueueUnavailable(
            f"the task queue is unreachable, so nothing was started ({exc}); check that the broker in "
            "CELERY_BROKER_URL is running, then try again") from exc
