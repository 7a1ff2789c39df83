"""The OAuth endpoints anyone may call, against callers that abuse them: registration driven cross-site or in a
loop, client secrets guessed at the token endpoint, and a flood of registrations on the embedded SQLite database."""

from __future__ import annotations

import base64
import collections
import json
import os
import subprocess
import sys
import threading
import time

import httpx
import pytest
from django.contrib.auth.hashers import check_password

from tests.conftest import ROOT
from tests.oauth_helpers import REDIRECT, register

METADATA = {"client_name": "Test agent", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}


def _register(client, body: str | None = None, content_type: str = "application/json", **headers):
    return client.post("/oauth/register/", body or json.dumps(METADATA), content_type=content_type, **headers)


def test_registration_a_web_page_could_send_cross_site_is_refused(client, db):
    """A page can POST text/plain from any site without a CORS preflight: registration takes JSON only,
    and from the origins /mcp/ takes (MCP_ALLOWED_ORIGINS: loopback by default)."""
    plain = _register(client, content_type="text/plain")
    assert plain.status_code == 415 and "application/json" in plain.json()["error_description"]
    foreign = _register(client, HTTP_ORIGIN="http://evil.example")
    assert foreign.status_code == 403 and "MCP_ALLOWED_ORIGINS" in foreign.json()["error_description"]
    assert _register(client, HTTP_ORIGIN="http://localhost:6274").status_code == 201  # a local inspector


def test_a_plain_http_redirect_uri_is_registered_only_for_loopback(client, db):
    for uri in ("http://127.0.0.1:33418/callback", "http://localhost/cb", "http://[::1]:9/cb", "https://app.example/cb"):
        assert _register(client, json.dumps({**METADATA, "redirect_uris": [uri]})).status_code == 201, uri
    refused = _register(client, json.dumps({**METADATA, "redirect_uris": ["https://ok.example/cb",
                                                                          "http://app.example/cb"]}))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri"
    assert "http://app.example/cb" in refused.json()["error_description"]


def test_registrations_from_one_address_are_throttled_and_other_addresses_are_not(client, db, settings):
    settings.DOCSMCP_OAUTH_REGISTRATION_MAX = 3
    for _ in range(3):
        assert _register(client).status_code == 201
    refused = _register(client)
    assert refused.status_code == 429, refused.content
    assert int(refused["Retry-After"]) > 800  # the 15-minute window, less the seconds this test took
    assert "retry in" in refused.json()["error_description"]
    assert _register(client, REMOTE_ADDR="192.0.2.7").status_code == 201


def _confidential(client) -> tuple[str, str]:
    response = _register(client, json.dumps({**METADATA, "token_endpoint_auth_method": "client_secret_basic"}))
    assert response.status_code == 201, response.content
    return response.json()["client_id"], response.json()["client_secret"]


def _basic(client_id: str, secret: str) -> dict:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


def test_a_client_secret_is_stored_with_a_fast_salted_hash_and_still_verifies(client, db):
    """A generated secret needs no slow password hash; stored PBKDF2 would cost ~0.5 s per registration."""
    from oauth2_provider.models import get_application_model

    client_id, secret = _confidential(client)
    stored = get_application_model().objects.get(client_id=client_id).client_secret
    assert stored.startswith("docsmcp_secret_sha256$") and secret not in stored
    assert check_password(secret, stored) and not check_password(secret + "x", stored)
    response = client.post("/oauth/token/", {"grant_type": "authorization_code", "code": "nope",
                                             "redirect_uri": REDIRECT}, **_basic(client_id, secret))
    assert response.json()["error"] == "invalid_grant"  # authenticated; only the code is wrong


def test_failed_client_authentications_are_throttled_like_logins(client, db, settings):
    settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = 3
    client_id, secret = _confidential(client)
    attempt = {"grant_type": "authorization_code", "code": "nope", "redirect_uri": REDIRECT}
    for n in range(3):
        response = client.post("/oauth/token/", attempt, **_basic(client_id, f"guess-{n}"))
        assert response.json()["error"] == "invalid_client"
    refused = client.post("/oauth/token/", attempt, **_basic(client_id, secret))  # the right secret, too late
    assert refused.status_code == 429 and refused.json()["error"] == "invalid_client"
    assert "failed client authentications" in refused.json()["error_description"] and refused["Retry-After"]
    revoked = client.post("/oauth/revoke/", {"token": "x"}, **_basic(client_id, secret))
    assert revoked.status_code == 429
    # another address, the same client: the client's own count holds it
    assert client.post("/oauth/token/", attempt, REMOTE_ADDR="192.0.2.7",
                       **_basic(client_id, secret)).status_code == 429
    assert client.post("/admin/login/", {"username": "x", "password": "y"}).status_code == 200  # logins count apart
    from mcp_endpoint.models import LoginFailure

    assert LoginFailure.objects.filter(kind=LoginFailure.LOGIN).count() == 1


def test_a_successful_client_authentication_is_not_counted(client, db, settings):
    settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = 2
    client_id, secret = _confidential(client)
    for _ in range(4):
        response = client.post("/oauth/token/", {"grant_type": "authorization_code", "code": "nope",
                                                 "redirect_uri": REDIRECT}, **_basic(client_id, secret))
        assert response.json()["error"] == "invalid_grant"
    assert register(client)


