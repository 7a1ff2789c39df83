"""Client ID Metadata Documents: a client whose client_id is an HTTPS URL signs in end to end, its document
served by a real HTTPS server made here (a certificate generated for the test, verified like any other);
and the refusals: a host not allowed, a document whose redirect URIs or client_id do not match."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
from urllib.parse import parse_qs, urlsplit

import pytest
import urllib3
from django.contrib.auth.models import User
from oauth2_provider import cimd

from tests.oauth_helpers import REDIRECT, authorize_query, consent, json_server, pkce, token

MCP = "http://testserver/mcp/"
HOST = "agent.test"  # a client's host name; the test's fetcher connects to the loopback address for it


class LoopbackFetcher(cimd.SafeMetadataFetcher):
    """The library's fetcher (CIMD_METADATA_FETCHER is its hook for site policy) for a host that resolves to
    the loopback address this test's server listens on, which the default refuses as not public. TLS is
    verified as usual (certificate chain and host name), trusting the test's certificate authority."""

    ca_file = ""

    def fetch(self, client_id):
        parsed = cimd._validate_client_id_url(client_id)
        pool = urllib3.HTTPSConnectionPool("127.0.0.1", parsed.port, retries=False, timeout=5, maxsize=1,
                                           ssl_context=ssl.create_default_context(cafile=self.ca_file),
                                           server_hostname=parsed.hostname)
        try:
            response = pool.urlopen("GET", parsed.path, headers={"Host": parsed.netloc, "Accept": "application/json"},
                                    redirect=False, preload_content=False)
            try:
                return self._read_document(response)
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise cimd.CIMDError(f"could not fetch client_id document: {exc}") from exc
        finally:
            pool.close()


def certificate(tmp_path) -> tuple[str, str]:
    """A self-signed certificate for HOST (its own authority), and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


@pytest.fixture
def metadata_host(tmp_path, settings):
    """An HTTPS server for HOST serving client metadata documents ({path: document}), and the requests it got."""
    from oauth2_provider.settings import oauth2_settings

    cert_file, key_file = certificate(tmp_path)
    documents: dict[str, dict] = {}
    fetched: list[str] = []

    server = json_server(documents, fetched, tls=(cert_file, key_file))
    LoopbackFetcher.ca_file = cert_file
    original = settings.OAUTH2_PROVIDER
    settings.OAUTH2_PROVIDER = {**original, "CIMD_METADATA_FETCHER": f"{__name__}.LoopbackFetcher"}
    oauth2_settings.reload()
    base = f"https://{HOST}:{server.server_address[1]}"

    def publish(path: str, redirect: str = REDIRECT, client_id: str | None = None) -> str:
        documents[path] = {"client_id": client_id or base + path, "client_name": "Metadata Agent",
                           "redirect_uris": [redirect], "grant_types": ["authorization_code", "refresh_token"],
                           "response_types": ["code"], "token_endpoint_auth_method": "none"}
        return base + path

    yield publish, fetched
    server.shutdown()
    settings.OAUTH2_PROVIDER = original
    oauth2_settings.reload()


@pytest.fixture
def reader(db, settings):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = ""
    return User.objects.create_user("reader", password="pw-reader-1")


def test_a_client_named_by_its_metadata_document_signs_in_and_lists_tools(client, sample_corpus, reader,
                                                                          metadata_host):
    publish, fetched = metadata_host
    client_id = publish("/agent.json")
    verifier, challenge = pkce()
    client.force_login(reader)
    page = client.get(authorize_query(client_id, challenge, MCP))
    assert page.status_code == 200, page.content
    assert fetched == ["/agent.json"]
    text = page.content.decode()
    assert "Metadata Agent" in text and f'id="client-host">{HOST}<' in text
    code = consent(client, authorize_query(client_id, challenge, MCP))
    client.logout()
    tokens = token(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                   code_verifier=verifier, resource=MCP)
    assert tokens["status"] == 200, tokens
    listed = client.post("/mcp/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                         content_type="application/json", HTTP_ACCEPT="application/json, text/event-stream",
                         HTTP_MCP_PROTOCOL_VERSION="2025-11-25", HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}")
    assert listed.status_code == 200, listed.content
    assert "search_docs" in [tool["name"] for tool in listed.json()["result"]["tools"]]


def refused(response) -> bool:
    """No consent asked and no code: an error page, or the user sent back with an error."""
    if b'name="allow"' in response.content:
        return False
    location = response.get("Location", "")
    return "code" not in parse_qs(urlsplit(location).query)


def test_a_host_outside_the_allowed_client_hosts_is_not_fetched(client, db, reader, metadata_host, settings):
    publish, fetched = metadata_host
    client_id = publish("/agent.json")
    settings.DOCSMCP_OAUTH_CLIENT_HOSTS = [".agents.example.com"]
    client.force_login(reader)
    response = client.get(authorize_query(client_id, pkce()[1], MCP))
    assert refused(response) and fetched == []
    settings.DOCSMCP_OAUTH_CLIENT_HOSTS = [HOST]
    assert b'name="allow"' in client.get(authorize_query(client_id, pkce()[1], MCP)).content


def test_a_document_that_does_not_match_is_refused(client, db, reader, metadata_host):
    publish, fetched = metadata_host
    client.force_login(reader)
    # The document lists another redirect URI than the one the request names: nobody is sent anywhere.
    other_redirect = publish("/other-redirect.json", redirect="https://agent.example/callback")
    response = client.get(authorize_query(other_redirect, pkce()[1], MCP))
    assert refused(response) and not response.get("Location", "").startswith(REDIRECT), response.content[:300]
    # The document claims to be another client.
    impostor = publish("/impostor.json", client_id="https://other.example/agent.json")
    assert refused(client.get(authorize_query(impostor, pkce()[1], MCP)))
    assert fetched == ["/other-redirect.json", "/impostor.json"]
