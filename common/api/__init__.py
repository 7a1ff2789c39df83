"""The REST API's plumbing, shared by every app's routers.

`auth` (bearer keys and staff sessions, one scope per operation), `errors` (one error shape) and
`pagination` (lists and request schemas). The site assembles the API (docsmcp_site.api.assembly);
each app keeps its routers in its own `api` module and imports from here.
"""
