"""The REST API's plumbing and assembly, served at /api/v1/.

`assembly` mounts every app's routers on one NinjaAPI; `auth` (bearer keys and staff sessions,
one scope per operation), `errors` (one error shape), `pagination` and `docs` (the offline
Swagger page) are what every router shares. Each app keeps its own routers in its `api/`
package (`corpus.api`, `evals.api`) and imports from here, never the other way round.
"""
