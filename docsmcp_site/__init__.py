"""The Django project. Celery's app lives in docsmcp_site.celery, which `celery -A docsmcp_site` finds
by itself and the task modules import: a command or request that queues nothing never loads Celery."""

# The package's version (pyproject.toml reads it; settings.VERSION is what the server reports).
__version__ = "0.1.0"
