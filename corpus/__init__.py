"""The corpus app: corpora, builds, fix proposals, and serving the active build (serving.py).

API keys live here too (models.ApiKey, apikeys.py, admin_keys.py): a key's limits are limits
on corpus access (access.py), and corpus installs its key check in the REST API's auth when
Django starts (apps.py).

May import: `retrieval`, `common`. corpus drives the engine and builds on the floor (the Celery
app, the admin base, the REST plumbing, the caller). Never imports `mcp_endpoint`, `evals`,
`insights` or `docsmcp_site`.
"""
