"""REST API auth: the MCP endpoint's API keys, one scope per operation, 401 and 403 in the error shape."""

from __future__ import annotations

import json

import pytest

from corpus.apikeys import create_api_key, revoke_api_keys
from corpus.models import ApiKey
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
    ("get", "/corpora/sample/fixes/1/patch", None, "read"),
    ("post", "/corpora/sample/fixes/1/approve", None, "build"),
    ("post", "/corpora/sample/fixes/1/reject", {"reason": "not needed"}, "build"),
    ("post", "/corpora/sample/fixes/1/text", {"heading": "Apple Pay", "body": "Not supported."}, "build"),
    ("post", "/evals/runs", {"corpus": "sample", "suite": "none"}, "build"),
    ("get", "/evals/runs", None, "read"),
    ("get", "/evals/runs/1", None, "read"),
    ("get", "/evals/runs/1/results", None, "read"),
    ("get", "/evals/runs/1/compare/2", None, "read"),
    ("get", "/evals/suites", None, "read"),
    ("get", "/corpora/sample/queries", None, "admin"),
    ("get", "/corpora/sample/feedback", None, "admin"),
    ("get", "/corpora/sample/gaps", None, "admin"),
    ("post", "/corpora/sample/gaps/2/eval-case", {"suite": "gaps", "expected_files": ["guides/retries.md"]}, "admin"),
    ("post", "/corpora/sample/gaps/2/dismiss", {"reason": "out of scope"}, "admin"),
    ("post", "/corpora/sample/gaps/2/fix", {"filepath": "guides/retries.md"}, "admin"),
    ("post", "/corpora/sample/feedback/3/eval-case", {"suite": "gaps"}, "admin"),
    ("post", "/corpora/sample/feedback/3/dismiss", {"reason": "out of scope"}, "admin"),
    ("post", "/corpora/sample/feedback/3/fix", {}, "admin"),
]
# The same paths as the OpenAPI schema writes them.
TEMPLATES = {SAMPLE_BUILD: "{build_id}", "sample": "{name}", "1": "{proposal_id}", "guides/retries.md": "{chunk_id}",
             "gaps/2": "gaps/{gap_id}", "feedback/3": "feedback/{feedback_id}"}
EVAL_TEMPLATES = {"/evals/runs/1": "/evals/runs/{run_id}", "/evals/runs/1/results": "/evals/runs/{run_id}/results",
                  "/evals/runs/1/compare/2": "/evals/runs/{run_id}/compare/{other_id}"}
IDS = [f"{m.upper()} {p}" for m, p, _, _ in ENDPOINTS]
# Authenticated by the sender's signature instead of a key (tests/corpus/test_git_webhooks.py).
SIGNED = {"/api/v1/hooks/git/{name}"}
OTHER_SCOPES = {"read": ["build", "write"], "build": ["read", "write"], "admin": ["read", "build", "write"]}


