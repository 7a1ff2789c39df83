"""Test settings: the site's, with Celery tasks run inline so unit tests need no worker.

The real-worker tests (tests/test_celery_worker.py, tests/test_deploy_e2e.py) start processes with
docsmcp_site.settings, where tasks always go through a broker.
"""

from docsmcp_site.settings import *  # noqa: F403

CELERY_TASK_ALWAYS_EAGER = True
# The query log's writer thread commits on its own connection, past a test's rolled-back transaction:
# off unless a test turns it on (tests/test_querylog.py), so no test sees another's recorded calls.
DOCSMCP_QUERY_LOG = "off"
