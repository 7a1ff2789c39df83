"""The Django project. Celery's app lives in docsmcp_site.celery, which `celery -A docsmcp_site` finds
by itself and the task modules import: a command or request that queues nothing never loads Celery.

May import: `retrieval.errors`, `retrieval.boot`, `corpus.access`, `corpus.api`, `corpus.errors`, `corpus.models`,
`corpus.warming`, `evals.api`, `evals.errors`, `insights.api`, `mcp_endpoint.apikeys`,
`mcp_endpoint.clients`, `mcp_endpoint.models`, `mcp_endpoint.security`, `mcp_endpoint.startup`.
The site mounts every app's API (api/assembly.py), translates their errors and checks their keys
once at the edge (api/errors.py, api/auth.py), guards the login and the API with the MCP view's
host and rate-limit checks, and starts a serving worker's warm-up (gunicorn_conf.py). The apps in
turn import its shared plumbing (`celery`, `admin_base`, `api.auth`, `api.pagination`): that loop
through the site package is known, and ends when the plumbing moves to a package under the apps.
"""

# The package's version (pyproject.toml reads it; settings.VERSION is what the server reports).
__version__ = "0.1.0"
