"""Driving the built-in authorization server as a client does: registration, PKCE, the consent form, tokens."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

REDIRECT = "http://127.0.0.1:9/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def register(client, redirect: str = REDIRECT, name: str = "Test agent") -> str:
    response = client.post("/oauth/register/", json.dumps({
        "client_name": name, "redirect_uris": [redirect], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}),
        content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["client_id"]


def hidden_fields(page: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r"<input[^>]*>", page):
        if 'type="hidden"' in tag:
            name = re.search(r'name="([^"]*)"', tag)
            value = re.search(r'value="([^"]*)"', tag)
            if name:
                fields[name.group(1)] = html.unescape(value.group(1)) if value else ""
    return fields


def authorize_query(client_id: str, challenge: str | None, resource: str, scope: str = "read",
                    redirect: str = REDIRECT, method: str = "S256") -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect, "scope": scope,
              "state": "st-1", "resource": resource}
    if challenge is not None:
        params.update(code_challenge=challenge, code_challenge_method=method)
    return "/oauth/authorize/?" + urlencode(params)


def consent(client, query: str) -> str:
    """Open the consent page as the logged-in user, allow, and return the code sent back to the client."""
    page = client.get(query)
    assert page.status_code == 200, page.content
    response = client.post("/oauth/authorize/", {**hidden_fields(page.content.decode()), "allow": "Allow"})
    assert response.status_code == 302, response.content
    location = urlsplit(response["Location"])
    answer = parse_qs(location.query)
    assert answer["state"] == ["st-1"], answer
    return answer["code"][0]


def token(client, **form) -> dict:
    response = client.post("/oauth/token/", form)
    return {"status": response.status_code, **response.json()}


def sign_in(client, user, client_id: str, resource: str, scope: str = "read") -> dict:
    """The whole flow for `user`: authorize with PKCE S256, consent, code for tokens."""
    verifier, challenge = pkce()
    client.force_login(user)
    code = consent(client, authorize_query(client_id, challenge, resource, scope))
    client.logout()
    answer = token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT,
                   client_id=client_id, code_verifier=verifier, resource=resource)
    assert answer["status"] == 200, answer
    return answer


def json_server(documents: dict[str, Any], seen: list[str] | None = None,
                tls: tuple[str, str] | None = None) -> ThreadingHTTPServer:
    """A loopback server on its own thread answering GET <path> with documents[path] as JSON, else 404;
    the paths asked for go to `seen`, and `tls` (certificate and key files) makes it HTTPS. Callers may
    add documents while it runs."""

    class Documents(BaseHTTPRequestHandler):
        def do_GET(self):
            if seen is not None:
                seen.append(self.path)
            body = json.dumps(documents[self.path]).encode() if self.path in documents else b"{}"
            self.send_response(200 if self.path in documents else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Documents)
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
