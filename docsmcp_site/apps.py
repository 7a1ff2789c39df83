from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The site as an app, so that its system checks (checks.py) are registered when Django starts."""

    name = "docsmcp_site"
    label = "docsmcp_site"
    verbose_name = "docsmcp site"

    def ready(self) -> None:
        from docsmcp_site import checks  # noqa: F401 (registers the checks)
