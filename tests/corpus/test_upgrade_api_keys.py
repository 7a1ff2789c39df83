"""Upgrading keeps every API key: the keys moved from the mcp_endpoint app to corpus with their
table, rows, admin permissions and history, and an old admin link still finds them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import RequestFactory

from corpus.apikeys import authenticate, forget_cached_keys, hash_key
from corpus.models import ApiKey

# evals: its suites belong to a corpus from 0004, which needs corpus migrations after the move
MOVED_FROM = {"corpus": "0006_hook_deliveries", "mcp_endpoint": "0003_login_failures",
              "evals": "0003_case_answerable_coverage"}


def _latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _before_the_move() -> list[tuple[str, str]]:
    return [(app, MOVED_FROM.get(app, name)) for app, name in _latest()]


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_a_key_made_before_the_move_still_authenticates_and_keeps_its_admin_permissions():
    before = _before_the_move()
    _migrate(before)
    try:
        old = MigrationExecutor(connection).loader.project_state(before).apps
        old.get_model("mcp_endpoint", "ApiKey").objects.create(
            name="deploy-bot", prefix="k" * 8, key_hash=hash_key("the-old-key"), scopes=["read", "build"],
            corpora=["sample"])
        key_type, _ = old.get_model("contenttypes", "ContentType").objects.get_or_create(
            app_label="mcp_endpoint", model="apikey")
        permission, _ = old.get_model("auth", "Permission").objects.get_or_create(
            content_type=key_type, codename="change_apikey", defaults={"name": "Can change API key"})
        editor = User.objects.create_user("editor", is_staff=True)
        editor.user_permissions.add(permission.pk)
    finally:
        _migrate(_latest())

    row = ApiKey.objects.get(name="deploy-bot")
    assert (row.scopes, row.corpora) == (["read", "build"], ["sample"])
    forget_cached_keys()
    principal = authenticate(RequestFactory().get("/", HTTP_AUTHORIZATION="Bearer the-old-key"))
    assert principal is not None and principal.name == "deploy-bot" and principal.corpora == {"sample"}
    assert Permission.objects.get(pk=permission.pk).content_type.app_label == "corpus"
    assert User.objects.get(pk=editor.pk).has_perm("corpus.change_apikey")


def test_an_old_admin_link_to_the_keys_finds_them(admin_client):
    response = admin_client.get("/admin/mcp_endpoint/apikey/3/change/?x=1")
    assert response.status_code == 301 and response["Location"] == "/admin/corpus/apikey/3/change/?x=1"
    assert admin_client.get(response["Location"].split("?")[0].replace("3/change/", "")).status_code == 200
