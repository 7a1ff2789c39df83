"""REST router of the evals app (mounted at /api/v1/ by docsmcp_site.api).

Stub: the evals app has no models or services yet. When it does, add here, each a thin caller
of evals services, with `auth=BUILD` for triggering and `auth=READ` for reading:
`POST /evals/runs` (trigger a run), `GET /evals/runs` (paginated), `GET /evals/runs/{id}`
(results), `GET /evals/runs/{a}/compare/{b}` (compare two runs).
"""

from ninja import Router

router = Router(tags=["evals"])
