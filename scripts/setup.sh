#!/usr/bin/env bash
# Create .venv, install the pinned runtime requirements (REQUIREMENTS=requirements-dev.txt adds
# the test tooling) and collect the admin's static files (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
echo "setup: upgrading pip"
.venv/bin/pip install --quiet --upgrade pip
echo "setup: installing ${REQUIREMENTS:-requirements.txt} (pip lists what it installs)"
.venv/bin/pip install --progress-bar off -r "${REQUIREMENTS:-requirements.txt}" \
    | { grep -v '^Requirement already satisfied' || true; }
echo "setup: collecting the admin's static files"
.venv/bin/python manage.py collectstatic --noinput --verbosity 0
