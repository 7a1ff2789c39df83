"""Test settings: the site's, with Celery tasks run inline so unit tests need no worker, on the database
server of DATABASE_URL (tests/services.py says which services the suite uses).

The real-worker tests (tests/corpus/test_celery_worker.py, tests/docsmcp_site/test_deploy_e2e.py) start processes with
docsmcp_site.settings, where tasks always go through a broker.
"""

import os

from docsmcp_site.settings import *  # noqa: F403

# The test database's name on DATABASE_URL's server (Django's default: test_<name>; pytest-xdist adds _gw0...).
if os.environ.get("DOCSMCP_TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"] = {**DATABASES["default"].get("TEST", {}),  # noqa: F405
                                    "NAME": os.environ["DOCSMCP_TEST_DATABASE_NAME"]}

CELERY_TASK_ALWAYS_EAGER = True
# The query log's writer thread commits on its own connection, past a test's rolled-back transaction:
# off unless a test turns it on (tests/corpus/test_querylog.py; a server process it starts with
# DOCSMCP_TEST_QUERY_LOG), so no test sees another's recorded calls.
DOCSMCP_QUERY_LOG = os.environ.get("DOCSMCP_TEST_QUERY_LOG", "off")
# Nor does the writer's hourly retention run delete a test's deliberately old rows (tests prune explicitly).
DOCSMCP_QUERY_LOG_DAYS = 0
# Users' passwords hashed with a fast hasher: the site's PBKDF2 costs about half a second of CPU per hash,
# paid for every admin user a test makes and every login it tries. The site's list follows, so stored
# hashes of every kind still verify, and OAuth client secrets keep their own hasher (listed last).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", *PASSWORD_HASHERS]  # noqa: F405
# Transactional tests flush by deleting rows rather than truncating tables (tests/postgresql/base.py).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.postgresql"  # noqa: F405
# WhiteNoise looks a static file up when it is asked for, instead of indexing all of STATIC_ROOT (about 17 ms
# of CPU for the admin's files) each time a test client loads the middleware chain, which every client does.
# Requests outside STATIC_URL never touch the disk either way; the setting is whitenoise's development mode.
WHITENOISE_AUTOREFRESH = True
