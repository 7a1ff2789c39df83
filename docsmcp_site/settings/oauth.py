"""Sign-in with OAuth 2.1 for /mcp/ and /api/v1/ (the MCP authorization specification): the built-in
authorization server (django-oauth-toolkit), how clients register with it, and an external issuer whose
tokens are checked against its JWKS. Static API keys work beside every choice (docs/security.md)."""

from django.conf import global_settings

from docsmcp_site.settings.env import env, given
from docsmcp_site.settings.mcp import (
    DOCSMCP_TRUST_X_FORWARDED_PROTO,
    MCP_SERVER_HOST,
    MCP_TRUST_X_FORWARDED_FOR,
)

# The built-in authorization server: sign-in through Django's login, a consent page, tokens in the admin.
DOCSMCP_OAUTH_SERVER = env("DOCSMCP_OAUTH_SERVER")
# Lifetime of an access token; a client refreshes it with its (rotated) refresh token.
DOCSMCP_OAUTH_ACCESS_TOKEN_SECONDS = env("DOCSMCP_OAUTH_ACCESS_TOKEN_SECONDS")
DOCSMCP_OAUTH_REFRESH_TOKEN_SECONDS = env("DOCSMCP_OAUTH_REFRESH_TOKEN_SECONDS")
# Dynamic client registration (RFC 7591): any caller may register a client (it still needs a user's
# sign-in and consent for a token). On by default only while the server listens on loopback and trusts
# no proxy's headers: behind a proxy, a server on loopback is reachable from everywhere the proxy is.
DOCSMCP_OAUTH_REGISTRATION = env(
    "DOCSMCP_OAUTH_REGISTRATION", MCP_SERVER_HOST in ("127.0.0.1", "localhost", "::1", "[::1]")
    and not (MCP_TRUST_X_FORWARDED_FOR or DOCSMCP_TRUST_X_FORWARDED_PROTO))
# Registrations one address may make within DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES (docsmcp_site/login_throttle.py);
# past it, 429 until the oldest is out of the window. 0: no limit.
DOCSMCP_OAUTH_REGISTRATION_MAX = env("DOCSMCP_OAUTH_REGISTRATION_MAX")
# Whether the operator chose registration: `serve --host 0.0.0.0` turns only the default off.
DOCSMCP_OAUTH_EXPLICIT = given("DOCSMCP_OAUTH_REGISTRATION")
# Client ID Metadata Documents: an HTTPS URL as client_id, its document fetched (public hosts only,
# size and time bounded). DOCSMCP_OAUTH_CLIENT_HOSTS limits which hosts (empty: any public host).
DOCSMCP_OAUTH_CLIENT_METADATA_DOCUMENTS = env("DOCSMCP_OAUTH_CLIENT_METADATA_DOCUMENTS")
DOCSMCP_OAUTH_CLIENT_HOSTS = env("DOCSMCP_OAUTH_CLIENT_HOSTS")

# An external issuer (instead of, or beside, the built-in server): its tokens are JWTs signed by a key
# of its JWKS, with this server's audience; their scopes are mapped to docsmcp's by
# DOCSMCP_OAUTH_SCOPE_MAP ("theirs=ours" pairs, e.g. "docs.read=read,docs.write=write").
DOCSMCP_OAUTH_ISSUER = env("DOCSMCP_OAUTH_ISSUER")
DOCSMCP_OAUTH_AUDIENCE = env("DOCSMCP_OAUTH_AUDIENCE")
DOCSMCP_OAUTH_JWKS_URL = env("DOCSMCP_OAUTH_JWKS_URL")
DOCSMCP_OAUTH_SCOPE_MAP = env("DOCSMCP_OAUTH_SCOPE_MAP")

LOGIN_URL = "/accounts/login/"

# Client secrets are server-generated random strings, stored with a fast salted hash (docsmcp_site/client_secrets.py);
# listed last, the hasher never hashes a user's password.
PASSWORD_HASHERS = [*global_settings.PASSWORD_HASHERS, "docsmcp_site.client_secrets.ClientSecretHasher"]

OAUTH2_PROVIDER = {
    "SCOPES": {
        "read": "search and read the documentation",
        "write": "call tools that write (feedback, fixes)",
        "build": "start and activate builds, review fixes, run evals",
        "admin": "everything, including creating and deleting corpora",
    },
    "DEFAULT_SCOPES": ["read"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": DOCSMCP_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": DOCSMCP_OAUTH_REFRESH_TOKEN_SECONDS,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # Tokens and codes carry only the scopes the user holds (corpus/oauth_validator.py).
    "OAUTH2_VALIDATOR_CLASS": "corpus.oauth_validator.Validator",
    "ACCESS_TOKEN_GENERATOR": "corpus.oauth.generate_access_token",
    "REFRESH_TOKEN_GENERATOR": "corpus.oauth.generate_refresh_token",
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "PKCE_REQUIRED": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "CLIENT_SECRET_HASHER": "docsmcp_secret_sha256",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    # OAuth 2.1 / RFC 9700: no implicit or password grant, S256 only, tokens stored as hashes.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "DCR_ENABLED": DOCSMCP_OAUTH_SERVER and DOCSMCP_OAUTH_REGISTRATION,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": DOCSMCP_OAUTH_SERVER and DOCSMCP_OAUTH_CLIENT_METADATA_DOCUMENTS,
    "CIMD_REGISTRATION_PERMISSION_CLASSES": ("docsmcp_site.signin.ClientHostPermission",),
    "CIMD_FETCH_TIMEOUT_SECONDS": 5,
    "CIMD_MAX_DOCUMENT_SIZE": 16 * 1024,
    "OAUTH2_PROTECTED_RESOURCE_NAME": "docsmcp",
    "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [DOCSMCP_OAUTH_ISSUER] if DOCSMCP_OAUTH_ISSUER else [],
}
