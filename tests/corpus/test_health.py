"""GET /health/: who learns which corpora are served. With MCP_AUTH_REQUIRED a stranger gets the
status words and the checks, never corpus names or build IDs."""

from __future__ import annotations

import pytest
from django.test import Client

from corpus.apikeys import create_api_key
from corpus.models import Corpus

STATUS_FIELDS = {"status", "health", "ready", "service", "version", "protocol", "protocol_versions", "checks"}


@pytest.fixture
def two_corpora(sample_corpus, tmp_path):
    Corpus.objects.create(name="secret-project", source_dir=str(tmp_path))
    return sample_corpus


@pytest.fixture
def auth_required(settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""


def health(client: Client, key: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = client.get("/health/", headers=headers)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("path", ["/health", "/health/"])
def test_health_answers_with_and_without_the_slash_without_a_redirect(two_corpora, path):
    response = Client().get(path)
    assert response.status_code == 200 and "Location" not in response
    assert response.json()["health"] == "ok"


@pytest.mark.parametrize("path", ["/health/", "/"])
def test_anonymous_callers_learn_no_corpus_names_or_build_ids_when_auth_is_required(two_corpora, auth_required,
                                                                                     path):
    response = Client().get(path)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == STATUS_FIELDS and body["health"] == "ok" and body["status"] == "healthy"
    text = response.content.decode()
    assert "sample" not in text and "secret-project" not in text
    assert two_corpora.active_build.build_id not in text


def test_an_invalid_key_is_answered_like_an_anonymous_caller_not_401(two_corpora, auth_required):
    body = health(Client(), key="not-a-key")
    assert set(body) == STATUS_FIELDS


def test_a_key_sees_the_corpora_it_may_read(two_corpora, auth_required):
    _row, everything = create_api_key("monitor", ["read"])
    assert [c["corpus"] for c in health(Client(), everything)["corpora"]] == ["sample", "secret-project"]
    _row, limited = create_api_key("sample-only", ["read"], corpora=["sample"])
    (only,) = health(Client(), limited)["corpora"]
    assert only["corpus"] == "sample" and only["active_build"] == two_corpora.active_build.build_id


def test_a_staff_session_sees_every_corpus(two_corpora, auth_required, admin_client):
    assert [c["corpus"] for c in health(admin_client)["corpora"]] == ["sample", "secret-project"]


def test_without_auth_required_everyone_sees_the_corpora(two_corpora):
    assert [c["corpus"] for c in health(Client())["corpora"]] == ["sample", "secret-project"]
