from django.contrib import admin
from django.urls import include, path

from docsmcp_site.api.assembly import api

admin.autodiscover()  # the admin app is SimpleAdminConfig (settings.INSTALLED_APPS)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("mcp_endpoint.urls")),
    path("evals/", include("evals.urls")),
]
