#!/usr/bin/env bash
# Fresh machine -> the whole test suite, against PostgreSQL and Redis on localhost
# (`scripts/test.sh -m "not slow"`: the fast tier, tests/tiers.py).
# Installs requirements-dev.txt into .venv and, when it is missing, Debian's chromium with apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
REQUIREMENTS=requirements-dev.txt ./scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1; then
  # Browser tests drive Debian's chromium (no browser download at run time).
  echo "scripts/test.sh: installing Debian's chromium with apt-get for the browser tests" >&2
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium unavailable: browser tests will be skipped" >&2
fi
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
export DOCSMCP_TEST_REDIS_URL=${DOCSMCP_TEST_REDIS_URL:-redis://127.0.0.1:6379/15}
.venv/bin/ruff check .
exec .venv/bin/pytest -q -n "${PYTEST_WORKERS:-2}" "$@"
