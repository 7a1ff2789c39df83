"""Celery, the only task system: builds, eval runs and fix scans run in its workers, never in a web request."""

from docsmcp_site.settings.core import DOCSMCP_HOME
from docsmcp_site.settings.env import env

# Without CELERY_BROKER_URL the broker is a directory under DOCSMCP_HOME (kombu's filesystem transport) and
# `manage.py serve` starts a worker beside the web server.
CELERY_BROKER_URL = env("CELERY_BROKER_URL")
# A Redis broker's: socket_timeout makes a broker that takes the connection and never answers fail a publish
# after 1 s too, instead of holding the request for as long as the connection lives.
redis_transport_options = {"socket_connect_timeout": 1, "socket_timeout": 1}
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND",
                            None if CELERY_BROKER_URL == "filesystem://" else CELERY_BROKER_URL)
if CELERY_BROKER_URL == "filesystem://":
    CELERY_QUEUE_DIR = env("DOCSMCP_CELERY_DIR", DOCSMCP_HOME / "celery")
    for _folder in ("queue", "control"):
        (CELERY_QUEUE_DIR / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_QUEUE_DIR / "queue"), "data_folder_out": str(CELERY_QUEUE_DIR / "queue"),
        "control_folder": str(CELERY_QUEUE_DIR / "control"), "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = redis_transport_options
# Run tasks inside the caller (tests, one-off scripts); never for a server: a build takes minutes.
CELERY_TASK_ALWAYS_EAGER = env("CELERY_TASK_ALWAYS_EAGER")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE")
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Threads, not forked processes: LanceDB does not support fork, and builds release the GIL in Arrow/Lance.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = env("CELERY_WORKER_CONCURRENCY")
# A web request that queues a task answers 503 within about two seconds when the broker is down or does not
# answer (two attempts of one second each), instead of hanging (corpus/queue.py).
CELERY_BROKER_CONNECTION_TIMEOUT = 1
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
# Nothing reads a task's result (a build's or run's outcome is its row), so queueing never waits on the
# result backend, whose own retries would hold a request for 20 s when Redis is down.
CELERY_TASK_IGNORE_RESULT = True
# Where Celery beat runs (`celery -A common beat`), it queues the dead-build reaper too; every worker also
# runs it on a timer (corpus/reaping.py), so beat is optional.
CELERY_BEAT_SCHEDULE = {"reap-dead-builds": {"task": "corpus.reap_builds", "schedule": 60.0}}
