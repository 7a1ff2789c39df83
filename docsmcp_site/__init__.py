"""The Django project, the top floor: settings, URLs, the REST API's assembly, WSGI/ASGI, the
`docsmcp` CLI and the serving front (gunicorn's worker and configuration).

May import: `retrieval.boot`, `retrieval.errors`, `common`, `corpus.api`, `corpus.errors`, `corpus.oauth`, `corpus.oauth_validator`,
`corpus.warming`, `evals.api`, `evals.errors`, `insights.api`, `insights.errors`, `mcp_endpoint.clients`, `mcp_endpoint.folder`, `mcp_endpoint.models`,
`mcp_endpoint.security`, `mcp_endpoint.startup`. The site mounts every app's API (api/assembly.py)
and names their errors to the floor's error handlers, guards the login and the API with the MCP
view's origin and client-address checks, refuses sign-in for a resource that is not this server by
the rule tokens are checked with (corpus.oauth), and starts a serving worker's warm-up (gunicorn_conf.py).
Nothing imports the site: the apps build on the floor under them (`common`).
"""

# The package's version (pyproject.toml reads it; settings.VERSION is what the server reports).
__version__ = "0.1.0"
