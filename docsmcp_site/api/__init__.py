"""The REST API's assembly, served at /api/v1/.

`assembly` mounts every app's routers on one NinjaAPI, `docs` serves the offline Swagger page and
`guard` is the middleware that checks a request's origin and body type before the API reads it.
The plumbing every router shares (auth, errors, pagination) is the floor's (common.api), which
the apps import; the site imports the apps, never the other way round.
"""
