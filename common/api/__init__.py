"""The REST API's plumbing, shared by every app's routers.

`errors` (one error shape) and `pagination` (lists and request schemas). Who may call an operation
(bearer keys and staff sessions, one scope per operation) is corpus/api/auth.py, beside the keys it
checks. The site assembles the API (docsmcp_site.api.assembly); each app keeps its routers in its
own `api` module and imports from here.
"""
