"""REST API auth: the MCP endpoint's API keys, one scope per operation, 401 and 403 in the error shape."""

from __future__ import annotations

import pytest

from mcp_endpoint.apikeys import create_api_key, revoke_api_keys
from mcp_endpoint.models import ApiKey
from tests.api_helpers import assert_error, call

SAMPLE_BUILD = "sample-build"  # the build ID of the session's sample index (tests/conftest.py)

# Every operation of the API: (method, path, body, scope it needs).
ENDPOINTS = [
    ("get", "/corpora", None, "read"),
    ("post", "/corpora", {"name": "new-docs", "kind": "chunks"}, "admin"),
    ("get", "/corpora/sample", None, "read"),
    ("patch", "/corpora/sample", {"version": "9"}, "admin"),
    ("delete", "/corpora/sample", None, "admin"),
    ("post", "/corpora/sample/builds", {"kind": "validate"}, "build"),
    ("get", "/corpora/sample/builds", None, "read"),
    ("get", f"/corpora/sample/builds/{SAMPLE_BUILD}", None, "read"),
    ("get", f"/corpora/sample/builds/{SAMPLE_BUILD}/findings", None, "read"),
    ("post", f"/corpora/sample/builds/{SAMPLE_BUILD}/activate", None, "build"),
    ("post", f"/corpora/sample/builds/{SAMPLE_BUILD}/cancel", None, "build"),
    ("get", "/corpora/sample/search?query=retries", None, "read"),
    ("post", "/corpora/sample/search", {"query": "retries"}, "read"),
    ("get", "/corpora/sample/chunks/guides/retries.md", None, "read"),
    ("get", "/corpora/sample/chunk?chunk_id=guides/retries.md", None, "read"),
    ("get", "/corpora/sample/fixes", None, "read"),
    ("get", "/corpora/sample/fixes/1", None, "read"),
    ("post", "/corpora/sample/fixes/1/approve", None, "build"),
    ("post", "/corpora/sample/fixes/1/reject", {"reason": "not needed"}, "build"),
    ("post", "/evals/runs", {"corpus": "sample", "suite": "none"}, "build"),
    ("get", "/evals/runs", None, "read"),
    ("get", "/evals/runs/1", None, "read"),
    ("get", "/evals/runs/1/results", None, "read"),
    ("get", "/evals/runs/1/compare/2", None, "read"),
    ("get", "/evals/suites", None, "read"),
]
# The same paths as the OpenAPI schema writes them.
TEMPLATES = {SAMPLE_BUILD: "{build_id}", "sample": "{name}", "1": "{proposal_id}", "guides/retries.md": "{chunk_id}"}
EVAL_TEMPLATES = {"/evals/runs/1": "/evals/runs/{run_id}", "/evals/runs/1/results": "/evals/runs/{run_id}/results",
                  "/evals/runs/1/compare/2": "/evals/runs/{run_id}/compare/{other_id}"}
IDS = [f"{m.upper()} {p}" for m, p, _, _ in ENDPOINTS]
OTHER_SCOPES = {"read": ["build", "write"], "build": ["read", "write"], "admin": ["read", "build", "write"]}


