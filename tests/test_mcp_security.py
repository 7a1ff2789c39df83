"""Security of /mcp/ over real HTTP: Origin and Host checks, bearer keys, scopes, rate limits; key admin."""

from __future__ import annotations

import re

import pytest
from django.test import RequestFactory, override_settings

from mcp_endpoint import ratelimit
from mcp_endpoint.apikeys import (
    Principal,
    authenticate,
    bearer_token,
    create_api_key,
    hash_key,
    revoke_api_keys,
)
from mcp_endpoint.models import ApiKey
from mcp_endpoint.security import client_ip, origin_allowed
from tests import fixtures_mcp
from tests.fixtures_mcp import MODERN, modern_post, post

# pytest fixtures, bound here so the tests below can request them by name
echo_profile = fixtures_mcp.echo_profile
mcp_server = fixtures_mcp.mcp_server
mcp_http = fixtures_mcp.mcp_http
mcp_db_server = fixtures_mcp.mcp_db_server

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def echo_url(base: str) -> str:
    return f"{base}/mcp/echo/"


def assert_alive(mcp_http, url: str, headers: dict | None = None) -> None:
    response = post(mcp_http, url, PING, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == {}


def call(mcp_http, url: str, name: str, arguments: dict, headers: dict | None = None):
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return post(mcp_http, url, body, version="2025-11-25", headers=headers)


# --- Origin -----------------------------------------------------------------------------------


def test_origin_not_allowed_is_403(mcp_server, mcp_http, settings):
    settings.MCP_ALLOWED_ORIGINS = ["https://app.example.com"]
    url = echo_url(mcp_server)
    for origin in (
        "https://evil.example.com",
        "http://app.example.com",
        "https://app.example.com:8443",
        "null",
    ):
        response = post(mcp_http, url, PING, headers={"Origin": origin})
        assert response.status_code == 403, origin
        body = response.json()
        assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == -32600
        assert "access-control-allow-origin" not in response.headers
    for origin in ("https://app.example.com", "https://APP.example.com:443"):
        response = post(mcp_http, url, PING, headers={"Origin": origin})
        assert response.status_code == 200, origin
        assert response.headers["access-control-allow-origin"] == origin
    assert_alive(mcp_http, url)  # no Origin: not a browser, allowed


def test_origin_wildcard_allows_any(mcp_server, mcp_http, settings):
    settings.MCP_ALLOWED_ORIGINS = ["*"]
    response = post(mcp_http, echo_url(mcp_server), PING, headers={"Origin": "https://anything.example"})
    assert response.status_code == 200


def test_cors_preflight(mcp_server, mcp_http, settings):
    settings.MCP_ALLOWED_ORIGINS = ["https://app.example.com"]
    url = echo_url(mcp_server)
    ok = mcp_http.options(
        url,
        headers={
            "Origin": "https://app.example.com",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "mcp-param-region",
        },
    )
    assert ok.status_code == 204
    assert ok.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "mcp-param-region" in ok.headers["access-control-allow-headers"]
    assert "Mcp-Method" in ok.headers["access-control-allow-headers"]
    bad = mcp_http.options(
        url, headers={"Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"}
    )
    assert bad.status_code == 403


def test_origin_matching_rules():
    with override_settings(MCP_ALLOWED_ORIGINS=["https://a.example", "http://localhost:3000"]):
        assert origin_allowed(None)
        assert origin_allowed("https://a.example:443")
        assert origin_allowed("http://LOCALHOST:3000")
        assert not origin_allowed("http://localhost:3001")
        assert not origin_allowed("https://a.example.evil.com")
        assert not origin_allowed("not a url")


# --- Host (DNS rebinding) -----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:8001", "127.0.0.1.nip.io"])
def test_bad_host_is_refused_without_a_trace(mcp_server, mcp_http, host):
    url = echo_url(mcp_server)
    response = post(mcp_http, url, PING, headers={"Host": host, "Origin": f"http://{host}"})
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "Forbidden: Host not allowed"
    assert "Traceback" not in response.text
    assert_alive(mcp_http, url)


def test_localhost_hosts_accepted(mcp_server, mcp_http):
    port = mcp_server.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        assert post(mcp_http, echo_url(mcp_server), PING, headers={"Host": host}).status_code == 200


# --- bearer keys --------------------------------------------------------------------------------


def test_auth_required_without_key_is_401(mcp_db_server, mcp_http, settings):
    settings.MCP_AUTH_REQUIRED = True
    url = echo_url(mcp_db_server)
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic dXNlcjpwdw=="},
        {"Authorization": "Bearer"},
    ):
        response = post(mcp_http, url, PING, headers=headers)
        assert response.status_code == 401
        assert response.json() == {"detail": "Invalid API key"}
        assert response.headers["www-authenticate"] == 'Bearer realm="docsmcp"'
    settings.MCP_AUTH_REQUIRED = False
    assert_alive(mcp_http, url)


