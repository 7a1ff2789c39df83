"""The REST API for host applications, assembled from the apps' routers and served at /api/v1/.

Conventions every router follows (docs/api.md has the details):
- auth: the MCP endpoint's bearer API keys, one scope per operation (corpus.api.auth);
- errors: `{"error": {"code", "message", "details"}}` for every 4xx/5xx (common.api.errors);
- lists: `limit` (1-200, default 50) + `offset` -> `{items, total, limit, offset, has_more}`
  (common.api.pagination); request bodies refuse unknown fields (422).
"""

from django.urls import reverse
from ninja import NinjaAPI

from common.api import errors as api_errors
from corpus.api import auth as api_auth
from corpus.api.corpora import builds as builds_router
from corpus.api.corpora import router as corpora_router
from corpus.api.fixes import router as fixes_router
from corpus.api.hooks import router as hooks_router
from corpus.api.search import router as search_router
from corpus.errors import CorpusError
from docsmcp_site.api.docs import OfflineSwagger
from docsmcp_site.api.docs import router as docs_router
from evals.api.runs import router as evals_router
from evals.errors import EvalError
from insights.api import router as insights_router
from insights.errors import InsightsError

DESCRIPTION = """\
Drive docsmcp from a host application: register corpora, trigger builds and poll their
progress, roll back, and search the active index.

**Auth.** Send `Authorization: Bearer <key>` with an API key from the admin (or `MCP_API_KEY`).
Scopes: `read` (lists, reads, search), `build` (trigger, cancel, activate builds), `admin`
(create, update, delete corpora; implies every scope). With `MCP_AUTH_REQUIRED=false` (the
default) requests without a key may only read; a key that is not valid is always 401. A key may
be limited to some corpora. Writes send `Content-Type: application/json`; browsers are held to
`MCP_ALLOWED_ORIGINS` (loopback by default).

**Errors** have one shape: `{"error": {"code": "...", "message": "...", "details": {...}}}`.
Request validation failures are 422 with `details.errors`.

**Lists** take `limit` (1-200, default 50) and `offset` and return
`{items, total, limit, offset, has_more}`.
"""



class DocsmcpAPI(NinjaAPI):
    def get_openapi_schema(self, **kwargs):
        schema = api_errors.document_errors(super().get_openapi_schema(**kwargs))
        return api_auth.document_security(schema, self.operation_scopes())

    def operation_scopes(self) -> dict[str, str]:
        """operationId -> the API key scope the operation needs (operations open to all are absent)."""
        scopes = {}
        for _prefix, router in self._routers:
            for path_view in router.path_operations.values():
                for operation in path_view.operations:
                    for auth in operation.auth_callbacks or ():
                        if isinstance(auth, api_auth.ApiKey):
                            scopes[operation.operation_id or self.get_openapi_operation_id(operation)] = auth.scope
        return scopes


api = DocsmcpAPI(
    title="docsmcp REST API",
    version="1",
    description=DESCRIPTION,
    urls_namespace="api",
    docs=OfflineSwagger(),
)
api_errors.install(api, service_errors=(CorpusError, EvalError, InsightsError), named_bases=(InsightsError,))
api.add_router("", corpora_router)
api.add_router("", builds_router)
api.add_router("", search_router)
api.add_router("", fixes_router)
api.add_router("", hooks_router)
api.add_router("", evals_router)
api.add_router("", insights_router)
api.add_router("", docs_router)


@api.get("/", auth=None, include_in_schema=False, url_name="index")
def index(request):
    """Where to start: the schema, the docs and the corpora."""
    return {"name": api.title, "version": api.version, "openapi": reverse("api:openapi-json"),
            "docs": reverse("api:openapi-view"), "corpora": reverse("api:corpora")}
