"""Signing in with OAuth 2.1 (the MCP authorization specification): the metadata that lets a client find
how to sign in, the login page every Django auth backend serves through, and the consent page.

The authorization server itself is django-oauth-toolkit's (authorize, token, revoke, dynamic
registration, client metadata documents); corpus.oauth turns its tokens, or an external issuer's,
into callers.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest
from oauth2_provider.views import AuthorizationView, OAuthProtectedResourceMetadataView

from docsmcp_site.login_throttle import ThrottledAdminAuthenticationForm


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

    def get(self, request: HttpRequest, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Cache-Control"] = "max-age=300"
        return response


class SignInForm(ThrottledAdminAuthenticationForm):
    """The admin's throttled login, open to every active user (not staff only): the user signs in to
    authorize a client, and what their token may do follows their account (corpus.oauth)."""

    def confirm_login_allowed(self, user) -> None:
        AuthenticationForm.confirm_login_allowed(self, user)


class SignInView(LoginView):
    template_name = "registration/login.html"
    authentication_form = SignInForm
    extra_context = {"site_header": "docsmcp", "site_title": "docsmcp", "title": "Sign in"}


class ConsentView(AuthorizationView):
    """The consent page: names the client, where it sends the user back, and each scope asked for."""

    template_name = "oauth2_provider/authorize.html"

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
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(site_header="docsmcp", site_title="docsmcp", title="Authorize a client")
        return context