def test_env_key(mcp_db_server, mcp_http, settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = "s3cret-env-key"
    url = echo_url(mcp_db_server)
    result = call(
        mcp_http, url, "echo", {"text": "x"}, headers={"Authorization": "Bearer s3cret-env-key"}
    ).json()
    assert result["result"]["structuredContent"]["principal"] == "env"
    assert post(mcp_http, url, PING, headers={"Authorization": "bearer s3cret-env-key"}).status_code == 200
    assert post(mcp_http, url, PING, headers={"Authorization": "Bearer s3cret-env-ke"}).status_code == 401


def test_database_key_lifecycle(mcp_db_server, mcp_http, settings):
    settings.MCP_AUTH_REQUIRED = True
    row, key = create_api_key("ci-bot", ["read"])
    assert row.prefix == key[:8]
    assert row.key_hash == hash_key(key) and key not in (row.key_hash, row.prefix)
    assert not ApiKey.objects.filter(key_hash=key).exists()
    url = echo_url(mcp_db_server)
    auth = {"Authorization": f"Bearer {key}"}
    result = call(mcp_http, url, "echo", {"text": "x"}, headers=auth).json()["result"]
    assert result["structuredContent"]["principal"] == "ci-bot"
    row.refresh_from_db()
    assert row.last_used_at is not None
    # authenticated 2026 results must not be shared across keys
    discovered = modern_post(mcp_http, url, "server/discover", headers=auth).json()["result"]
    assert discovered["cacheScope"] == "private"
    revoke_api_keys(ApiKey.objects.filter(pk=row.pk))  # also drops this process's cached check of the key
    revoked = post(mcp_http, url, PING, headers=auth)
    assert revoked.status_code == 401
    assert revoked.json() == {"detail": "Invalid API key"}


def test_optional_auth_treats_bad_keys_as_anonymous(mcp_db_server, mcp_http):
    response = call(
        mcp_http, echo_url(mcp_db_server), "echo", {"text": "x"}, headers={"Authorization": "Bearer nope"}
    )
    assert response.json()["result"]["structuredContent"]["principal"] is None


def test_tool_scopes(mcp_db_server, mcp_http, settings):
    settings.MCP_AUTH_REQUIRED = True
    url = echo_url(mcp_db_server)
    _, build_key = create_api_key("builder", ["build"])
    _, read_key = create_api_key("reader", ["read"])
    _, write_key = create_api_key("writer", ["read", "write"])
    _, admin_key = create_api_key("admin", ["admin"])
    denied = call(
        mcp_http, url, "echo", {"text": "x"}, headers={"Authorization": f"Bearer {build_key}"}
    ).json()
    assert denied["result"]["isError"] is True
    assert "'read' scope" in denied["result"]["content"][0]["text"]
    store = call(mcp_http, url, "store", {}, headers={"Authorization": f"Bearer {read_key}"}).json()["result"]
    assert store["isError"] is True
    for key in (write_key, admin_key):
        ok = call(mcp_http, url, "store", {}, headers={"Authorization": f"Bearer {key}"}).json()["result"]
        assert ok == {"content": [{"type": "text", "text": "stored"}], "isError": False}


def test_create_api_key_rejects_unknown_scopes(db):
    with pytest.raises(ValueError, match="Unknown scope"):
        create_api_key("x", ["read", "root"])


def test_authenticate_and_principal(db, settings):
    settings.MCP_API_KEY = ""
    factory = RequestFactory()
    _, key = create_api_key("svc", ["write"])
    principal = authenticate(factory.post("/", HTTP_AUTHORIZATION=f"Bearer {key}"))
    assert principal is not None and principal.name == "svc"
    assert principal.has_scope("write") and not principal.has_scope("read")
    assert Principal("root", frozenset({"admin"})).has_scope("build")
    assert authenticate(factory.post("/")) is None
    assert authenticate(factory.post("/", HTTP_AUTHORIZATION="Bearer ")) is None
    assert bearer_token(factory.post("/", HTTP_AUTHORIZATION="Token abc")) is None
    assert bearer_token(factory.post("/", HTTP_AUTHORIZATION="  Bearer   abc  ")) == "abc"


# --- key admin ----------------------------------------------------------------------------------


def test_admin_creates_key_shown_once_and_revokes(admin_client):
    response = admin_client.post(
        "/admin/mcp_endpoint/apikey/add/", {"name": "dashboard", "scopes": ["read", "build"]}, follow=True
    )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    match = re.search(r"API key for “dashboard”: (\S+) — copy it now", " ".join(shown))
    assert match, shown
    key = match.group(1)
    row = ApiKey.objects.get(name="dashboard")
    assert row.key_hash == hash_key(key) and row.prefix == key[:8] and row.scopes == ["read", "build"]
    changelist = admin_client.get("/admin/mcp_endpoint/apikey/")
    assert key not in changelist.content.decode() and row.prefix in changelist.content.decode()
    edit = admin_client.get(f"/admin/mcp_endpoint/apikey/{row.pk}/change/")
    assert key not in edit.content.decode()

    admin_client.post(
        "/admin/mcp_endpoint/apikey/", {"action": "revoke", "_selected_action": [row.pk]}, follow=True
    )
    row.refresh_from_db()
    assert row.revoked_at is not None


# --- rate limits --------------------------------------------------------------------------------


@pytest.fixture
def frozen_clock(monkeypatch):
    """Pin the limiter's clock mid-window, so a test never straddles a minute boundary."""
    monkeypatch.setattr(ratelimit, "_now", lambda: 1_800_000_030.0)


def test_rate_limit_429_with_retry_after(mcp_server, mcp_http, settings, frozen_clock):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 3
    url = echo_url(mcp_server)
    for _ in range(3):
        assert post(mcp_http, url, PING).status_code == 200
    limited = post(mcp_http, url, PING)
    assert limited.status_code == 429
    retry_after = int(limited.headers["retry-after"])
    assert retry_after == 30
    body = limited.json()
    assert body["error"]["code"] == -32000 and body["error"]["data"]["retryAfter"] == retry_after
    assert post(mcp_http, url, PING).status_code == 429  # still refused, still answering
    # a keyed caller has its own budget
    settings.MCP_API_KEY = "k-rate"
    assert post(mcp_http, url, PING, headers={"Authorization": "Bearer k-rate"}).status_code == 200
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0  # 0 disables the limit
    assert_alive(mcp_http, url)


def _redis_available(url: str) -> bool:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
        return True
    except Exception:
        return False


REDIS_URL = "redis://127.0.0.1:6379/15"


@pytest.mark.skipif(not _redis_available(REDIS_URL), reason="no Redis on 127.0.0.1:6379")
def test_rate_limit_in_redis(mcp_server, mcp_http, settings, frozen_clock):
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter("docsmcp:ratelimit:*"):
        client.delete(key)
    settings.MCP_RATE_LIMIT_REDIS_URL = REDIS_URL
    settings.MCP_RATE_LIMIT_PER_MINUTE = 2
    url = echo_url(mcp_server)
    assert [post(mcp_http, url, PING).status_code for _ in range(3)] == [200, 200, 429]
    keys = list(client.scan_iter("docsmcp:ratelimit:*"))
    assert len(keys) == 1 and 0 < client.ttl(keys[0]) <= 61
    ratelimit.reset()  # the in-memory counter is not involved
    assert post(mcp_http, url, PING).status_code == 429


def test_rate_limit_fails_open_without_redis(mcp_server, mcp_http, settings):
    settings.MCP_RATE_LIMIT_REDIS_URL = "redis://127.0.0.1:1/0"
    settings.MCP_RATE_LIMIT_PER_MINUTE = 1
    url = echo_url(mcp_server)
    assert [post(mcp_http, url, PING).status_code for _ in range(3)] == [200, 200, 200]


def test_client_ip_behind_proxy(settings):
    factory = RequestFactory()
    request = factory.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="1.2.3.4, 5.6.7.8")
    settings.MCP_TRUST_X_FORWARDED_FOR = False
    assert client_ip(request) == "10.0.0.1"
    settings.MCP_TRUST_X_FORWARDED_FOR = True
    assert client_ip(request) == "5.6.7.8"