@pytest.fixture
def auth_required(settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""


def test_every_operation_is_in_the_matrix(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    documented = {(method, path.removeprefix("/api/v1")) for path, ops in schema["paths"].items() for method in ops
                  if path not in SIGNED}
    tested = {(method, _template(path)) for method, path, _body, _scope in ENDPOINTS}
    assert documented == tested


def _template(path: str) -> str:
    """An ENDPOINTS path as the OpenAPI schema writes it."""
    parts = path.split("?")[0].split("/corpora/")
    if len(parts) == 2:
        rest = parts[1]
        for concrete, template in TEMPLATES.items():
            rest = rest.replace(concrete, template)
        parts[1] = rest
    return EVAL_TEMPLATES.get(path, "/corpora/".join(parts))


@pytest.mark.parametrize("method, path, body, scope", ENDPOINTS, ids=IDS)
def test_without_a_key_is_401_when_auth_is_required(client, sample_corpus, auth_required, method, path, body, scope):
    response = call(client, method, path, body)
    assert_error(response, 401, "unauthorized", "Authorization: Bearer")
    assert response["WWW-Authenticate"] == ('Bearer realm="docsmcp", scope="read", resource_metadata='
                                            '"http://testserver/.well-known/oauth-protected-resource/api/v1/"')


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
def test_anonymous_callers_may_only_read_when_auth_is_optional(client, sample_corpus, index_root, settings, method,
                                                               path, body, scope):
    settings.MCP_AUTH_REQUIRED = False
    response = call(client, method, path, body)
    if scope == "read":
        assert response.status_code not in (401, 403), response.content
    else:
        assert_error(response, 403, "forbidden", "anonymous callers may only read")


def test_anonymous_post_corpora_is_refused_and_creates_nothing(client, db, settings):
    settings.MCP_AUTH_REQUIRED = False
    assert_error(call(client, "post", "/corpora", {"name": "sneaky", "kind": "chunks"}), 403, "forbidden")
    assert call(client, "get", "/corpora/sneaky").status_code == 404


def test_a_revoked_key_is_401(client, sample_corpus, auth_required):
    _row, key = create_api_key("old", ["read"])
    assert call(client, "get", "/corpora", key=key).status_code == 200
    revoke_api_keys(ApiKey.objects.filter(name="old"))
    assert_error(call(client, "get", "/corpora", key=key), 401, "unauthorized")


def test_the_env_key_holds_every_scope(client, sample_corpus, settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = "env-secret-key"
    assert call(client, "patch", "/corpora/sample", {"version": "4"}, key="env-secret-key").status_code == 200


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer not-a-real-key", "garbage"])
def test_a_malformed_or_unknown_key_is_401_never_anonymous(client, sample_corpus, settings, header):
    settings.MCP_AUTH_REQUIRED = False
    assert_error(client.get("/api/v1/corpora", HTTP_AUTHORIZATION=header), 401, "unauthorized")


def test_a_read_key_cannot_be_bypassed_by_garbling_it(client, sample_corpus, settings):
    settings.MCP_AUTH_REQUIRED = False
    _row, key = create_api_key("reader", ["read"])
    assert_error(call(client, "patch", "/corpora/sample", {"version": "9"}, key=key), 403, "forbidden")
    assert_error(call(client, "patch", "/corpora/sample", {"version": "9"}, key=key[:-1]), 401, "unauthorized")
    assert call(client, "get", "/corpora/sample").json()["version"] != "9"


def test_builds_record_who_requested_them(client, sample_corpus, index_root, auth_required):
    _row, key = create_api_key("sync-bot", ["build", "read"])
    assert call(client, "post", "/corpora/sample/builds", {"kind": "validate"}, key=key).json()["requested_by"] == \
        "api:sync-bot"


def test_docs_and_schema_need_no_key(client, db, auth_required):
    assert client.get("/api/v1/openapi.json").status_code == 200
    assert client.get("/api/v1/docs").status_code == 200
    assert client.get("/api/v1/docs/assets/swagger-ui-bundle.js").status_code == 200


@pytest.mark.parametrize("required", [False, True])
def test_the_schema_says_which_operations_need_a_key(client, db, settings, required):
    settings.MCP_AUTH_REQUIRED = required
    schema = client.get("/api/v1/openapi.json").json()
    scheme = schema["components"]["securitySchemes"]["ApiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer") and "x-docsmcp-scope" in scheme["description"]
    documented = {(method, path.removeprefix("/api/v1")): (operation.get("x-docsmcp-scope"), operation.get("security"))
                  for path, ops in schema["paths"].items() for method, operation in ops.items()}
    for method, path, _body, scope in ENDPOINTS:
        anonymous = scope == "read" and not required  # an anonymous read: the empty requirement comes first
        assert documented[(method, _template(path))] == (scope, [{}, {"ApiKey": []}] if anonymous else [{"ApiKey": []}])
    for path in SIGNED:
        assert documented[("post", path.removeprefix("/api/v1"))] == (None, None)


# --- origins, body types, staff sessions, corpus-limited keys -----------------------------------------


def test_an_evil_origin_is_403_under_the_defaults(client, sample_corpus):
    evil = client.get("/api/v1/corpora", HTTP_ORIGIN="http://evil.example")
    assert_error(evil, 403, "origin_not_allowed", "MCP_ALLOWED_ORIGINS")
    assert "Access-Control-Allow-Origin" not in evil
    _row, key = create_api_key("ops", ["admin"])
    assert_error(client.post("/api/v1/corpora", data='{"name": "x", "kind": "chunks"}', content_type="application/json",
                             HTTP_ORIGIN="http://evil.example", HTTP_AUTHORIZATION=f"Bearer {key}"), 403)
    for origin in ("http://localhost:3000", "http://127.0.0.1:8001", "https://[::1]"):
        assert client.get("/api/v1/corpora", HTTP_ORIGIN=origin).status_code == 200, origin


def test_an_explicit_wildcard_allows_any_origin(client, sample_corpus, settings):
    settings.MCP_ALLOWED_ORIGINS = ["*"]
    assert client.get("/api/v1/corpora", HTTP_ORIGIN="http://evil.example").status_code == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_write_that_is_not_json_is_415_and_writes_nothing(client, db, content_type):
    _row, key = create_api_key("ops", ["admin"])
    body = '{"name": "from-a-form", "kind": "chunks"}'
    response = client.generic("POST", "/api/v1/corpora", body, content_type=content_type,
                              HTTP_AUTHORIZATION=f"Bearer {key}")
    assert_error(response, 415, "unsupported_media_type", "application/json")
    assert call(client, "get", "/corpora/from-a-form").status_code == 404


def test_a_bare_post_needs_no_content_type(client, sample_corpus):
    _row, key = create_api_key("ops", ["build"])
    response = client.generic("POST", f"/api/v1/corpora/sample/builds/{SAMPLE_BUILD}/activate",
                              HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200, response.content


@pytest.fixture
def staff_client(admin_user):
    from django.test import Client

    staff = Client(enforce_csrf_checks=True)
    staff.force_login(admin_user)
    staff.get("/admin/password_change/")  # a page with a form: sets the csrftoken cookie
    return staff


def test_a_staff_session_writes_only_with_the_csrf_token(staff_client, sample_corpus):
    body = {"name": "staff-made", "kind": "chunks"}
    error = assert_error(call(staff_client, "post", "/corpora", body), 403, "forbidden", "CSRF")
    assert "X-CSRFToken" in error["message"]
    assert call(staff_client, "get", "/corpora/staff-made").status_code == 404
    token = staff_client.cookies["csrftoken"].value
    made = staff_client.post("/api/v1/corpora", data=json.dumps(body), content_type="application/json",
                             HTTP_X_CSRFTOKEN=token)
    assert made.status_code == 201, made.content
    build = staff_client.post("/api/v1/corpora/sample/builds", data='{"kind": "validate"}',
                              content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert build.status_code == 202 and build.json()["requested_by"] == "api:staff:admin"


def test_a_non_staff_session_is_anonymous(client, sample_corpus, django_user_model):
    user = django_user_model.objects.create_user("visitor", password="pw")
    client.force_login(user)
    assert_error(call(client, "post", "/corpora", {"name": "nope", "kind": "chunks"}), 403, "forbidden")


@pytest.fixture
def other_corpus(db):
    from corpus.models import Corpus

    return Corpus.objects.create(name="other", kind=Corpus.KIND_CHUNKS)


def test_a_corpus_limited_key_cannot_reach_other_corpora(client, sample_corpus, other_corpus):
    _row, key = create_api_key("other-only", ["admin"], ["other"])
    listed = call(client, "get", "/corpora", key=key).json()
    assert [c["name"] for c in listed["items"]] == ["other"] and listed["total"] == 1
    for method, path, body, _scope in ENDPOINTS:
        if "/corpora/sample" in path:
            response = call(client, method, path, body, key=key)
            assert_error(response, 404, "corpus_not_found")
            assert "sample" not in response.json()["error"]["message"].split("available:")[1]
    assert_error(call(client, "post", "/evals/runs", {"corpus": "sample", "suite": "none"}, key=key), 404)
    assert_error(call(client, "post", "/corpora", {"name": "elsewhere", "kind": "chunks"}, key=key), 403,
                 "corpus_not_allowed")
    assert call(client, "get", "/corpora/other", key=key).status_code == 200
    assert call(client, "get", "/corpora/sample").status_code == 200  # the limit was this key's, not the thread's


def test_a_key_limited_to_a_corpus_reads_it(client, sample_corpus, other_corpus):
    _row, key = create_api_key("sample-only", ["read"], ["sample"])
    assert call(client, "get", "/corpora/sample/search?query=retries", key=key).status_code == 200
    assert [c["name"] for c in call(client, "get", "/corpora", key=key).json()["items"]] == ["sample"]
