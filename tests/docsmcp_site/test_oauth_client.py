"""The official MCP Python SDK's OAuth client (`OAuthClientProvider`) against a live server of ours: discovery
from a 401, dynamic registration, sign-in as a Django user (the login and consent pages driven by an HTTP
client in the redirect handler), tokens, tools/list and a search, refresh, revocation, and signing in again
for a scope a tool needs (step-up)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.fixtures_mcp import docs_server, echo_profile, mcp_db_server, mcp_server  # noqa: F401
from tests.oauth_helpers import hidden_fields

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """The client's token storage."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class SignIn:
    """What a user does in the browser, done with an HTTP client: log in, read the consent page, allow."""

    def __init__(self, username: str, password: str):
        self.username, self.password = username, password
        self.code = self.state = None
        self.consent_pages: list[str] = []
        self.scopes_asked: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        self.scopes_asked.append(parse_qs(urlsplit(authorization_url).query).get("scope", [""])[0])
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.get(authorization_url)
            assert response.status_code == 302 and "/accounts/login/" in response.headers["location"]
            login_url = urljoin(authorization_url, response.headers["location"])
            page = await http.get(login_url)
            form = {**hidden_fields(page.text), "username": self.username, "password": self.password}
            response = await http.post(login_url, data=form, headers={"Referer": login_url})
            assert response.status_code == 302, response.text
            consent_url = urljoin(login_url, response.headers["location"])
            page = await http.get(consent_url)
            assert page.status_code == 200, page.text
            self.consent_pages.append(page.text)
            response = await http.post(consent_url, data={**hidden_fields(page.text), "allow": "Allow"},
                                       headers={"Referer": consent_url})
            assert response.status_code == 302, response.text
            location = response.headers["location"]
            assert location.startswith(REDIRECT), location
            answer = parse_qs(urlsplit(location).query)
            self.code, self.state = answer["code"][0], answer["state"][0]

    async def callback(self):
        from mcp.shared.auth import AuthorizationCodeResult

        return AuthorizationCodeResult(code=self.code, state=self.state)


def provider(url: str, storage: Memory, sign_in: SignIn, scope: str | None = None):
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    metadata = OAuthClientMetadata(client_name="SDK test agent", redirect_uris=[REDIRECT],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="none", scope=scope)
    return OAuthClientProvider(server_url=url, client_metadata=metadata, storage=storage,
                               redirect_handler=sign_in.redirect, callback_handler=sign_in.callback)


async def session_work(url: str, auth) -> dict:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(auth=auth, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = await client.list_tools()
        result = await client.call_tool("search_docs", {"query": "retries"})
        return {"tools": [t.name for t in tools.tools], "error": result.is_error,
                "text": result.content[0].text if result.content else ""}


@pytest.fixture
def signed_in_server(transactional_db, docs_server, settings):  # noqa: F811
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""
    User.objects.create_user("ada", password="pw-ada-123")
    return docs_server


def test_the_sdks_oauth_client_signs_in_searches_refreshes_and_is_revoked(signed_in_server):
    from oauth2_provider.models import AccessToken

    url = f"{signed_in_server}/mcp/c/sample/"
    challenge = httpx.post(url, json={})
    assert challenge.status_code == 401 and 'scope="read"' in challenge.headers["www-authenticate"]
    storage, sign_in = Memory(), SignIn("ada", "pw-ada-123")

    client = provider(url, storage, sign_in)
    outcome = asyncio.run(session_work(url, client))
    assert "search_docs" in outcome["tools"] and not outcome["error"], outcome
    assert "retr" in outcome["text"].lower()
    assert "SDK test agent" in sign_in.consent_pages[0]
    assert sign_in.scopes_asked == ["read"]  # the 401's scope, not every scope the metadata lists
    assert storage.client_info.client_id and storage.tokens.refresh_token
    row = AccessToken.objects.get(user__username="ada")  # (registration gives the client a token with no user)
    assert row.resource == [url] and row.user.username == "ada"

    # The access token runs out: the client refreshes (the refresh token rotates) and carries on.
    first_refresh = storage.tokens.refresh_token
    AccessToken.objects.filter(pk=row.pk).update(expires=timezone.now() - timedelta(minutes=1))
    client.context.token_expiry_time = time.time() - 1
    again = asyncio.run(session_work(url, client))
    assert not again["error"] and storage.tokens.refresh_token != first_refresh
    assert len(sign_in.consent_pages) == 1

    # Revoked: the server refuses the token at once.
    access = storage.tokens.access_token
    revoked = httpx.post(f"{signed_in_server}/oauth/revoke/",
                         data={"token": access, "client_id": storage.client_info.client_id})
    assert revoked.status_code == 200
    refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                         headers={"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]


async def write_work(url: str, auth) -> dict:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(auth=auth, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("store", {})
        return {"error": result.is_error, "text": result.content[0].text if result.content else ""}


def test_the_sdk_steps_up_when_a_tool_needs_a_scope_its_token_lacks(mcp_db_server, settings):  # noqa: F811
    """A token for `read` calls a tool that needs `write`: the server's 403 insufficient_scope challenge sends
    the SDK through sign-in again for read and write, and the call then goes through."""
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from tests.oauth_helpers import pkce

    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""
    User.objects.create_user("grace", password="pw-grace-123", is_staff=True)  # staff may hold write
    url = f"{mcp_db_server}/mcp/echo/"
    registered = httpx.post(f"{mcp_db_server}/oauth/register/", json={
        "client_name": "SDK test agent", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}).json()
    sign_in = SignIn("grace", "pw-grace-123")
    verifier, challenge = pkce()
    query = {"response_type": "code", "client_id": registered["client_id"], "redirect_uri": REDIRECT,
             "scope": "read", "state": "s1", "resource": url, "code_challenge": challenge,
             "code_challenge_method": "S256"}
    asyncio.run(sign_in.redirect(f"{mcp_db_server}/oauth/authorize/?{httpx.QueryParams(query)}"))
    first = httpx.post(f"{mcp_db_server}/oauth/token/", data={
        "grant_type": "authorization_code", "code": sign_in.code, "redirect_uri": REDIRECT,
        "client_id": registered["client_id"], "code_verifier": verifier, "resource": url}).json()
    assert first["scope"] == "read", first

    storage = Memory()
    storage.tokens = OAuthToken(**{k: first[k] for k in ("access_token", "token_type", "expires_in",
                                                          "refresh_token", "scope")})
    storage.client_info = OAuthClientInformationFull(**registered)
    outcome = asyncio.run(write_work(url, provider(url, storage, sign_in, scope="read")))
    assert not outcome["error"] and outcome["text"] == "stored", outcome
    assert len(sign_in.consent_pages) == 2 and "call tools that write" in sign_in.consent_pages[1]
    assert set(sign_in.scopes_asked[1].split()) == {"read", "write"}
    assert set(storage.tokens.scope.split()) == {"read", "write"}
