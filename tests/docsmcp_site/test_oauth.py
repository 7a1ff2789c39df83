"""OAuth 2.1 sign-in for /mcp/ and /api/v1/ (the MCP authorization specification): metadata, the built-in
authorization server's flow and its refusals, tokens as callers beside API keys, an external issuer."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.utils import timezone

from corpus.apikeys import create_api_key
from tests.fixtures_mcp import echo_profile  # noqa: F401
from tests.oauth_helpers import (
    REDIRECT,
    authorize_query,
    consent,
    hidden_fields,
    json_server,
    pkce,
    register,
    sign_in,
    token,
)

MCP = "http://testserver/mcp/"
API = "http://testserver/api/v1/"


@pytest.fixture
def auth_required(settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""


@pytest.fixture
def reader(db):
    return User.objects.create_user("reader", password="pw-reader-1")


def bearer(access: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {access}"}


def test_resource_metadata_names_the_server_and_scopes(client, db):
    for path, resource in [("", "http://testserver"), ("/mcp/", MCP), ("/mcp/c/sample/", "http://testserver/mcp/c/sample/"),
                           ("/api/v1/", API)]:
        doc = client.get("/.well-known/oauth-protected-resource" + path).json()
        assert doc["resource"] == resource
        assert doc["authorization_servers"] == ["http://testserver"]
        assert doc["scopes_supported"] == ["admin", "build", "read", "write"]


def test_behind_a_tls_proxy_the_metadata_names_https_urls_only_when_trusted(client, db, settings):
    """A proxy that terminates TLS forwards plain HTTP: clients must be told the https:// URLs they
    use, but a caller reaching the server directly must not be able to choose the scheme."""
    forwarded = {"HTTP_HOST": "testserver", "HTTP_X_FORWARDED_PROTO": "https"}  # as nginx sends them
    doc = client.get("/.well-known/oauth-protected-resource/mcp/", **forwarded).json()
    assert doc["resource"] == MCP and doc["authorization_servers"] == ["http://testserver"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    doc = client.get("/.well-known/oauth-protected-resource/mcp/", **forwarded).json()
    assert doc["resource"] == "https://testserver/mcp/"
    assert doc["authorization_servers"] == ["https://testserver"]
    assert client.get("/.well-known/oauth-authorization-server", **forwarded).json()["issuer"] == "https://testserver"


def test_authorization_server_metadata_offers_code_with_s256_only(client, db):
    doc = client.get("/.well-known/oauth-authorization-server").json()
    assert doc["issuer"] == "http://testserver"
    assert doc["response_types_supported"] == ["code"]
    assert doc["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["authorization_endpoint"] == "http://testserver/oauth/authorize/"
    assert doc["token_endpoint"] == "http://testserver/oauth/token/"
    assert doc["registration_endpoint"] == "http://testserver/oauth/register/"
    assert "none" in doc["token_endpoint_auth_methods_supported"]
    assert doc["client_id_metadata_document_supported"] is True


def test_401_points_at_the_resource_metadata_and_names_the_scope_reading_needs(client, sample_corpus,
                                                                                auth_required):
    """The challenge's `scope` is what a client asks for at first sign-in: `read`, the least, even before a
    call that needs more (that one steps up), and after a token stops being valid."""
    well_known = "http://testserver/.well-known/oauth-protected-resource"
    for method, path, metadata in [("get", "/api/v1/corpora", "/api/v1/"), ("post", "/api/v1/corpora", "/api/v1/"),
                                   ("post", "/mcp/", "/mcp/"), ("post", "/mcp/c/sample/", "/mcp/c/sample/"),
                                   ("get", "/c/sample/llms.txt", "")]:
        for headers in ({}, bearer("docsmcp_at.revoked-or-never-issued")):
            response = client.post(path, "{}", content_type="application/json", **headers) if method == "post" \
                else client.get(path, **headers)
            assert response.status_code == 401, (path, response.content)
            challenge = response["WWW-Authenticate"]
            assert 'scope="read"' in challenge and f'resource_metadata="{well_known}{metadata}"' in challenge, \
                (path, challenge)
            assert ('error="invalid_token"' in challenge) == bool(headers), (path, challenge)


def test_sign_in_token_reads_refreshes_with_rotation_and_revokes(client, sample_corpus, auth_required, reader):
    client_id = register(client)
    tokens = sign_in(client, reader, client_id, API)
    assert tokens["scope"] == "read" and tokens["token_type"] == "Bearer"
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).status_code == 200

    fresh = token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client_id)
    assert fresh["status"] == 200 and fresh["refresh_token"] != tokens["refresh_token"]
    assert client.get("/api/v1/corpora", **bearer(fresh["access_token"])).status_code == 200
    # The old refresh token was rotated away: reusing it is refused.
    assert token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"],
                 client_id=client_id)["status"] == 400

    revoked = client.post("/oauth/revoke/", {"token": fresh["access_token"], "client_id": client_id})
    assert revoked.status_code == 200
    response = client.get("/api/v1/corpora", **bearer(fresh["access_token"]))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_a_token_does_only_what_its_scopes_and_its_user_allow(client, sample_corpus, auth_required, reader):
    client_id = register(client)
    # The user consents to admin, but a plain account holds read only: the token says so, and a write is refused.
    tokens = sign_in(client, reader, client_id, API, scope="read admin")
    assert tokens["scope"] == "read"
    body = json.dumps({"name": "new-docs", "kind": "chunks"})
    refused = client.post("/api/v1/corpora", body, content_type="application/json", **bearer(tokens["access_token"]))
    assert refused.status_code == 403
    assert "'admin' scope" in refused.json()["error"]["message"]
    # Granted admin later, the user signs in again for it; the old token never carried it.
    reader.groups.add(Group.objects.create(name="docsmcp-admin"))
    still = client.post("/api/v1/corpora", body, content_type="application/json", **bearer(tokens["access_token"]))
    assert still.status_code == 403
    again = sign_in(client, reader, client_id, API, scope="read admin")
    assert again["scope"] == "read admin"
    allowed = client.post("/api/v1/corpora", body, content_type="application/json", **bearer(again["access_token"]))
    assert allowed.status_code == 201, allowed.content


def test_a_refresh_says_only_the_scopes_the_user_still_holds(client, db, reader):
    reader.groups.add(Group.objects.create(name="docsmcp-write"))
    client_id = register(client)
    tokens = sign_in(client, reader, client_id, API, scope="read write admin")
    assert tokens["scope"] == "read write"
    reader.groups.clear()
    fresh = token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client_id)
    assert fresh["status"] == 200 and fresh["scope"] == "read"


def test_a_users_corpus_group_limits_the_token(client, sample_corpus, auth_required, reader):
    reader.groups.add(Group.objects.create(name="docsmcp-corpus-other"))
    tokens = sign_in(client, reader, register(client), API)
    assert client.get("/api/v1/corpora/sample", **bearer(tokens["access_token"])).status_code == 404
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).json()["items"] == []


def test_a_token_for_another_of_our_endpoints_is_refused_at_use(client, sample_corpus, auth_required, reader):
    tokens = sign_in(client, reader, register(client), MCP)
    response = client.get("/api/v1/corpora", **bearer(tokens["access_token"]))
    assert response.status_code == 401
    assert "issued for http://testserver/mcp/" in response.json()["error"]["message"]


def test_a_foreign_resource_is_refused_at_issuance(client, db, reader):
    """RFC 8707: no token is issued for another server, at the authorization or the token request."""
    from oauth2_provider.models import AccessToken

    client_id = register(client)
    client.force_login(reader)
    verifier, challenge = pkce()
    for elsewhere in ("https://elsewhere.example/mcp/", "http://testserver.evil.example/mcp/",
                      "http://testserver/admin/"):
        response = client.get(authorize_query(client_id, challenge, elsewhere))
        assert response.status_code == 302 and response["Location"].startswith(REDIRECT), response.content
        answer = parse_qs(urlsplit(response["Location"]).query)
        assert answer["error"] == ["invalid_target"] and answer["state"] == ["st-1"] and "code" not in answer
    for ours in ("http://testserver", "http://testserver/mcp/c/sample/", API):
        assert b'name="allow"' in client.get(authorize_query(client_id, challenge, ours)).content

    # The consent form's hidden resource changed after the page was shown: no code.
    page = client.get(authorize_query(client_id, challenge, MCP))
    form = {**hidden_fields(page.content.decode()), "allow": "Allow", "resource": "https://elsewhere.example/"}
    response = client.post("/oauth/authorize/", form)
    assert response.status_code == 302 and parse_qs(urlsplit(response["Location"]).query)["error"] == ["invalid_target"]

    # A code for this server, then a token request naming another: refused, and no token issued.
    code = consent(client, authorize_query(client_id, challenge, MCP))
    answer = token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                   code_verifier=verifier, resource="https://elsewhere.example/mcp/")
    assert answer["status"] == 400 and answer["error"] == "invalid_target", answer
    assert not AccessToken.objects.filter(user=reader).exists()


def test_a_token_without_the_scope_a_call_needs_gets_a_step_up_challenge(client, sample_corpus, auth_required, reader,
                                                                         echo_profile):  # noqa: F811
    """MCP authorization: 403 with error="insufficient_scope" and the scope to ask for, on the REST API and
    for an MCP tool; a static key lacking the scope is refused as before (403 on REST, isError over MCP)."""
    reader.groups.add(Group.objects.create(name="docsmcp-write"))
    api = sign_in(client, reader, register(client), API)
    body = json.dumps({"name": "new-docs", "kind": "chunks"})
    refused = client.post("/api/v1/corpora", body, content_type="application/json", **bearer(api["access_token"]))
    assert refused.status_code == 403
    assert refused["WWW-Authenticate"].startswith('Bearer realm="docsmcp", error="insufficient_scope", scope="admin", '
                                                  'resource_metadata="http://testserver/.well-known/oauth-protected-'
                                                  'resource/api/v1/"')
    _row, key = create_api_key("ci", ["read"])
    refused = client.post("/api/v1/corpora", body, content_type="application/json", **bearer(key))
    assert refused.status_code == 403 and "WWW-Authenticate" not in refused

    call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "store", "arguments": {}}})
    mcp = {"content_type": "application/json", "HTTP_ACCEPT": "application/json, text/event-stream",
           "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}
    read_only = sign_in(client, reader, register(client), MCP)
    refused = client.post("/mcp/echo/", call, **mcp, **bearer(read_only["access_token"]))
    assert refused.status_code == 403, refused.content
    challenge = refused["WWW-Authenticate"]
    assert 'error="insufficient_scope", scope="write"' in challenge
    assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp/echo/"' in challenge
    # Signed in again with the scope (the user may hold it): the call goes through.
    stepped_up = sign_in(client, reader, register(client), MCP, scope="read write")
    allowed = client.post("/mcp/echo/", call, **mcp, **bearer(stepped_up["access_token"]))
    assert allowed.status_code == 200 and not allowed.json()["result"].get("isError"), allowed.content
    as_key = client.post("/mcp/echo/", call, **mcp, **bearer(key))
    assert as_key.status_code == 200 and as_key.json()["result"]["isError"] is True
    assert "WWW-Authenticate" not in as_key


def test_a_token_is_told_from_a_key_by_its_form_and_revocation_bites_within_the_cache_bound(
        client, sample_corpus, auth_required, reader, monkeypatch):
    """A worker trusts a token it checked for TOKEN_CACHE_SECONDS: revoked through this worker it stops at
    once; deleted by another worker (no signal here) it stops once that bound has passed."""
    import time

    from django.db import connection
    from oauth2_provider.models import AccessToken

    from corpus import oauth

    tokens = sign_in(client, reader, register(client), API)
    assert tokens["access_token"].startswith("docsmcp_at.") and tokens["refresh_token"].startswith("docsmcp_rt.")
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).status_code == 200
    row = AccessToken.objects.get(user=reader)
    with connection.cursor() as cursor:  # as another worker's revocation reaches this one: not at all
        cursor.execute("UPDATE oauth2_provider_refreshtoken SET access_token_id = NULL WHERE access_token_id = %s",
                       [row.pk])
        cursor.execute("DELETE FROM oauth2_provider_accesstoken WHERE id = %s", [row.pk])
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).status_code == 200

    later = SimpleNamespace(monotonic=lambda: time.monotonic() + oauth.TOKEN_CACHE_SECONDS, time=time.time)
    monkeypatch.setattr(oauth, "time", later)
    refused = client.get("/api/v1/corpora", **bearer(tokens["access_token"]))
    assert refused.status_code == 401 and "not valid" in refused.json()["error"]["message"]


def test_a_token_checked_recently_works_through_a_database_outage(client, sample_corpus, auth_required, reader,
                                                                  monkeypatch):
    from django.db import OperationalError

    from corpus import oauth

    checked = sign_in(client, reader, register(client), API)["access_token"]
    unseen = sign_in(client, reader, register(client), API)["access_token"]
    assert client.get("/api/v1/corpora", **bearer(checked)).status_code == 200

    def database_down(checksum):
        raise OperationalError("connection refused")

    monkeypatch.setattr(oauth, "_check", database_down)
    assert client.get("/api/v1/corpora", **bearer(checked)).status_code == 200
    response = client.get("/api/v1/corpora", **bearer(unseen))
    assert response.status_code == 503 and response.json()["error"]["code"] == "database_unavailable"


def test_deactivating_a_user_stops_their_tokens_at_once(client, sample_corpus, auth_required, reader):
    tokens = sign_in(client, reader, register(client), API)
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).status_code == 200
    reader.is_active = False
    reader.save()
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).status_code == 401


def test_llms_txt_points_at_the_servers_metadata_and_takes_a_token_for_the_server(client, sample_corpus,
                                                                                   auth_required, reader):
    response = client.get("/c/sample/llms.txt")
    assert response.status_code == 401
    assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource"' in response["WWW-Authenticate"]
    whole_server = sign_in(client, reader, register(client), "http://testserver")
    assert client.get("/c/sample/llms.txt", **bearer(whole_server["access_token"])).status_code == 200
    mcp_only = sign_in(client, reader, register(client), MCP)
    refused = client.get("/c/sample/llms.txt", **bearer(mcp_only["access_token"]))
    assert refused.status_code == 401 and 'error="invalid_token"' in refused["WWW-Authenticate"]


def test_an_expired_token_is_refused(client, sample_corpus, auth_required, reader):
    from oauth2_provider.models import AccessToken

    tokens = sign_in(client, reader, register(client), API)
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v1/corpora", **bearer(tokens["access_token"]))
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]


def test_pkce_is_required_and_plain_is_refused(client, db, reader):
    client_id = register(client)
    client.force_login(reader)
    _verifier, challenge = pkce()
    for query in (authorize_query(client_id, None, MCP), authorize_query(client_id, challenge, MCP, method="plain")):
        response = client.get(query)
        # Refused before any consent is asked, saying what to send.
        assert response.status_code == 400, response.content
        assert b"code_challenge_method=S256" in response.content and b'name="allow"' not in response.content


def test_a_code_needs_its_verifier(client, db, reader):
    client_id = register(client)
    verifier, challenge = pkce()
    client.force_login(reader)
    code = consent(client, authorize_query(client_id, challenge, MCP))
    answer = token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                   code_verifier=pkce()[0], resource=MCP)
    assert answer["status"] == 400 and answer["error"] == "invalid_grant"
    assert verifier


def test_a_wrong_verifier_burns_the_code(client, db, reader):
    client_id = register(client)
    verifier, challenge = pkce()
    client.force_login(reader)
    code = consent(client, authorize_query(client_id, challenge, MCP))
    client.logout()
    wrong = token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                  code_verifier=pkce()[0], resource=MCP)
    assert wrong["status"] == 400 and wrong["error"] == "invalid_grant"
    # The right verifier afterwards gets nothing: whoever guessed had one try, and the code is gone.
    right = token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                  code_verifier=verifier, resource=MCP)
    assert right["status"] == 400 and right["error"] == "invalid_grant"


def test_codes_are_stored_as_hashes(client, db, reader):
    from oauth2_provider.models import Grant

    client_id = register(client)
    verifier, challenge = pkce()
    client.force_login(reader)
    code = consent(client, authorize_query(client_id, challenge, MCP))
    client.logout()
    # Whoever reads the table cannot exchange a pending code: it holds the code's SHA-256 only.
    assert not Grant.objects.filter(code=code).exists()
    assert Grant.objects.filter(code=hashlib.sha256(code.encode()).hexdigest()).count() == 1
    answer = token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                   code_verifier=verifier, resource=MCP)
    assert answer["status"] == 200, answer
    assert not Grant.objects.exists()


def test_a_replayed_code_revokes_the_tokens_of_its_first_exchange(client, sample_corpus, auth_required, reader):
    client_id = register(client)
    verifier, challenge = pkce()
    client.force_login(reader)
    code = consent(client, authorize_query(client_id, challenge, API))
    client.logout()
    exchange = dict(grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                    code_verifier=verifier, resource=API)
    first = token(client, **exchange)
    assert first["status"] == 200
    fresh = token(client, grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=client_id)
    assert fresh["status"] == 200
    assert client.get("/api/v1/corpora", **bearer(fresh["access_token"])).status_code == 200

    replay = token(client, **exchange)
    assert replay["status"] == 400 and replay["error"] == "invalid_grant"
    # RFC 6749 4.1.2: every token descended from the first exchange stops, refreshed ones included.
    assert client.get("/api/v1/corpora", **bearer(fresh["access_token"])).status_code == 401
    assert client.get("/api/v1/corpora", **bearer(first["access_token"])).status_code == 401
    assert token(client, grant_type="refresh_token", refresh_token=fresh["refresh_token"],
                 client_id=client_id)["status"] == 400


def test_an_unregistered_redirect_uri_gets_no_redirect(client, db, reader):
    client_id = register(client)
    client.force_login(reader)
    response = client.get(authorize_query(client_id, pkce()[1], MCP, redirect="http://127.0.0.1:9/evil"))
    assert response.status_code == 400 or (response.status_code == 200 and b"cannot go on" in response.content)
    assert "Location" not in response


def test_sign_in_asks_for_login_then_names_the_client_and_scopes(client, db, reader):
    client_id = register(client, name="Remote Agent 7")
    query = authorize_query(client_id, pkce()[1], MCP, scope="read write")
    response = client.get(query)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    login = client.post(response["Location"], {"username": "reader", "password": "pw-reader-1"})
    assert login.status_code == 302
    page = client.get(login["Location"]).content.decode()
    assert "Remote Agent 7" in page
    assert "search and read the documentation" in page


def test_the_consent_page_lists_only_the_scopes_the_user_can_be_granted(client, db, reader):
    """A reader asked for read, write and admin is shown read alone (the token would carry nothing more); a
    staff member asked for the same is shown what a staff account holds."""
    client_id = register(client, name="Greedy agent")
    query = authorize_query(client_id, pkce()[1], MCP, scope="read write admin")
    client.force_login(reader)
    page = client.get(query).content.decode()
    listed = re.search(r'<ul id="scopes">(.*?)</ul>', page, re.S).group(1)
    assert "search and read the documentation" in listed
    assert "call tools that write" not in page and "everything, including" not in page
    assert "asked for 2 scopes" in page and "not granted" in page
    assert hidden_fields(page)["scope"] == "read"
    staff = User.objects.create_user("staffer", password="pw-staff-1", is_staff=True)
    client.force_login(staff)
    listed = re.search(r'<ul id="scopes">(.*?)</ul>', client.get(query).content.decode(), re.S).group(1)
    assert "call tools that write" in listed and "everything, including" not in listed


def test_registration_can_be_turned_off(client, db, settings):
    from oauth2_provider.settings import oauth2_settings

    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": False}
    oauth2_settings.reload()
    try:
        response = client.post("/oauth/register/", json.dumps({"redirect_uris": [REDIRECT]}),
                               content_type="application/json")
        assert response.status_code in (403, 404)
        assert "registration_endpoint" not in client.get("/.well-known/oauth-authorization-server").json()
    finally:
        settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": True}
        oauth2_settings.reload()


@pytest.mark.slow
def test_registration_is_on_by_default_only_on_loopback_without_a_proxy():
    """Behind a proxy the server listens on loopback yet is reachable from everywhere the proxy is."""
    import os
    import subprocess
    import sys

    probe = "from django.conf import settings; print(settings.OAUTH2_PROVIDER['DCR_ENABLED'])"
    base = {k: v for k, v in os.environ.items() if k not in (
        "MCP_SERVER_HOST", "MCP_TRUST_X_FORWARDED_FOR", "DOCSMCP_TRUST_X_FORWARDED_PROTO", "DOCSMCP_OAUTH_REGISTRATION")}
    base["DJANGO_SETTINGS_MODULE"] = "docsmcp_site.settings"
    for env, enabled in [({}, "True"), ({"MCP_SERVER_HOST": "0.0.0.0"}, "False"),
                         ({"DOCSMCP_TRUST_X_FORWARDED_PROTO": "true"}, "False"), ({"MCP_TRUST_X_FORWARDED_FOR": "true"}, "False"),
                         ({"DOCSMCP_TRUST_X_FORWARDED_PROTO": "true", "DOCSMCP_OAUTH_REGISTRATION": "true"}, "True")]:
        out = subprocess.run([sys.executable, "-c", probe], env={**base, **env}, capture_output=True, text=True,
                             check=True).stdout
        assert out.strip().splitlines()[-1] == enabled, (env, out)


def test_api_keys_keep_working_beside_tokens(client, sample_corpus, auth_required):
    _row, key = create_api_key("ci", ["read"])
    assert client.get("/api/v1/corpora", **bearer(key)).status_code == 200


def test_operator_command_creates_lists_and_deletes_clients(db, capsys, client, reader):
    call_command("mcp_oauth_client", "create", "Team agent", "--redirect-uri", REDIRECT)
    out = capsys.readouterr().out
    client_id = out.split("client_id: ")[1].split()[0]
    call_command("mcp_oauth_client", "list")
    assert "Team agent" in capsys.readouterr().out
    tokens = sign_in(client, reader, client_id, MCP)
    assert tokens["access_token"]
    call_command("mcp_oauth_client", "delete", client_id)
    call_command("mcp_oauth_client", "list")
    assert "Team agent" not in capsys.readouterr().out


@pytest.fixture
def issuer(settings):
    """An external issuer: an RSA key, its JWKS served on a loopback port by a server made here."""
    import time

    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    server = json_server({"/jwks": {"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}})
    settings.DOCSMCP_OAUTH_ISSUER = "https://id.example.com"
    settings.DOCSMCP_OAUTH_JWKS_URL = f"http://127.0.0.1:{server.server_address[1]}/jwks"
    settings.DOCSMCP_OAUTH_SCOPE_MAP = ["docs.read=read", "docs.admin=admin"]

    def mint(aud="http://testserver/", scope="docs.read", expires_in=300, iss="https://id.example.com"):
        claims = {"iss": iss, "aud": aud, "sub": "alice", "scope": scope, "exp": int(time.time()) + expires_in}
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

    yield mint
    server.shutdown()


def test_an_external_issuers_tokens_are_checked_by_its_jwks(client, sample_corpus, auth_required, issuer):
    assert client.get("/.well-known/oauth-protected-resource/mcp/").json()["authorization_servers"] == [
        "http://testserver", "https://id.example.com"]
    assert client.get("/api/v1/corpora", **bearer(issuer())).status_code == 200
    body = json.dumps({"name": "new-docs", "kind": "chunks"})
    assert client.post("/api/v1/corpora", body, content_type="application/json",
                       **bearer(issuer())).status_code == 403
    assert client.post("/api/v1/corpora", body, content_type="application/json",
                       **bearer(issuer(scope="docs.read docs.admin"))).status_code == 201
    for bad, says in [(issuer(aud="https://other.example/"), "not for this server"),
                      (issuer(expires_in=-120), "expired"),
                      (issuer(iss="https://evil.example.com"), "another issuer")]:
        response = client.get("/api/v1/corpora", **bearer(bad))
        assert response.status_code == 401 and says in response.json()["error"]["message"], response.content


def test_with_an_external_issuer_alone_clients_are_told_its_scope_names(client, sample_corpus, auth_required, issuer,
                                                                        settings, echo_profile):  # noqa: F811
    """A client signs in where the metadata sends it and asks for what a challenge names: with the issuer
    alone, the issuer's names (the first the map gives a scope; one for `admin` where none gives it)."""
    well_known = "/.well-known/oauth-protected-resource/mcp/"
    assert client.get(well_known).json()["scopes_supported"] == ["admin", "build", "read", "write"]
    settings.DOCSMCP_OAUTH_SERVER = False
    settings.DOCSMCP_OAUTH_SCOPE_MAP = ["docs.read=read", "docs.admin=admin", "docs.everything=read"]
    doc = client.get(well_known).json()
    assert doc["authorization_servers"] == ["https://id.example.com"]
    assert doc["scopes_supported"] == ["docs.admin", "docs.everything", "docs.read"]
    for response in (client.get("/api/v1/corpora"), client.post("/mcp/", "{}", content_type="application/json")):
        assert response.status_code == 401 and 'scope="docs.read"' in response["WWW-Authenticate"], response
    body = json.dumps({"name": "new-docs", "kind": "chunks"})
    refused = client.post("/api/v1/corpora", body, content_type="application/json", **bearer(issuer()))
    assert refused.status_code == 403
    assert 'error="insufficient_scope", scope="docs.admin"' in refused["WWW-Authenticate"]
    call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "store", "arguments": {}}})
    mcp = {"content_type": "application/json", "HTTP_ACCEPT": "application/json, text/event-stream",
           "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}
    refused = client.post("/mcp/echo/", call, **mcp, **bearer(issuer()))  # needs write: docs.admin holds it
    assert refused.status_code == 403 and 'scope="docs.admin"' in refused["WWW-Authenticate"]
    settings.DOCSMCP_OAUTH_SCOPE_MAP = ["docs.read=read"]  # nothing the issuer grants holds write: no name
    refused = client.post("/mcp/echo/", call, **mcp, **bearer(issuer()))
    assert refused.status_code == 403 and "scope=" not in refused["WWW-Authenticate"], refused["WWW-Authenticate"]


def test_the_admin_lists_a_users_tokens_and_revokes_them(client, sample_corpus, auth_required, reader):
    from oauth2_provider.models import AccessToken

    tokens = sign_in(client, reader, register(client), API)
    admin = User.objects.create_superuser("root", "root@example.com", "pw-root-1")
    client.force_login(admin)
    listing = client.get("/admin/oauth2_provider/accesstoken/")
    assert listing.status_code == 200 and b"reader" in listing.content
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).status_code == 200  # now cached
    row = AccessToken.objects.get(user=reader)
    revoked = client.post("/admin/oauth2_provider/accesstoken/",
                          {"action": "revoke_tokens", "_selected_action": [row.pk]})
    assert revoked.status_code == 302
    client.logout()
    assert client.get("/api/v1/corpora", **bearer(tokens["access_token"])).status_code == 401


@pytest.mark.parametrize("client_id", ["https://127.0.0.1/client.json", "https://localhost:9/agent/metadata.json"])
def test_a_client_metadata_document_on_a_private_address_is_never_trusted(client, db, reader, client_id):
    """An HTTPS URL client_id is fetched only from public addresses: no consent for one pointing inward."""
    client.force_login(reader)
    response = client.get(authorize_query(client_id, pkce()[1], MCP, redirect="https://agent.example/cb"))
    assert b'name="allow"' not in response.content
    assert response.status_code in (400, 401, 403) or b"cannot go on" in response.content, response.content[:500]
    assert "Location" not in response or not response["Location"].startswith("https://agent.example")
