"""The corpus app: corpora, builds, fix proposals, and serving the active build (serving.py).

May import: `retrieval`, `docsmcp_site.celery`, `docsmcp_site.admin_base`, `docsmcp_site.api.auth`,
`docsmcp_site.api.pagination`. corpus drives the engine; the four site modules are shared plumbing
(the Celery app, the admin base, REST authentication and pagination) that still lives in the site
package. Never imports `mcp_endpoint`, `evals` or `insights`.
"""
