"""REST API: registering, reading, updating and deleting corpora, and every way to get it wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus.models import BuildRun, Corpus
from docsmcp_site import settings as defaults
from retrieval import storage
from tests.api_helpers import assert_error, call


@pytest.fixture
def client(writer_client):
    """These tests write: every request carries an admin key (anonymous callers may only read)."""
    return writer_client


@pytest.fixture
def docs_root(tmp_path, settings):
    """An allowed source root with two corpus directories in it."""
    root = tmp_path / "sources"
    (root / "alpha").mkdir(parents=True)
    (root / "beta").mkdir()
    settings.DOCSMCP_SOURCE_ROOTS = [str(root)]
    return root


def create(client, name: str, source_dir, **fields):
    return call(client, "post", "/corpora", {"name": name, "source_dir": str(source_dir), **fields})


def test_list_corpora_shows_the_sample_with_its_active_build_and_taxonomy(client, sample_corpus):
    response = call(client, "get", "/corpora")
    assert response.status_code == 200
    page = response.json()
    assert (page["total"], page["limit"], page["offset"], page["has_more"]) == (1, 50, 0, False)
    item = page["items"][0]
    assert item["name"] == "sample"
    assert item["version"] == "3.2"
    assert item["active_build"]["build_id"] == sample_corpus.active_build.build_id
    assert item["active_build"]["url"] == f"/api/v1/corpora/sample/builds/{sample_corpus.active_build.build_id}"
    assert item["taxonomy"]["language"] == ["go", "python", "typescript"]
    assert item["url"] == "/api/v1/corpora/sample"
    assert item["builds_url"] == "/api/v1/corpora/sample/builds"


def test_list_corpora_paginates_with_limit_and_offset(client, db, docs_root):
    for name in ("c1", "c2", "c3"):
        assert create(client, name, docs_root / "alpha").status_code == 201
    first = call(client, "get", "/corpora?limit=2").json()
    assert [c["name"] for c in first["items"]] == ["c1", "c2"]
    assert (first["total"], first["limit"], first["offset"], first["has_more"]) == (3, 2, 0, True)
    second = call(client, "get", "/corpora?limit=2&offset=2").json()
    assert [c["name"] for c in second["items"]] == ["c3"]
    assert second["has_more"] is False
    beyond = call(client, "get", "/corpora?offset=10").json()
    assert beyond["items"] == [] and beyond["total"] == 3


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=-1", "limit=abc", "offset=-1", "offset=x"])
def test_list_corpora_refuses_out_of_range_pagination(client, db, query):
    error = assert_error(call(client, "get", f"/corpora?{query}"), 422, "validation_error")
    assert error["details"]["errors"][0]["field"] == query.split("=")[0]


def test_create_corpus_returns_201_with_location(client, db, docs_root):
    response = create(client, "payments-docs", docs_root / "alpha", description="Payments", version="2",
                      aliases=["payments"], settings={"embedding_provider": "hash", "keep_builds": 2})
    assert response.status_code == 201, response.content
    assert response["Location"] == "/api/v1/corpora/payments-docs"
    body = response.json()
    assert body["source_dir"] == str((docs_root / "alpha").resolve())
    assert body["aliases"] == ["payments"]
    assert body["settings"] == {"embedding_provider": "hash", "keep_builds": 2}
    assert body["active_build"] is None and body["taxonomy"] == {}
    assert Corpus.objects.get(name="payments-docs").description == "Payments"


def test_registering_a_local_directory_with_a_remote_broker_says_workers_elsewhere_cannot_read_it(
        client, db, docs_root, settings):
    assert create(client, "local-only", docs_root / "alpha").json()["warnings"] == []
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = "redis://queue.internal:6379/0", False
    response = create(client, "payments-docs", docs_root / "alpha")
    assert response.status_code == 201
    [warning] = response.json()["warnings"]
    assert "a worker elsewhere cannot read it" in warning and "git repository" in warning


def test_get_corpus_by_alias_answers_with_its_canonical_name(client, db, docs_root):
    create(client, "payments-docs", docs_root / "alpha", aliases=["pay"])
    response = call(client, "get", "/corpora/pay")
    assert response.status_code == 200
    assert response.json()["name"] == "payments-docs"


def test_get_unknown_corpus_is_404_listing_the_available_ones(client, sample_corpus):
    assert_error(call(client, "get", "/corpora/nope"), 404, "corpus_not_found", "available: sample")


@pytest.mark.parametrize("name", ["Payments", "has space", "-leading-dash", "dots.not.allowed", "ü", "x" * 101])
def test_create_refuses_a_name_that_is_not_a_slug(client, db, docs_root, name):
    response = create(client, name, docs_root / "alpha")
    if len(name) > 100:
        assert_error(response, 422, "validation_error", "name")
    else:
        assert_error(response, 400, "bad_request", "not a slug")
    assert not Corpus.objects.exists()


def test_create_refuses_a_source_dir_outside_the_allowed_roots(client, db, docs_root, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    error = assert_error(create(client, "docs", outside), 400, "source_dir_not_allowed", "outside the allowed roots")
    assert "DOCSMCP_SOURCE_ROOTS" in error["message"]


def test_default_roots_refuse_a_system_directory_and_allow_var_sources(client, db, settings):
    """The defaults (sources/ in the data directory, a checkout's var/, and the bundled sample), as a fresh
    install has them."""
    settings.DOCSMCP_SOURCE_ROOTS = list(defaults.DOCSMCP_SOURCE_ROOTS)
    assert_error(create(client, "x", "/etc"), 400, "source_dir_not_allowed", "outside the allowed roots")
    assert not Corpus.objects.exists()
    sources = Path(defaults.DOCSMCP_HOME) / "sources" / "test-default-roots"
    sources.mkdir(parents=True, exist_ok=True)
    try:
        assert create(client, "x", sources).status_code == 201
    finally:
        sources.rmdir()


def test_create_refuses_a_traversal_out_of_the_allowed_roots(client, db, docs_root):
    assert_error(create(client, "docs", docs_root / "alpha" / ".." / ".."), 400, "source_dir_not_allowed")


def test_create_requires_a_source_dir(client, db):
    assert_error(call(client, "post", "/corpora", {"name": "docs", "source_dir": ""}), 400, "bad_request",
                 "source_dir is required")


@pytest.mark.parametrize("inside", ["missing", "a/b/missing", "x" * 200])
def test_create_refuses_a_source_dir_that_is_not_a_directory(client, db, docs_root, inside):
    assert_error(create(client, "docs", docs_root / inside), 400, "bad_request", "source_dir")


def test_a_missing_directory_outside_the_roots_is_refused_as_outside(client, db, docs_root):
    """Outside the roots nothing is looked at, so the answer never tells whether a path exists."""
    assert_error(create(client, "docs", "/no/such/dir"), 400, "source_dir_not_allowed")


def test_create_refuses_a_file_as_source_dir(client, db, docs_root):
    (docs_root / "alpha" / "README.md").write_text("# hi\n")
    assert_error(create(client, "docs", docs_root / "alpha" / "README.md"), 400, "bad_request", "not a directory")


def test_create_refuses_an_existing_name_or_alias(client, db, docs_root):
    assert create(client, "docs", docs_root / "alpha", aliases=["handbook"]).status_code == 201
    assert_error(create(client, "docs", docs_root / "beta"), 409, "corpus_exists", "already exists")
    assert_error(create(client, "handbook", docs_root / "beta"), 409, "corpus_exists")
    assert_error(create(client, "other", docs_root / "beta", aliases=["docs"]), 409, "corpus_exists")


@pytest.mark.parametrize("body, field", [
    ({"name": "docs", "source_dir": "/tmp", "colour": "red"}, "colour"),
    ({"source_dir": "/tmp"}, "name"),
    ({"name": 123, "source_dir": "/tmp"}, "name"),
    ({"name": "docs", "source_dir": ["/tmp"]}, "source_dir"),
    ({"name": "docs", "source_dir": "/tmp", "aliases": "one"}, "aliases"),
    ({"name": "docs", "source_dir": "/tmp", "settings": []}, "settings"),
    ({"name": "docs", "source_dir": "/tmp", "kind": "pdf"}, "kind"),
])
def test_create_refuses_unknown_fields_and_wrong_types_with_422(client, db, body, field):
    error = assert_error(call(client, "post", "/corpora", body), 422, "validation_error", field)
    assert field in [e["field"] for e in error["details"]["errors"]]


def test_unknown_field_message_says_to_remove_it(client, db):
    error = assert_error(call(client, "post", "/corpora", {"name": "d", "source_dir": "/tmp", "colour": 1}), 422)
    assert "colour: unknown field; remove it" in error["message"]


@pytest.mark.parametrize("raw", [b"{not json", b"", b"[1, 2]", b"null", b'"a string"'])
def test_create_refuses_a_body_that_is_not_a_json_object(client, db, raw):
    response = call(client, "post", "/corpora", raw=raw)
    assert response.status_code in (400, 422)
    assert_error(response, response.status_code)


def test_create_refuses_unknown_settings_values_with_a_message(client, db, docs_root):
    assert_error(create(client, "d", docs_root / "alpha", settings={"embedding_provider": "magic"}), 400,
                 message_contains="unknown embedding provider 'magic'")
    assert_error(create(client, "d", docs_root / "alpha", settings={"keep_builds": 0}), 400,
                 message_contains="keep_builds")


def test_create_refuses_aliases_that_are_not_slugs(client, db, docs_root):
    assert_error(create(client, "d", docs_root / "alpha", aliases=["Not A Slug"]), 400, message_contains="alias")


def test_create_a_chunks_corpus_needs_no_source_dir(client, db):
    response = call(client, "post", "/corpora", {"name": "notes", "kind": "chunks"})
    assert response.status_code == 201, response.content
    assert response.json()["kind"] == "chunks"


@pytest.mark.parametrize("option", ["base_url", "api_key", "headers"])
def test_a_corpus_may_not_set_where_embeddings_go_or_with_which_key(client, db, docs_root, option):
    settings = {"embedding_provider": "openai", "embedding_options": {option: "http://x", "model": "m"}}
    assert_error(create(client, "d", docs_root / "alpha", settings=settings), 400,
                 message_contains="OPENAI_BASE_URL, OPENAI_API_KEY")
    assert not Corpus.objects.filter(name="d").exists()
    create(client, "d", docs_root / "alpha", settings={"embedding_provider": "openai"})
    assert_error(call(client, "patch", "/corpora/d", {"settings": settings}), 400, message_contains=repr(option))
    assert Corpus.objects.get(name="d").settings == {"embedding_provider": "openai"}


def test_a_corpus_may_tune_its_embedding_model(client, db, docs_root):
    options = {"model": "text-embedding-3-large", "dimensions": 256, "batch_size": 64}
    body = create(client, "d", docs_root / "alpha",
                  settings={"embedding_provider": "openai", "embedding_options": options}).json()
    assert body["settings"]["embedding_options"] == options


def test_settings_sent_back_as_read_keep_their_secrets(client, db, docs_root):
    read = create(client, "d", docs_root / "alpha", settings={"search_token": "t0k", "keep_builds": 2}).json()
    assert read["settings"] == {"search_token": "***", "keep_builds": 2}
    read["settings"]["keep_builds"] = 3
    call(client, "patch", "/corpora/d", {"settings": read["settings"]})
    assert Corpus.objects.get(name="d").settings == {"search_token": "t0k", "keep_builds": 3}


def test_update_changes_only_the_fields_given(client, db, docs_root):
    create(client, "docs", docs_root / "alpha", description="old", version="1")
    response = call(client, "patch", "/corpora/docs", {"version": "2", "source_dir": str(docs_root / "beta"),
                                                      "aliases": ["handbook"], "settings": {"keep_builds": 5}})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["description"], body["version"]) == ("old", "2")
    assert body["source_dir"] == str((docs_root / "beta").resolve())
    assert body["aliases"] == ["handbook"]
    assert body["settings"] == {"keep_builds": 5}
    assert call(client, "patch", "/corpora/docs", {}).json()["version"] == "2"
    assert call(client, "patch", "/corpora/docs", {"description": None}).json()["description"] == "old"


def test_update_refuses_bad_input(client, db, docs_root, tmp_path):
    create(client, "docs", docs_root / "alpha")
    create(client, "other", docs_root / "beta")
    assert_error(call(client, "patch", "/corpora/docs", {"name": "renamed"}), 422, "validation_error", "name")
    assert_error(call(client, "patch", "/corpora/docs", {"version": 3}), 422, "validation_error")
    assert_error(call(client, "patch", "/corpora/docs", {"source_dir": str(tmp_path)}), 400,
                 "source_dir_not_allowed")
    assert_error(call(client, "patch", "/corpora/docs", {"aliases": ["other"]}), 409, "corpus_exists")
    assert_error(call(client, "patch", "/corpora/docs", {"settings": {"embedding_provider": "x"}}), 400)
    assert_error(call(client, "patch", "/corpora/missing", {"version": "2"}), 404, "corpus_not_found")


def test_delete_removes_the_corpus_and_its_index_directory(client, db, docs_root, any_index_root):
    create(client, "docs", docs_root / "alpha")
    storage.write_bytes(storage.join(any_index_root, "docs", "builds", "b1", "metadata.json"), b"{}")
    response = call(client, "delete", "/corpora/docs")
    assert response.status_code == 204
    assert not Corpus.objects.filter(name="docs").exists()
    assert not storage.exists(storage.join(any_index_root, "docs"))
    assert_error(call(client, "get", "/corpora/docs"), 404)
    assert_error(call(client, "delete", "/corpora/docs"), 404, "corpus_not_found")


def test_delete_is_refused_while_a_build_is_in_flight(client, sample_corpus):
    BuildRun.objects.create(corpus=sample_corpus, build_id="inflight", status=BuildRun.RUNNING)
    assert_error(call(client, "delete", "/corpora/sample"), 409, "build_in_progress", "cancel it")
    assert Corpus.objects.filter(name="sample").exists()


def test_the_admin_refuses_a_source_dir_outside_the_allowed_roots(admin_client, docs_root):
    form = {"name": "x", "kind": "markdown", "description": "", "version": "", "aliases": "[]", "settings": "{}",
            "taxonomy-TOTAL_FORMS": "0", "taxonomy-INITIAL_FORMS": "0"}
    page = admin_client.post("/admin/corpus/corpus/add/", {**form, "source_dir": "/etc"})
    assert page.status_code == 200 and "outside the allowed roots" in page.content.decode()
    assert not Corpus.objects.exists()
    admin_client.post("/admin/corpus/corpus/add/", {**form, "source_dir": str(docs_root / "alpha")})
    assert Corpus.objects.get(name="x").source_dir == str((docs_root / "alpha").resolve())


def test_a_read_only_caller_is_not_told_where_the_server_reads_a_corpus(client, db, docs_root):
    from django.test import Client

    from corpus.apikeys import create_api_key

    assert create(client, "payments-docs", docs_root / "alpha").status_code == 201
    _row, reader = create_api_key("reader", ["read"])
    for asking, key in ((client, reader), (Client(), None)):  # a read-only key, and an anonymous caller
        listed = call(asking, "get", "/corpora", key=key).json()["items"][0]
        assert listed["name"] == "payments-docs" and listed["source_dir"] == ""
        assert call(asking, "get", "/corpora/payments-docs", key=key).json()["source_dir"] == ""
    _row, builder = create_api_key("builder", ["read", "build"])
    built = call(client, "get", "/corpora/payments-docs", key=builder).json()
    assert built["source_dir"].endswith("alpha")
