"""Signing in for a remote client in a real browser: the login page, the consent page naming the client
and its scopes, Allow, and the code that comes back works for /mcp/; Cancel sends the client away empty.

Debian's chromium driven by Playwright against the live server; skipped, with the reason, without it.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.fixtures_mcp import docs_server  # noqa: F401
from tests.oauth_helpers import REDIRECT, authorize_query, pkce

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def server(docs_server, settings, django_user_model):  # noqa: F811
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""
    django_user_model.objects.create_user("grace", password="pw-grace-123", is_staff=True)
    return docs_server


def register(base: str) -> str:
    response = httpx.post(f"{base}/oauth/register/", json={
        "client_name": "Browser Agent", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]})
    assert response.status_code == 201, response.text
    return response.json()["client_id"]


def open_consent(browser, base: str, client_id: str, challenge: str, artifacts_dir):
    context = browser.new_context(base_url=base)
    page = context.new_page()
    page.set_default_timeout(15_000)
    sent_back: list[str] = []
    page.route(REDIRECT.rsplit("/", 1)[0] + "/**",
               lambda route: (sent_back.append(route.request.url), route.fulfill(status=200, body="done")))
    page.goto(authorize_query(client_id, challenge, f"{base}/mcp/", scope="read write"))
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "grace")
    page.fill("#id_password", "pw-grace-123")
    page.click("input[type=submit]")
    page.wait_for_selector("#client-name")
    page.screenshot(path=str(artifacts_dir / "oauth-consent.png"), full_page=True)
    return context, page, sent_back


def test_consent_in_a_browser_gives_a_code_that_works(browser, server, artifacts_dir):
    client_id = register(server)
    verifier, challenge = pkce()
    context, page, sent_back = open_consent(browser, server, client_id, challenge, artifacts_dir)
    try:
        assert page.inner_text("#client-name") == "Browser Agent"
        scopes = page.inner_text("#scopes")
        assert "search and read the documentation" in scopes and "call tools that write" in scopes
        page.click("input[name=allow]")
        page.wait_for_function("() => document.body.innerText.includes('done')")
    finally:
        context.close()
    answer = parse_qs(urlsplit(sent_back[0]).query)
    tokens = httpx.post(f"{server}/oauth/token/", data={
        "grant_type": "authorization_code", "code": answer["code"][0], "redirect_uri": REDIRECT,
        "client_id": client_id, "code_verifier": verifier, "resource": f"{server}/mcp/"}).json()
    listed = httpx.post(f"{server}/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"Authorization": f"Bearer {tokens['access_token']}",
                                 "Accept": "application/json, text/event-stream",
                                 "MCP-Protocol-Version": "2025-11-25"})
    assert listed.status_code == 200, listed.text
    assert "search_docs" in listed.text


def test_cancel_sends_the_client_away_without_a_code(browser, server, artifacts_dir):
    context, page, sent_back = open_consent(browser, server, register(server), pkce()[1], artifacts_dir)
    try:
        page.click("input[value=Cancel]")
        page.wait_for_function("() => document.body.innerText.includes('done')")
    finally:
        context.close()
    answer = parse_qs(urlsplit(sent_back[0]).query)
    assert answer["error"] == ["access_denied"] and "code" not in answer
