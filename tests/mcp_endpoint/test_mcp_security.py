"""Security of /mcp/ over real HTTP: Origin and Host checks, bearer keys, scopes, rate limits; key admin."""

from __future__ import annotations

import json
import re
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import RequestFactory, override_settings

from common.callers import Principal, bearer_token
from common.errors import InvalidApiKey
from corpus.apikeys import authenticate, create_api_key, hash_key, revoke_api_keys
from corpus.models import ApiKey
from mcp_endpoint import ratelimit
from mcp_endpoint.security import client_ip, origin_allowed
from tests import fixtures_mcp, services
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


@pytest.mark.parametrize("origin", ["http://localhost:5173", "https://127.0.0.1", "http://[::1]:8080"])
def test_default_origins_are_loopback_only(mcp_server, mcp_http, origin):
    url = echo_url(mcp_server)
    assert post(mcp_http, url, PING, headers={"Origin": origin}).status_code == 200
    evil = post(mcp_http, url, PING, headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403
    assert evil.json()["error"]["message"] == "Forbidden: Origin not allowed"
    assert "access-control-allow-origin" not in evil.headers


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
    with override_settings(MCP_ALLOWED_ORIGINS=["http://localhost:*"]):
        assert origin_allowed("http://localhost:1234") and origin_allowed("http://localhost")
        assert not origin_allowed("https://localhost:1234")
        assert not origin_allowed("http://localhost.evil.example:1234")


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


def _auth_error(response) -> str:
    """The message of a 401 answered in the protocol's error shape."""
    assert response.status_code == 401
    body = response.json()
    assert (body["jsonrpc"], body["id"], set(body["error"])) == ("2.0", None, {"code", "message"})
    return body["error"]["message"]


def test_auth_required_without_key_is_401(mcp_db_server, mcp_http, settings):
    settings.MCP_AUTH_REQUIRED = True
    url = echo_url(mcp_db_server)
    anonymous = post(mcp_http, url, PING)
    assert "requires an API key" in _auth_error(anonymous)
    assert "send the header `Authorization: Bearer <key>`" in _auth_error(anonymous)
    metadata = "/.well-known/oauth-protected-resource" + urlsplit(url).path.rstrip("/") + "/"
    assert anonymous.headers["www-authenticate"] == (
        f'Bearer realm="docsmcp", scope="read", resource_metadata="{urljoin(url, metadata)}"')
    for headers in (
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic dXNlcjpwdw=="},
        {"Authorization": "Bearer"},
    ):
        response = post(mcp_http, url, PING, headers=headers)
        message = _auth_error(response)
        assert "not valid" in message or "malformed" in message, message
        assert response.headers["www-authenticate"] == (
            f'Bearer realm="docsmcp", error="invalid_token", scope="read", resource_metadata="{urljoin(url, metadata)}"')
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
    assert "API key is not valid" in _auth_error(revoked)


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer", "Basic dXNlcjpwdw==", "nonsense"])
def test_a_bad_key_is_401_even_when_auth_is_optional(mcp_db_server, mcp_http, header):
    response = call(mcp_http, echo_url(mcp_db_server), "echo", {"text": "x"}, headers={"Authorization": header})
    assert "Authorization: Bearer <key>" in _auth_error(response) or "not valid" in _auth_error(response)


def test_anonymous_callers_may_only_read(mcp_db_server, mcp_http):
    url = echo_url(mcp_db_server)
    read = call(mcp_http, url, "echo", {"text": "x"}).json()["result"]
    assert read["isError"] is False and read["structuredContent"]["principal"] is None
    store = call(mcp_http, url, "store", {}).json()["result"]
    assert store["isError"] is True and "'write' scope" in store["content"][0]["text"]


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
    for header in ("Bearer ", "Token abc", "Bearer unknown"):
        with pytest.raises(InvalidApiKey):
            authenticate(factory.post("/", HTTP_AUTHORIZATION=header))
    assert bearer_token(factory.post("/", HTTP_AUTHORIZATION="Token abc")) is None
    assert bearer_token(factory.post("/", HTTP_AUTHORIZATION="  Bearer   abc  ")) == "abc"


# --- key admin ----------------------------------------------------------------------------------


def test_admin_creates_key_shown_once_and_revokes(admin_client):
    response = admin_client.post(
        "/admin/corpus/apikey/add/", {"name": "dashboard", "scopes": ["read", "build"]}, follow=True
    )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    match = re.search(r"API key for “dashboard”: (\S+) — copy it now", " ".join(shown))
    assert match, shown
    key = match.group(1)
    row = ApiKey.objects.get(name="dashboard")
    assert row.key_hash == hash_key(key) and row.prefix == key[:8] and row.scopes == ["read", "build"]
    assert row.corpora == []
    changelist = admin_client.get("/admin/corpus/apikey/")
    assert key not in changelist.content.decode() and row.prefix in changelist.content.decode()
    edit = admin_client.get(f"/admin/corpus/apikey/{row.pk}/change/")
    assert key not in edit.content.decode()

    admin_client.post(f"/admin/corpus/apikey/{row.pk}/change/",
                      {"name": "dashboard", "scopes": ["read"], "corpora": "payments, sample,payments"})
    row.refresh_from_db()
    assert row.corpora == ["payments", "sample"] and row.scopes == ["read"]
    assert "payments, sample" in admin_client.get(f"/admin/corpus/apikey/{row.pk}/change/").content.decode()
    assert "payments, sample" in admin_client.get("/admin/corpus/apikey/").content.decode()

    admin_client.post(
        "/admin/corpus/apikey/", {"action": "revoke", "_selected_action": [row.pk]}, follow=True
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


@pytest.fixture
def frozen_window_in_redis(frozen_clock):
    """The test Redis database (DOCSMCP_TEST_REDIS_URL), its keys of the frozen window removed before and after."""
    reason = services.redis_unreachable_reason()
    if reason:
        pytest.skip(reason)
    window = f"docsmcp:ratelimit:*:{int(ratelimit._now() // ratelimit.WINDOW_SECONDS)}"
    services.delete_redis_keys(window)
    yield services.redis_client(), window
    services.delete_redis_keys(window)


def test_rate_limit_in_redis(mcp_server, mcp_http, settings, frozen_window_in_redis):
    client, window = frozen_window_in_redis
    settings.MCP_RATE_LIMIT_REDIS_URL = services.REDIS_URL
    settings.MCP_RATE_LIMIT_PER_MINUTE = 2
    url = echo_url(mcp_server)
    assert [post(mcp_http, url, PING).status_code for _ in range(3)] == [200, 200, 429]
    keys = list(client.scan_iter(window))
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
    call_command("mcp_apikey", "corpora", row.prefix, "sample,payments")
    row.refresh_from_db()
    assert row.corpora == ["payments", "sample"]
    call_command("mcp_apikey", "corpora", row.prefix, "")
    row.refresh_from_db()
    assert row.corpora == []
    call_command("mcp_apikey", "create", "scoped-bot", "--corpora", "sample")
    capsys.readouterr()
    assert ApiKey.objects.get(name="scoped-bot").corpora == ["sample"]
    call_command("mcp_apikey", "revoke", row.prefix)
    row.refresh_from_db()
    assert row.revoked_at is not None


def test_no_key_starts_with_a_dash_that_the_command_line_would_take_for_an_option(db, capsys, monkeypatch):
    from django.core.management import call_command

    from corpus import apikeys

    drawn = iter(["-" + "a" * 42, "b" * 43])
    monkeypatch.setattr(apikeys.secrets, "token_urlsafe", lambda size: next(drawn))
    call_command("mcp_apikey", "create", "dash-bot")
    key = capsys.readouterr().out.strip()
    assert key == "b" * 43
    call_command("mcp_apikey", "corpora", key[:8], "sample")
    assert ApiKey.objects.get(name="dash-bot").corpora == ["sample"]


# --- corpus-limited keys ------------------------------------------------------------------------


docs_server = fixtures_mcp.docs_server


def tool_result(mcp_http, url: str, name: str, arguments: dict, key: str) -> dict:
    response = call(mcp_http, url, name, arguments, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_a_corpus_limited_key_cannot_read_another_corpus(docs_server, mcp_http):
    from corpus.models import Corpus

    Corpus.objects.create(name="other", source_dir="/nonexistent")
    _, other_only = create_api_key("other-only", ["read"], ["other"])
    _, sample_only = create_api_key("sample-only", ["read"], ["sample"])
    scoped = post(mcp_http, f"{docs_server}/mcp/c/sample/", PING, headers={"Authorization": f"Bearer {other_only}"})
    assert scoped.status_code == 404 and "not found" in scoped.json()["error"]["message"]
    search = tool_result(mcp_http, f"{docs_server}/mcp/", "search_docs", {"query": "retries"}, other_only)
    assert search["isError"] is True
    get_doc = tool_result(mcp_http, f"{docs_server}/mcp/", "get_doc", {"chunk_id": "guides/retries.md"}, other_only)
    assert get_doc["isError"] is True
    documents = f"{docs_server}/mcp/documents/"
    listed = tool_result(mcp_http, documents, "documents_list_collections", {}, other_only)
    assert [c["collection"] for c in listed["structuredContent"]["collections"]] == ["other"]
    outline = tool_result(mcp_http, documents, "documents_get_outline",
                          {"collection": "sample", "document": "guides/retries.md"}, other_only)
    assert outline["isError"] is True and "not found" in outline["content"][0]["text"]
    techdoc = tool_result(mcp_http, f"{docs_server}/mcp/techdoc/", "search_documentation", {"query": "retries"},
                          other_only)
    assert "sample/" not in json.dumps(techdoc)
    # the same requests with a key limited to the sample corpus (or no key at all) are answered
    assert tool_result(mcp_http, f"{docs_server}/mcp/", "search_docs", {"query": "retries"}, sample_only)[
        "isError"] is False
    assert post(mcp_http, f"{docs_server}/mcp/c/sample/", PING,
                headers={"Authorization": f"Bearer {sample_only}"}).status_code == 200
    assert post(mcp_http, f"{docs_server}/mcp/c/sample/", PING).status_code == 200
