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
# The sample's eval suite, so /evals/ shows a run; its "unanswered" cases are questions the sample
# docs cannot answer yet (docs/feedback.md). A failing case is not an error here.
.venv/bin/python manage.py run_eval --corpus sample --suite sample --cases corpus/sample_docs_eval.json \
    || echo "the eval run did not complete; /evals/ shows why" >&2
.venv/bin/python manage.py serve &
server=$!
trap 'kill "$server" 2>/dev/null' INT TERM
base="http://127.0.0.1:${MCP_SERVER_PORT:-8001}"
for _ in $(seq 1 240); do
    if .venv/bin/python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
            "$base/health/" 2>/dev/null; then
        cat <<NEXT

docsmcp is up:
  MCP endpoint       $base/mcp/  (one corpus: $base/mcp/c/sample/)
  Admin              $base/admin/  (first user: .venv/bin/python manage.py createsuperuser)
  Eval dashboards    $base/evals/
  Insights           $base/insights/  (what agents ask, what the docs miss: docs/feedback.md)
  REST API docs      $base/api/v1/docs
  Connect a client   docs/clients.md, or: .venv/bin/python manage.py mcp_config --client cursor
                     (stdio needs no server: .venv/bin/python manage.py mcp_stdio)

NEXT
        break
    fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
done
wait "$server"
