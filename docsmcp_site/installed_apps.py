"""Which Django apps a process installs: every app, except in a command that only builds or checks docs.

Django imports each installed app's models when it sets up, and django-oauth-toolkit's import jwcrypto
and cryptography (about a seventh of `build_index`'s start-up). A command that serves no request and
signs no one in has no use for them, so it runs without the OAuth server's app. Chosen from the command
line, as `manage.py`, `docsmcp` and `python -m docsmcp_site` pass it to Django, because the settings are
read before the command is known to Django. Every other process (a server, a Celery worker, the tests, a
command that `serve` calls in-process) keeps every app, migrations and admin included.
"""

from __future__ import annotations

from collections.abc import Sequence

# Commands that read sources and write builds and corpora only: no request, no token, no OAuth table.
ENGINE_COMMANDS = frozenset({"build_index", "validate_docs"})

# The built-in OAuth 2.1 authorization server (docs/security.md#signing-in-with-oauth).
OAUTH_APPS = ("oauth2_provider",)

SITE_APPS = (
    # Without autodiscovery: urls.py registers the admin's models when the site's URLs load, so a
    # management command that serves no page does not import every admin module.
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    *OAUTH_APPS,
    "corpus",
    "mcp_endpoint",
    "evals",
    "insights",
    # The site's own system checks (docsmcp_site/checks.py).
    "docsmcp_site.apps.SiteConfig",
)


def installed_apps(argv: Sequence[str]) -> list[str]:
    """The apps for a process started with `argv`: without OAuth's when argv[1] is an engine command.
    A database such a command migrates (the embedded one, docsmcp_site/cli.py) gets OAuth's tables from
    the next command that installs it."""
    if len(argv) > 1 and argv[1] in ENGINE_COMMANDS:
        return [app for app in SITE_APPS if app not in OAUTH_APPS]
    return list(SITE_APPS)
