import os

from retrieval.boot import boot

boot()

from django.core.wsgi import get_wsgi_application  # noqa: E402 (after boot: Django may load LanceDB)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
application = get_wsgi_application()