# --- a real server on the embedded SQLite database -------------------------------------------------------

@pytest.mark.slow
def test_a_registration_flood_on_sqlite_gets_no_server_error(tmp_path):
    """12 threads registering for 8 s against `manage.py serve` with its defaults (SQLite), the throttle off so
    every registration writes: none is answered 5xx (a slow hash inside the write transaction made most of
    them 500 'database is locked')."""
    from tests.docsmcp_site.test_deploy_e2e import free_port, stop

    port = free_port()
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("CELERY_", "DJANGO_", "MCP_", "DATABASE_", "DOCSMCP_"))}
    environment.update(DOCSMCP_HOME=str(tmp_path / "home"), DOCSMCP_OAUTH_REGISTRATION_MAX="0")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "docsmcp_site", "serve", "--no-worker", "--port",
                                   str(port), "--workers", "2", "--threads", "6"],
                                  cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/health/", timeout=10).status_code in (200, 503):
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.25)
        statuses: collections.Counter = collections.Counter()
        stop_at = time.monotonic() + 8

        def flood() -> None:
            with httpx.Client(timeout=60) as http:
                while time.monotonic() < stop_at:
                    statuses[http.post(f"{base}/oauth/register/", json={
                        **METADATA, "token_endpoint_auth_method": "client_secret_basic"}).status_code] += 1

        threads = [threading.Thread(target=flood) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert statuses[201] > 0 and set(statuses) == {201}, (statuses, log.read_text(errors="replace")[-3000:])
    finally:
        stop(server)


def test_the_sign_in_page_does_not_ask_a_user_for_a_staff_account(client, db):
    from django.contrib.auth.models import User

    User.objects.create_user("reader", password="pw-reader-1")
    page = client.post("/accounts/login/", {"username": "reader", "password": "wrong"}).content.decode()
    assert "correct username and password" in page and "staff" not in page


def test_concurrent_registrations_from_one_address_pass_no_more_than_the_limit(transactional_db, settings):
    """16 threads released at once against a limit of 5: counting before any registration was recorded let
    every one of them through (28 of 12 threads' registrations against 20 in the issue). The count and the
    registration's row are one step now, so exactly the limit passes and the rest are told to wait."""
    from django.db import connection
    from django.test import Client

    from mcp_endpoint.models import LoginFailure

    settings.DOCSMCP_OAUTH_REGISTRATION_MAX = 5
    threads, start = 16, threading.Barrier(16)
    statuses: list[int] = []

    def register_once():
        try:
            start.wait(timeout=30)
            statuses.append(_register(Client()).status_code)
        finally:
            connection.close()

    workers = [threading.Thread(target=register_once) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    counts = collections.Counter(statuses)
    assert counts[201] == 5 and counts[429] == threads - 5, counts
    assert LoginFailure.objects.filter(kind=LoginFailure.REGISTRATION).count() == 5
    assert _register(Client(), REMOTE_ADDR="192.0.2.7").status_code == 201  # another address is not held


@pytest.mark.parametrize("endpoint", ["/oauth/token/", "/oauth/revoke/"])
def test_concurrent_wrong_client_secrets_pass_no_more_than_the_limit(transactional_db, settings, endpoint):
    """16 threads released at once against a limit of 5, each with a wrong secret for one client: a count taken
    before any failure was recorded let every secret be checked. A request that presents a secret is counted
    before the check now (given back when the secret is right), so exactly the limit is checked."""
    from django.db import connection
    from django.test import Client

    from mcp_endpoint.models import LoginFailure

    settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = 5
    client_id, secret = _confidential(Client())
    body = ({"grant_type": "authorization_code", "code": "nope", "redirect_uri": REDIRECT}
            if endpoint == "/oauth/token/" else {"token": "x"})
    threads, start = 16, threading.Barrier(16)
    statuses: list[int] = []

    def guess(n: int) -> None:
        try:
            start.wait(timeout=30)
            statuses.append(Client().post(endpoint, body, **_basic(client_id, f"guess-{n}")).status_code)
        finally:
            connection.close()

    workers = [threading.Thread(target=guess, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert collections.Counter(statuses) == {401: 5, 429: threads - 5}, statuses
    assert LoginFailure.objects.filter(kind=LoginFailure.CLIENT).count() == 5
    assert Client().post(endpoint, body, REMOTE_ADDR="192.0.2.7", **_basic(client_id, secret)).status_code == 429


def test_a_right_client_secret_gives_back_its_count(client, db, settings):
    """The count taken before the check is given back when the secret is right, whatever the grant's fate."""
    from mcp_endpoint.models import LoginFailure

    settings.DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = 2
    client_id, secret = _confidential(client)
    assert client.post("/oauth/revoke/", {"token": "x"}, **_basic(client_id, secret)).status_code == 200
    assert client.post("/oauth/token/", {"grant_type": "authorization_code", "code": "nope",
                                         "redirect_uri": REDIRECT}, **_basic(client_id, secret)).status_code == 400
    assert not LoginFailure.objects.filter(kind=LoginFailure.CLIENT).exists()