@pytest.fixture
def auth_required(settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""


def test_every_operation_is_in_the_matrix(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    documented = {(method, path.removeprefix("/api/v1")) for path, ops in schema["paths"].items() for method in ops}
    tested = set()
    for method, path, _body, _scope in ENDPOINTS:
        parts = path.split("?")[0].split("/corpora/")
        if len(parts) == 2:
            rest = parts[1]
            for concrete, template in TEMPLATES.items():
                rest = rest.replace(concrete, template)
            parts[1] = rest
        tested.add((method, EVAL_TEMPLATES.get(path, "/corpora/".join(parts))))
    assert documented == tested


@pytest.mark.parametrize("method, path, body, scope", ENDPOINTS, ids=IDS)
def test_without_a_key_is_401_when_auth_is_required(client, sample_corpus, auth_required, method, path, body, scope):
    response = call(client, method, path, body)
    assert_error(response, 401, "unauthorized", "Authorization: Bearer")
    assert response["WWW-Authenticate"] == 'Bearer realm="docsmcp"'


@pytest.mark.parametrize("method, path, body, scope", ENDPOINTS, ids=IDS)
def test_an_unknown_key_is_401_even_when_auth_is_optional(client, sample_corpus, method, path, body, scope):
    assert_error(call(client, method, path, body, key="not-a-real-key"), 401, "unauthorized", "not valid")


@pytest.mark.parametrize("method, path, body, scope", ENDPOINTS, ids=IDS)
def test_a_key_without_the_scope_is_403_naming_it(client, sample_corpus, auth_required, method, path, body, scope):
    _row, key = create_api_key("host-app", OTHER_SCOPES[scope])
    error = assert_error(call(client, method, path, body, key=key), 403, "forbidden")
    assert f"'{scope}' scope" in error["message"] and "host-app" in error["message"]


@pytest.mark.parametrize("method, path, body, scope", ENDPOINTS, ids=IDS)
def test_a_key_with_the_scope_gets_through(client, sample_corpus, index_root, auth_required, method, path, body,
                                           scope):
    _row, key = create_api_key("host-app", [scope])
    response = call(client, method, path, body, key=key)
    assert response.status_code not in (401, 403), response.content
    assert response.status_code < 500, response.content


@pytest.mark.parametrize("method, path, body, scope", ENDPOINTS, ids=IDS)
def test_an_admin_key_passes_every_scope(client, sample_corpus, index_root, auth_required, method, path, body, scope):
    _row, key = create_api_key("ops", ["admin"])
    assert call(client, method, path, body, key=key).status_code not in (401, 403)


@pytest.mark.parametrize("method, path, body, scope", ENDPOINTS, ids=IDS)
def test_anonymous_requests_are_allowed_when_auth_is_optional(client, sample_corpus, index_root, settings, method,
                                                              path, body, scope):
    settings.MCP_AUTH_REQUIRED = False
    assert call(client, method, path, body).status_code not in (401, 403)


def test_a_revoked_key_is_401(client, sample_corpus, auth_required):
    _row, key = create_api_key("old", ["read"])
    assert call(client, "get", "/corpora", key=key).status_code == 200
    revoke_api_keys(ApiKey.objects.filter(name="old"))
    assert_error(call(client, "get", "/corpora", key=key), 401, "unauthorized")


def test_the_env_key_holds_every_scope(client, sample_corpus, settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = "env-secret-key"
    assert call(client, "patch", "/corpora/sample", {"version": "4"}, key="env-secret-key").status_code == 200


def test_a_non_bearer_authorization_header_counts_as_no_key(client, sample_corpus, auth_required):
    response = client.get("/api/v1/corpora", HTTP_AUTHORIZATION="Basic dXNlcjpwYXNz")
    assert_error(response, 401, "unauthorized")


def test_builds_record_who_requested_them(client, sample_corpus, index_root, auth_required):
    _row, key = create_api_key("sync-bot", ["build", "read"])
    assert call(client, "post", "/corpora/sample/builds", {"kind": "validate"}, key=key).json()["requested_by"] == \
        "api:sync-bot"


def test_docs_and_schema_need_no_key(client, db, auth_required):
    assert client.get("/api/v1/openapi.json").status_code == 200
    assert client.get("/api/v1/docs").status_code == 200
    assert client.get("/api/v1/docs/assets/swagger-ui-bundle.js").status_code == 200


def test_the_schema_declares_bearer_auth_on_every_operation(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    assert schema["components"]["securitySchemes"]["ApiKey"] == {"type": "http", "scheme": "bearer"}
    for ops in schema["paths"].values():
        for operation in ops.values():
            assert operation["security"] == [{"ApiKey": []}]
