"""Interactive API docs that work offline.

ninja's Swagger page loads its JS and CSS from a CDN unless `ninja` is an installed app, and
then from STATIC_URL, which nothing serves when DEBUG is off. The assets ship inside the
ninja wheel, so the API serves them itself at /api/v1/docs/assets/<name>: the page works on a
machine with no internet and no static-file server.
"""

from __future__ import annotations

import html
import json
import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ninja
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Router
from ninja.openapi.docs import DocsBase

if TYPE_CHECKING:
    from ninja import NinjaAPI

ASSET_DIR = Path(ninja.__file__).resolve().parent / "static" / "ninja"
ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-init.js", "favicon.png")

router = Router(tags=["docs"])


@router.get("/docs/assets/{name}", auth=None, include_in_schema=False, url_name="docs-asset")
def docs_asset(request: HttpRequest, name: str):
    if name not in ASSETS:
        raise Http404(f"no docs asset named {name!r}")
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    response = FileResponse((ASSET_DIR / name).open("rb"), content_type=content_type)
    response["Cache-Control"] = "public, max-age=86400"
    return response


class OfflineSwagger(DocsBase):
    """Swagger UI from the assets bundled with ninja; the settings JSON is passed as in ninja's page."""

    settings: dict[str, Any] = {"layout": "BaseLayout", "deepLinking": True, "persistAuthorization": True}

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        asset = reverse(f"{api.urls_namespace}:docs-asset", kwargs={"name": "X"})[:-1]
        config = json.dumps({**self.settings, "url": self.get_openapi_url(api, kwargs)}).replace("</", "<\\/")
        title = html.escape(api.title)
        page = f"""<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{asset}swagger-ui.css">
<link rel="icon" type="image/png" href="{asset}favicon.png">
</head>
<body data-csrf-token="" data-api-csrf="">
<script type="application/json" id="swagger-settings">{config}</script>
<div id="swagger-ui"></div>
<script src="{asset}swagger-ui-bundle.js"></script>
<script src="{asset}swagger-ui-init.js"></script>
</body>
</html>
"""
        return HttpResponse(page)
