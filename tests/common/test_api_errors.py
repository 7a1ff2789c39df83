"""REST API: one error shape for every failure, the OpenAPI schema, and docs that work offline."""

from __future__ import annotations

import re

import pytest

from corpus import selectors
from tests.api_helpers import assert_error, call


@pytest.fixture
def client(writer_client):
    """These tests write: every request carries an admin key (anonymous callers may only read)."""
    return writer_client


@pytest.mark.parametrize("path", ["/api/v1/nothing", "/api/v1/corpora/sample/builds/x/y/z", "/api/v1/corpora/",
                                  "/api/v1/corpora/sample/fixes/not-a-number"])
def test_an_unknown_route_under_the_api_is_a_json_404(client, db, path):
    assert_error(client.get(path), 404, "not_found", "no API route matches")


def test_a_wrong_method_is_a_json_405_naming_the_allowed_ones(client, db):
    response = client.put("/api/v1/corpora")
    error = assert_error(response, 405, "method_not_allowed")
    assert "GET" in error["message"] and "POST" in error["message"]
    assert set(response["Allow"].replace(" ", "").split(",")) == {"GET", "POST"}


def test_a_body_that_is_not_json_is_a_400_saying_so(client, db):
    assert_error(call(client, "post", "/corpora", raw=b"{'single': 'quotes'}"), 400, "bad_request", "not valid JSON")


def test_an_oversized_body_is_413(client, db, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = call(client, "post", "/corpora", {"name": "x", "description": "y" * 2000})
    assert_error(response, 413, "payload_too_large", "1000 bytes")


def test_validation_errors_list_each_field(client, db):
    error = assert_error(call(client, "post", "/corpora", {"name": 1, "aliases": "a", "extra": True}), 422)
    fields = {e["field"]: e for e in error["details"]["errors"]}
    assert set(fields) == {"name", "aliases", "extra"}
    assert fields["extra"]["type"] == "extra_forbidden" and fields["extra"]["location"] == "body"


def test_an_unexpected_crash_is_a_json_500_without_internals(client, sample_corpus, monkeypatch):
    def boom(name):
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(selectors, "corpus_get", boom)
    error = assert_error(call(client, "get", "/corpora/sample"), 500, "internal_error", "server log")
    assert "secret" not in error["message"]


def test_the_index_points_at_the_schema_docs_and_corpora(client, db):
    assert call(client, "get", "/").json() == {"name": "docsmcp REST API", "version": "1",
                                               "openapi": "/api/v1/openapi.json", "docs": "/api/v1/docs",
                                               "corpora": "/api/v1/corpora"}


def test_other_site_paths_keep_their_own_errors(client, db):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert b'"error"' not in response.content


def test_openapi_schema_documents_every_operation_with_the_error_shape(client, db):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "docsmcp REST API"
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]
    for path, operations in schema["paths"].items():
        assert path.startswith("/api/v1/")
        for method, operation in operations.items():
            assert operation["responses"]["4XX"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"}, (method, path)
            assert operation.get("description"), f"{method} {path} has no description"


def test_request_schemas_forbid_unknown_fields(client, db):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    for name in ("CorpusIn", "CorpusPatch", "BuildIn", "SearchIn", "RejectIn"):
        assert schemas[name]["additionalProperties"] is False, name


def test_enumerations_in_the_schema_come_from_the_code(client, db):
    from corpus.models import BuildRun
    from retrieval.embeddings import PROVIDERS

    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    assert schemas["BuildIn"]["properties"]["kind"]["enum"] == [k for k, _ in BuildRun.KIND_CHOICES]
    provider = schemas["BuildIn"]["properties"]["embedding_provider"]["anyOf"][0]
    assert provider["enum"] == sorted(PROVIDERS)


def test_docs_page_loads_its_assets_from_the_site_not_a_cdn(client, db):
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assets = re.findall(r'(?:href|src)="([^"]+)"', html)
    assert assets and all(a.startswith("/api/v1/docs/assets/") for a in assets), assets
    assert "cdn" not in html.lower()
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200, asset
        assert b"".join(response.streaming_content)
    assert '"url": "/api/v1/openapi.json"' in html


def test_docs_assets_are_a_fixed_list(client, db):
    assert_error(client.get("/api/v1/docs/assets/..%2F..%2Fmain.py"), 404)
    assert_error(client.get("/api/v1/docs/assets/redoc.standalone.js.map"), 404, "not_found")


def test_every_operation_is_documented_in_docs_api_md(client, db):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    schema = client.get("/api/v1/openapi.json").json()
    missing = [f"{method.upper()} {path.removeprefix('/api/v1')}" for path, ops in schema["paths"].items()
               for method in ops if f"{method.upper()} {path.removeprefix('/api/v1')}" not in text]
    assert not missing, f"add these to docs/api.md: {missing}"


@pytest.mark.parametrize("method, path, body", [
    ("post", "/corpora", {"name": "n", "kind": "chunks", "description": "a\x00b"}),
    ("post", "/corpora", {"name": "n", "kind": "chunks", "settings": {"k\x00": "v"}}),
    ("post", "/corpora", {"name": "n", "kind": "chunks", "aliases": ["ok", "a\x00"]}),
    ("post", "/corpora", {"name": "n", "kind": "chunks", "description": "\ud800"}),
    ("post", "/corpora", {"name": "n", "source_dir": "/tmp\x00/docs"}),
    ("patch", "/corpora/sample", {"version": "1\x00"}),
    ("post", "/corpora/sample/search", {"query": "retr\x00ies"}),
    ("post", "/corpora/sample/search", {"query": "retries", "filters": {"language": "py\x00"}}),
    ("get", "/corpora/sample/search?query=a%00b", None),
    ("get", "/corpora/sample/chunk?chunk_id=a%00b", None),
    ("post", "/corpora/sample/fixes/1/reject", {"reason": "r\x00"}),
])
def test_text_no_database_can_store_is_a_422_naming_the_field(client, sample_corpus, method, path, body):
    assert_error(call(client, method, path, body), 422, "validation_error", "text must")


@pytest.mark.parametrize("path", ["/corpora/a%00b", "/corpora/sample/builds/a%00b", "/corpora/sample/chunks/a%00b"])
def test_a_nul_in_the_url_path_is_a_400(client, sample_corpus, path):
    assert_error(call(client, "get", path), 400, "bad_request", "NUL")


def test_an_id_beyond_64_bits_is_a_422(client, sample_corpus):
    assert_error(call(client, "get", "/corpora/sample/fixes/99999999999999999999999"), 422, "validation_error",
                 "proposal_id")
