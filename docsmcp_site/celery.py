import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")

app = Celery("docsmcp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
