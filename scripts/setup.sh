#!/usr/bin/env bash
# Create .venv, install the pinned runtime requirements (REQUIREMENTS=requirements-dev.txt adds
# the test tooling) and collect the admin's static files (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -r "${REQUIREMENTS:-requirements.txt}"
.venv/bin/python manage.py collectstatic --noinput --verbosity 0
