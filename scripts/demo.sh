#!/usr/bin/env bash
# Fresh machine -> the sample corpus built and served at http://127.0.0.1:8001/mcp/
# Runtime requirements only. Embedded defaults: SQLite in var/, a Celery queue in var/celery/ with
# a worker that `serve` starts, LanceDB under var/indexes/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py build_index --corpus sample --source corpus/sample_docs \
    --embedding-provider "${DOCSMCP_EMBEDDING_PROVIDER:-local}"
exec .venv/bin/python manage.py serve