# --- refusals never break the server ------------------------------------------------------------


def test_server_keeps_answering_after_refusals(mcp_server, mcp_http, settings):
    url = echo_url(mcp_server)
    settings.MCP_MAX_BODY_BYTES = 1000
    assert post(mcp_http, url, None, raw=b"{" + b" " * 5000 + b"}").status_code == 413
    settings.MCP_AUTH_REQUIRED = True
    assert post(mcp_http, url, PING).status_code == 401
    settings.MCP_AUTH_REQUIRED = False
    assert post(mcp_http, url, PING, headers={"Host": "evil.example.com"}).status_code == 403
    assert post(mcp_http, url, PING, version=MODERN).status_code == 400
    assert_alive(mcp_http, url)


def test_apikey_command(db, capsys):
    from django.core.management import call_command

    call_command("mcp_apikey", "create", "deploy-bot", "--scopes", "read,build")
    key = capsys.readouterr().out.strip()
    row = ApiKey.objects.get(name="deploy-bot")
    assert row.key_hash == hash_key(key) and row.scopes == ["read", "build"]
    call_command("mcp_apikey", "list")
    assert row.prefix in capsys.readouterr().out
    call_command("mcp_apikey", "revoke", row.prefix)
    row.refresh_from_db()
    assert row.revoked_at is not None
