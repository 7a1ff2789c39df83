"""The corpus app: corpora, builds, fix proposals, and serving the active build (serving.py).

API keys live here too (models.ApiKey, apikeys.py, admin_keys.py): a key's limits are limits
on corpus access (access.py). Every surface checks keys with apikeys.authenticate, the REST API
from api/auth.py.

May import: `retrieval`, `common`. corpus drives the engine and builds on the floor (the Celery
app, the admin base, the REST plumbing, the caller). Never imports `mcp_endpoint`, `evals`,
`insights` or `docsmcp_site`.
"""
