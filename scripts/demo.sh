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
# serve prints "docsmcp: ready" once every worker is warm and /health/ answers; the tour follows it.
# (Asking /health/ from here while the workers warm would queue requests they answer 503, logged as
# errors.)
log=$(mktemp -t docsmcp-demo.XXXXXX)
.venv/bin/python manage.py serve > >(tee "$log") &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' INT TERM EXIT
base="http://127.0.0.1:${MCP_SERVER_PORT:-8001}"
while kill -0 "$server" 2>/dev/null; do
    if grep -q '^docsmcp: ready in' "$log"; then
        sleep 1  # the banner's lines follow the ready line
        if grep -q '^docsmcp: the server answers but can serve no corpus' "$log"; then
            break
        fi
        cat <<NEXT

docsmcp is up ($((SECONDS - started)) s since the demo started):
  MCP endpoint       $base/mcp/  (one corpus: $base/mcp/c/sample/)
  Admin              $base/admin/  (first user: .venv/bin/python manage.py createsuperuser)
  Eval dashboards    $base/evals/
  Insights           $base/insights/  (what agents ask, what the docs miss: docs/feedback.md)
  REST API docs      $base/api/v1/docs
  Connect a client   .venv/bin/python manage.py setup CLIENT --url $base/mcp/c/sample/
                     (CLIENT: claude-code, cursor, vscode, codex, gemini, windsurf; docs/clients.md)
                     (stdio needs no server: .venv/bin/python manage.py setup CLIENT --corpus sample)
  Stop it            Ctrl-C

NEXT
        break
    fi
    sleep 0.5
done
wait "$server"
