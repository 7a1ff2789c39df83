"""Whether the workers that build a corpus can read its source: said at registration, never refused.

With a remote broker (Redis) a build may run on any worker host, and a directory that exists only
on the web host that registered it is not there.
"""

from __future__ import annotations

from django.conf import settings

from .models import Corpus


def remote_workers() -> bool:
    """True when builds may run on other hosts: a network broker, tasks not run inline."""
    broker = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    return bool(broker) and not broker.startswith(("filesystem://", "memory://")) and not getattr(
        settings, "CELERY_TASK_ALWAYS_EAGER", False)


def source_warnings(corpus: Corpus) -> list[str]:
    """What the operator should know about where the corpus's markdown is read from."""
    if corpus.kind != Corpus.KIND_MARKDOWN or not corpus.source_dir or not remote_workers():
        return []
    return [f"builds run on Celery workers that may be on other hosts, and {corpus.source_dir} is a directory "
            "on this host: a worker elsewhere cannot read it. Put the corpus on a path every worker mounts "
            "at the same place (a shared volume), or register it from a git repository."]
