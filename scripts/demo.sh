#!/usr/bin/env bash
# Fresh machine -> the sample corpus built and served at http://127.0.0.1:8001/mcp/
# Runtime requirements only. Embedded defaults: SQLite in var/, a Celery queue in var/celery/ with
# a worker that `serve` starts, LanceDB under var/indexes/.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> [%s/5] %s\n' "$1" "$2"; }
started=$SECONDS
step 1 "installing the requirements into .venv (a few minutes the first time)"
./scripts/setup.sh
step 2 "creating the database"
.venv/bin/python manage.py migrate --noinput
step 3 "building the sample corpus (corpus/sample_docs)"
.venv/bin/python manage.py build_index --corpus sample --source corpus/sample_docs \
    --embedding-provider "${DOCSMCP_EMBEDDING_PROVIDER:-local}"
# The sample's eval suite, so /evals/ shows a run; its "unanswered" cases are questions the sample
# docs cannot answer yet (docs/feedback.md). A failing case is not an error here.
step 4 "running the sample's eval suite"
.venv/bin/python manage.py run_eval --corpus sample --suite sample --cases corpus/sample_docs_eval.json \
    || echo "the eval run did not complete; /evals/ shows why" >&2
step 5 "starting the server (it prints its URL once it answers; $((SECONDS - started)) s so far)"
.venv/bin/python manage.py serve &
server=$!
trap 'kill "$server" 2>/dev/null' INT TERM
base="http://127.0.0.1:${MCP_SERVER_PORT:-8001}"
# serve shows its progress while the workers warm the index; the tour below follows its URL.
while kill -0 "$server" 2>/dev/null; do
    if .venv/bin/python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
            "$base/health/" 2>/dev/null; then
        cat <<NEXT

docsmcp is up:
  MCP endpoint       $base/mcp/  (one corpus: $base/mcp/c/sample/)
  Admin              $base/admin/  (first user: .venv/bin/python manage.py createsuperuser)
  Eval dashboards    $base/evals/
  Insights           $base/insights/  (what agents ask, what the docs miss: docs/feedback.md)
  REST API docs      $base/api/v1/docs
  Connect a client   .venv/bin/python manage.py setup CLIENT --url $base/mcp/c/sample/
                     (CLIENT: claude-code, cursor, vscode, codex, gemini, windsurf; docs/clients.md)
                     (stdio needs no server: .venv/bin/python manage.py setup CLIENT --corpus sample)

NEXT
        break
    fi
    sleep 0.5
done
wait "$server"
