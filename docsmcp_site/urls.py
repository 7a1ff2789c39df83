from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from docsmcp_site.api.assembly import api
from docsmcp_site.login_throttle import ThrottledAdminAuthenticationForm
from docsmcp_site.signin import (
    ConsentView,
    RegistrationView,
    ResourceMetadataView,
    RevokeTokenView,
    SignInView,
    TokenView,
)

admin.autodiscover()  # the admin app is SimpleAdminConfig (settings.INSTALLED_APPS)
admin.site.login_form = ThrottledAdminAuthenticationForm  # repeated failed logins are refused for a while

urlpatterns = [
    # API keys moved from the mcp_endpoint app to corpus: old admin links still arrive.
    re_path(r"^admin/mcp_endpoint/apikey/(?P<rest>.*)$",
            RedirectView.as_view(url="/admin/corpus/apikey/%(rest)s", permanent=True, query_string=True)),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("mcp_endpoint.urls")),
    path("evals/", include("evals.urls")),
    path("insights/", include("insights.urls")),
    # OAuth 2.1 sign-in (docs/security.md#signing-in-with-oauth): where each resource says who signs in.
    path(".well-known/oauth-protected-resource", ResourceMetadataView.as_view()),
    path(".well-known/oauth-protected-resource/<path:resource_path>", ResourceMetadataView.as_view()),
]

if settings.DOCSMCP_OAUTH_SERVER:
    from oauth2_provider import views as oauth_views

    urlpatterns += [
        path("accounts/login/", SignInView.as_view(), name="login"),
        path("", include(([
            path(".well-known/oauth-authorization-server", oauth_views.OAuthServerMetadataView.as_view(),
                 name="oauth-server-metadata"),
            path("oauth/authorize/", ConsentView.as_view(), name="authorize"),
            path("oauth/token/", TokenView.as_view(), name="token"),
            path("oauth/revoke/", RevokeTokenView.as_view(), name="revoke-token"),
            path("oauth/register/", RegistrationView.as_view(), name="dcr-register"),
            path("oauth/register/<str:client_id>/", oauth_views.DynamicClientRegistrationManagementView.as_view(),
                 name="dcr-register-management"),
        ], "oauth2_provider"))),
    ]

