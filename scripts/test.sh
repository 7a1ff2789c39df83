#!/usr/bin/env bash
# Fresh machine -> the whole test suite, against PostgreSQL and Redis on localhost.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1; then
  # Browser tests drive Debian's chromium (no browser download at run time).
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium unavailable: browser tests will be skipped"
fi
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
export DOCSMCP_TEST_REDIS_URL=${DOCSMCP_TEST_REDIS_URL:-redis://127.0.0.1:6379/15}
.venv/bin/ruff check .
exec .venv/bin/pytest -q -n "${PYTEST_WORKERS:-2}" "$@"
