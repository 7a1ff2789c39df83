from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from docsmcp_site.api.assembly import api
from docsmcp_site.login_throttle import ThrottledAdminAuthenticationForm

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
]
