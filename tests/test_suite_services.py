"""The suite keeps to its own services: the PostgreSQL server of DATABASE_URL and the Redis database of
DOCSMCP_TEST_REDIS_URL (tests/services.py), never a well-known local address that may be someone else's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# A service URL on this machine's default Redis or PostgreSQL port (port 1 or a free port is nothing listening).
LOCAL_SERVICE = re.compile(r"(rediss?|postgres(?:ql)?)://[^\s\"']*?(127\.0\.0\.1|localhost|\[::1\])(:(6379|5432))?/")


def test_no_test_names_a_local_redis_or_postgresql_of_its_own():
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for path in sorted(TESTS.rglob("*.py"))
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if LOCAL_SERVICE.search(line)]
    assert offenders == [], "use tests/services.py (DATABASE_URL, DOCSMCP_TEST_REDIS_URL) instead:\n" + \
        "\n".join(offenders)


def _in_a_fresh_process(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("DOCSMCP_TEST_REDIS_URL", "DOCSMCP_TEST_DATABASE_NAME")}
    return subprocess.run([sys.executable, "-c", code], env={**clean, "DJANGO_SETTINGS_MODULE": "tests.settings", **env},
                          cwd=ROOT, capture_output=True, text=True, check=True, timeout=120).stdout.strip()


@pytest.mark.slow
def test_the_test_database_name_can_be_set():
    code = "from django.conf import settings; print(settings.DATABASES['default'].get('TEST', {}).get('NAME'))"
    assert _in_a_fresh_process(code, DOCSMCP_TEST_DATABASE_NAME="docsmcp_ci_42") == "docsmcp_ci_42"
    assert _in_a_fresh_process(code) == "None"  # Django's own default: test_<name>


@pytest.mark.slow
def test_without_a_test_redis_the_redis_tests_say_what_to_set():
    code = "from tests.services import redis_unreachable_reason; print(redis_unreachable_reason())"
    assert _in_a_fresh_process(code).startswith("set DOCSMCP_TEST_REDIS_URL")
