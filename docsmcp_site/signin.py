"""Signing in with OAuth 2.1 (the MCP authorization specification): the metadata that lets a client find
how to sign in, the login page every Django auth backend serves through, and the consent page.

The authorization server itself is django-oauth-toolkit's (authorize, token, revoke, dynamic
registration, client metadata documents); corpus.oauth turns its tokens, or an external issuer's,
into callers.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, JsonResponse
from django.http.request import validate_host
from oauth2_provider.cimd import is_cimd_client_id
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationView,
    OAuthProtectedResourceMetadataView,
)
from oauth2_provider.views import RevokeTokenView as LibraryRevokeTokenView
from oauth2_provider.views import TokenView as LibraryTokenView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from corpus.oauth import external_issuer_only, is_own_resource, issuer_scopes, user_scopes
from corpus.oauth_validator import burn_code
from docsmcp_site import login_throttle
from docsmcp_site.login_throttle import ThrottledAdminAuthenticationForm
from mcp_endpoint import security


def _foreign_resources(request: HttpRequest, resources: list[str]) -> tuple[list[str], str]:
    origin = request.build_absolute_uri("/")
    return [r for r in resources if not is_own_resource(r, origin)], origin


def _invalid_target(foreign: list[str], origin: str, **kwargs) -> CustomOAuth2Error:
    """RFC 8707: a token is issued for this server only, so a client learns at once that it asked for another."""
    return CustomOAuth2Error(error="invalid_target", description=(
        f"this server issues tokens for itself only ({origin}, its /mcp/ and /api/v1/ URLs), "
        f"not for {', '.join(foreign)}"), **kwargs)


def _application(client_id: str | None):
    """The registered client, or None (a client known by its metadata document may have no row yet)."""
    return get_application_model().objects.filter(client_id=client_id).first() if client_id else None


class ClientHostPermission:
    """Which hosts a Client ID Metadata Document may come from: DOCSMCP_OAUTH_CLIENT_HOSTS (ALLOWED_HOSTS
    syntax), read when a client asks, or any host while it is empty. The library still fetches from public
    addresses only, over verified HTTPS."""

    def has_permission(self, request, client_id: str) -> bool:
        hosts = settings.DOCSMCP_OAUTH_CLIENT_HOSTS
        host = urlsplit(client_id).hostname
        return not hosts or (bool(host) and validate_host(host, hosts))


class ResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata of /, /mcp/..., /api/v1/: the built-in server and/or the external issuer."""

    def get_resource(self, request: HttpRequest) -> str:
        suffix = self.kwargs.get("resource_path")
        if not suffix:
            return super().get_resource(request)
        # The endpoint's own URL, trailing slash and all, as clients are configured with it.
        return request.build_absolute_uri("/" + suffix.lstrip("/"))

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        servers = []
        if settings.DOCSMCP_OAUTH_SERVER:
            servers.append(request.build_absolute_uri("/").rstrip("/"))
        if settings.DOCSMCP_OAUTH_ISSUER:
            servers.append(settings.DOCSMCP_OAUTH_ISSUER)
        return servers

    def get_scopes_supported(self) -> list[str]:
        return issuer_scopes() if external_issuer_only() else super().get_scopes_supported()

    def get(self, request: HttpRequest, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Cache-Control"] = "max-age=300"
        return response


class SignInForm(ThrottledAdminAuthenticationForm):
    """The admin's throttled login, open to every active user (not staff only): the user signs in to
    authorize a client, and what their token may do follows their account (corpus.oauth)."""

    # The admin's says "a staff account", which sends a user who is not staff looking for one.
    error_messages = {**ThrottledAdminAuthenticationForm.error_messages,
                      "invalid_login": AuthenticationForm.error_messages["invalid_login"]}

    def confirm_login_allowed(self, user) -> None:
        AuthenticationForm.confirm_login_allowed(self, user)


class SignInView(LoginView):
    template_name = "registration/login.html"
    authentication_form = SignInForm
    extra_context = {"site_header": "docsmcp", "site_title": "docsmcp", "title": "Sign in"}


class ConsentView(AuthorizationView):
    """The consent page: names the client, where it sends the user back, and each scope the user would grant:
    those asked for that the signed-in user holds (corpus.oauth user_scopes), as the token will carry them."""

    template_name = "oauth2_provider/authorize.html"
    not_granted: int = 0

    def validate_authorization_request(self, request: HttpRequest):
        # The page, its form and an automatic approval all take the scopes from here: narrowed to the user's
        # own, a user is never asked to allow what their token would not carry.
        scopes, credentials = super().validate_authorization_request(request)
        held = user_scopes(request.user) if request.user.is_authenticated else frozenset()
        granted = [scope for scope in scopes if scope in held]
        self.not_granted = len(scopes) - len(granted)
        return granted, credentials

    def get(self, request: HttpRequest, *args, **kwargs):
        # OAuth 2.1: PKCE with S256, refused before the user is asked anything (the library would
        # only refuse "plain" once the user had allowed it).
        method = request.GET.get("code_challenge_method", "")
        if not request.GET.get("code_challenge") or method != "S256":
            error = {"error": "invalid_request",
                     "description": "this server needs PKCE with code_challenge_method=S256 "
                                    f"(got {method or 'no code_challenge_method'}"
                                    f"{'' if request.GET.get('code_challenge') else ' and no code_challenge'})"}
            return self.render_to_response(self.get_context_data(error=error), status=400)
        foreign, origin = _foreign_resources(request, request.GET.getlist("resource"))
        if foreign:  # refused before the user is asked, and sent back to the client when it is known
            try:
                _scopes, credentials = self.validate_authorization_request(request)
            except OAuthToolkitError as error:
                return self.error_response(error, application=None)
            error = OAuthToolkitError(error=_invalid_target(foreign, origin, state=credentials.get("state")),
                                      redirect_uri=credentials["redirect_uri"])
            return self.error_response(error, _application(credentials.get("client_id")))
        return super().get(request, *args, **kwargs)

    def form_valid(self, form):
        foreign, origin = _foreign_resources(self.request, (form.cleaned_data.get("resource") or "").split())
        if foreign:  # the form's hidden field, changed since the page was shown
            error = OAuthToolkitError(error=_invalid_target(foreign, origin, state=form.cleaned_data.get("state")),
                                      redirect_uri=form.cleaned_data.get("redirect_uri"))
            return self.error_response(error, _application(form.cleaned_data.get("client_id")))
        return super().form_valid(form)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(site_header="docsmcp", site_title="docsmcp", title="Authorize a client",
                       not_granted=self.not_granted)
        client_id = context.get("client_id") or ""
        if is_cimd_client_id(client_id):  # its name is its own claim; the host it came from is not
            context["client_host"] = urlsplit(client_id).hostname
        return context


def _oauth_error(error: str, description: str, status: int, retry_after: int = 0) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=status,
                            headers={"Cache-Control": "no-store"})
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


