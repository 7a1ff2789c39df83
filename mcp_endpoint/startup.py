"""What a serving process does before it accepts its first connection (gunicorn's post_worker_init
in docsmcp_site/gunicorn_conf.py): import everything a request reaches, then warm the corpora.

Django imports the URL configuration, and with it the REST API's schemas, on the first request,
and each tool profile's module on the first call to it: a second or more, paid by whichever agent
came first, on top of opening the indexes (corpus/serving.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.urls import get_resolver

from corpus.serving import serve_warm
from mcp_endpoint import profiles


def import_views() -> None:
    """Imports every view module, the REST API and each tool profile; opens nothing."""
    get_resolver().url_patterns  # noqa: B018
    for name in profiles.profile_names():
        profiles.get_profile(name)


def serve_ready(notify: Callable[[], None] | None = None) -> dict:
    import_views()  # a no-op after the master's preload
    if notify is not None:
        notify()
    return serve_warm(notify=notify)
