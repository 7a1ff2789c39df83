"""The settings (DJANGO_SETTINGS_MODULE `docsmcp_site.settings`), read from the environment, one module
per concern; every default works on one machine with nothing but Python.

`core` the Django site (home directory, secret, hosts, apps, database, logging), `celery` the task
queue, `build` builds and their sources, `serving` the serving workers and the corpora they hold,
`mcp` the MCP endpoint and its limits, `insights` the query log, insights and evals, `citeloom` that
profile's bounds, `oauth` sign-in with OAuth 2.1. Each reads the environment only through `env` (typed, with the variable named in
the error), and each default is written there once: the apps read `django.conf.settings.X`, and
tests/docsmcp_site/test_settings_documented.py checks that every such name is defined here, that no app converts one
to the type it already has, and that every variable read here is documented.
"""

from docsmcp_site.settings.build import *  # noqa: F403
from docsmcp_site.settings.celery import *  # noqa: F403
from docsmcp_site.settings.citeloom import *  # noqa: F403
from docsmcp_site.settings.core import *  # noqa: F403
from docsmcp_site.settings.insights import *  # noqa: F403
from docsmcp_site.settings.mcp import *  # noqa: F403
from docsmcp_site.settings.oauth import *  # noqa: F403
from docsmcp_site.settings.serving import *  # noqa: F403