def _throttled(wait: int, what: str) -> JsonResponse:
    return _oauth_error("invalid_request" if what == "registrations" else "invalid_client",
                        f"too many {what} from this address or for this client; retry in {wait} seconds "
                        f"(about {max(1, math.ceil(wait / 60))} minute(s))", 429, retry_after=wait)


def _client_id(request: HttpRequest) -> str:
    """The client a token or revocation request authenticates as: HTTP Basic (RFC 6749 2.3.1), else the body."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "basic":
        try:
            return unquote(base64.b64decode(credentials.strip(), validate=True).decode().partition(":")[0])
        except (binascii.Error, UnicodeDecodeError):
            return ""
    return request.POST.get("client_id", "")


def _presents_secret(request: HttpRequest) -> bool:
    return request.headers.get("Authorization", "").partition(" ")[0].lower() == "basic" or \
        "client_secret" in request.POST


class ClientAuthenticationThrottle:
    """Failed client authentications (a client secret check costs what a password check does) are counted per
    client and per address like failed logins; past the limit every attempt is refused 429 until the window
    has moved on. A request that presents a secret is counted before the secret is checked and given back
    when it was right, so simultaneous guesses cannot all pass one count. One without a secret guesses
    nothing and is counted only when refused: its checks under way must not count, since every install of a
    public client named by its metadata document shares one client ID."""

    def post(self, request: HttpRequest, *args, **kwargs):
        client_id, address = _client_id(request), security.client_ip(request)
        if _presents_secret(request):
            wait, reservation = login_throttle.reserve(address, kind=login_throttle.CLIENT, username=client_id)
        else:
            wait, reservation = login_throttle.seconds_blocked(client_id, address, kind=login_throttle.CLIENT), None
        if wait:
            return _throttled(wait, "failed client authentications")
        failed = False
        try:
            response = super().post(request, *args, **kwargs)
            failed = response.status_code in (400, 401) and _error_code(response) == "invalid_client"
            if failed and reservation is None:
                login_throttle.record_failure(client_id, address, kind=login_throttle.CLIENT)
        finally:
            if not failed:
                login_throttle.release(reservation)
        return response


def _error_code(response) -> str:
    try:
        return json.loads(response.content).get("error", "")
    except (ValueError, AttributeError):
        return ""


class TokenView(ClientAuthenticationThrottle, LibraryTokenView):
    """The library's token endpoint, refusing a `resource` that is not this server (invalid_target), and
    throttled on failed client authentications. A code whose exchange fails (a wrong PKCE verifier) is burnt."""

    def post(self, request: HttpRequest, *args, **kwargs):
        foreign, origin = _foreign_resources(request, request.POST.getlist("resource"))
        if foreign:
            error = _invalid_target(foreign, origin)
            return JsonResponse({"error": error.error, "error_description": error.description}, status=400,
                                headers={"Cache-Control": "no-store"})
        response = super().post(request, *args, **kwargs)
        if (request.POST.get("grant_type") == "authorization_code" and response.status_code == 400
                and _error_code(response) in ("invalid_grant", "invalid_request")):
            burn_code(_client_id(request), request.POST.get("code", ""))
        return response


class RevokeTokenView(ClientAuthenticationThrottle, LibraryRevokeTokenView):
    """The library's revocation endpoint, throttled like the token endpoint (it checks client secrets too)."""


LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


def _plain_http_redirects(body: bytes) -> list[str]:
    """The redirect URIs of a registration that use plain http off loopback (a body the library cannot read
    is left to it to refuse)."""
    try:
        uris = json.loads(body).get("redirect_uris") or []
    except (ValueError, AttributeError):
        return []
    found = []
    for uri in uris if isinstance(uris, list) else []:
        try:
            parts = urlsplit(uri) if isinstance(uri, str) else None
        except ValueError:
            continue
        if parts is not None and parts.scheme.lower() == "http" and (parts.hostname or "") not in LOOPBACK_HOSTS:
            found.append(uri)
    return found


class RegistrationView(DynamicClientRegistrationView):
    """Dynamic client registration (RFC 7591), held to what /mcp/ holds a caller to: a JSON body (a web page
    cannot send one cross-site without a CORS preflight), an allowed Origin (MCP_ALLOWED_ORIGINS), and
    DOCSMCP_OAUTH_REGISTRATION_MAX registrations per address in the login throttle's window. Plain-http
    redirect URIs only to loopback (OAuth 2.1 section 8.4.2)."""

    def post(self, request: HttpRequest, *args, **kwargs):
        if not security.origin_allowed(request.headers.get("Origin")):
            return _oauth_error("access_denied", "this Origin may not register clients (MCP_ALLOWED_ORIGINS)", 403)
        if not security.is_json_content_type(request):
            return _oauth_error("invalid_client_metadata", "send the client metadata as JSON, with "
                                                           "Content-Type: application/json", 415)
        plain = _plain_http_redirects(request.body)
        if plain:
            return _oauth_error("invalid_redirect_uri", f"a redirect URI over plain http must point at this machine "
                                                        f"(127.0.0.1, [::1] or localhost; OAuth 2.1): {plain[0]}", 400)
        wait, reservation = login_throttle.reserve(security.client_ip(request), kind=login_throttle.REGISTRATION)
        if wait:
            return _throttled(wait, "registrations")
        response = None
        try:
            response = super().post(request, *args, **kwargs)
        finally:
            if response is None or response.status_code != 201:  # only a registration made counts
                login_throttle.release(reservation)
        return response
