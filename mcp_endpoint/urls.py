"""Routes of the MCP endpoint, each corpus's llms.txt files and the health checks (included at the site root).

Both `/mcp` and `/mcp/` (and each profile path with and without the slash) route to the view
directly: a redirect would turn a client's POST into a GET.
"""

from django.urls import path

from mcp_endpoint import llmstxt
from mcp_endpoint.health import health
from mcp_endpoint.transport import mcp_view

urlpatterns = [
    path("mcp", mcp_view, name="mcp-noslash"),
    path("mcp/", mcp_view, name="mcp"),
    path("mcp/c/<str:corpus>", mcp_view, name="mcp-corpus-noslash"),
    path("mcp/c/<str:corpus>/", mcp_view, name="mcp-corpus"),
    path("mcp/<slug:profile>", mcp_view, name="mcp-profile-noslash"),
    path("mcp/<slug:profile>/", mcp_view, name="mcp-profile"),
    path("c/<str:corpus>/llms.txt", llmstxt.llms_index, name="llms-txt"),
    path("c/<str:corpus>/llms-full.txt", llmstxt.llms_full, name="llms-full-txt"),
    path("c/<str:corpus>/<path:path>", llmstxt.page_markdown, name="page-markdown"),
    path("health", health, name="health-noslash"),  # a load balancer that follows no redirect must get 200
    path("health/", health, name="health"),
    path("", health, name="root-health"),
]
