"""REST routers of the evals app, mounted at /api/v1/ by `docsmcp_site.api.assembly`."""
