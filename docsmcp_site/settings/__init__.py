"""The settings (DJANGO_SETTINGS_MODULE `docsmcp_site.settings`), read from the environment, one module
per concern; every default works on one machine with nothing but Python.

`core` the Django site (home directory, secret, hosts, apps, database, logging), `celery` the task
queue, `build` builds and their sources, `serving` the serving workers and the corpora they hold,
`mcp` the MCP endpoint and its limits, `insights` the query log, insights and evals, `citeloom` that
profile's bounds, `oauth` sign-in with OAuth 2.1. Each reads the environment only through
`env.env(NAME)`, typed by the variable's entry in `registry` (type, default, section, help), with the
variable named in the error; each default is written there once, and docs/settings.md is generated from
it (`scripts/settings_docs.py`). The apps read `django.conf.settings.X`; docsmcp_site/checks.py reports
settings that contradict each other, and tests/docsmcp_site/test_settings_documented.py checks that the registry holds
exactly the variables read here, that the page is current, that every name the apps read is defined and
that no app converts one to the type it already has.
"""

from docsmcp_site.settings.build import *  # noqa: F403
from docsmcp_site.settings.celery import *  # noqa: F403
from docsmcp_site.settings.citeloom import *  # noqa: F403
from docsmcp_site.settings.core import *  # noqa: F403
from docsmcp_site.settings.insights import *  # noqa: F403
from docsmcp_site.settings.mcp import *  # noqa: F403
from docsmcp_site.settings.oauth import *  # noqa: F403
from docsmcp_site.settings.serving import *  # noqa: F403
