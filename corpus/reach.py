"""Whether the workers that build a corpus can read its source: said at registration, never refused.

With a broker other hosts can reach (Redis on the network) a build may run on any worker host, and
a directory that exists only on the web host that registered it is not there. A broker on a
loopback address or a Unix socket is reachable from this host only, so its workers are here too:
the single-host topology of docs/deploy.md gets no warning.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from .models import Corpus


def remote_workers() -> bool:
    """True when builds may run on other hosts: a broker on a network address, tasks not run inline."""
    broker = settings.CELERY_BROKER_URL
    if not broker or broker.startswith(("filesystem://", "memory://")) or settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    return not _this_host_only(broker)


def _this_host_only(url: str) -> bool:
    """A broker URL no other host can connect to: a Unix socket, or a loopback host name or address."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return "socket" in url.split("://", 1)[0] or url.split("://", 1)[-1].startswith("/")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _on_shared_path(source_dir: str) -> bool:
    """Under a directory the operator declared mounted at the same place on every worker host."""
    path = Path(source_dir)
    return any(path == Path(root) or Path(root) in path.parents
               for root in settings.DOCSMCP_SHARED_SOURCE_ROOTS)


def source_warnings(corpus: Corpus) -> list[str]:
    """What the operator should know about where the corpus's markdown is read from."""
    if corpus.kind != Corpus.KIND_MARKDOWN or not corpus.source_dir or not remote_workers() \
            or _on_shared_path(corpus.source_dir):
        return []
    return [f"builds run on Celery workers that may be on other hosts, and {corpus.source_dir} is a directory "
            "on this host: a worker elsewhere cannot read it. Put the corpus on a path every worker mounts "
            "at the same place (a shared volume, then list it in DOCSMCP_SHARED_SOURCE_ROOTS), or register "
            "it from a git repository."]
