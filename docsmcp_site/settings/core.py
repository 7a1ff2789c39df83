"""The Django site itself: where state lives, secrets, hosts, apps, middleware, templates, the
database, static files, the admin's login throttle and logging."""

import sys
from pathlib import Path

import dj_database_url

from common.home import data_home, is_checkout
from docsmcp_site import __version__
from docsmcp_site.installed_apps import installed_apps
from docsmcp_site.private import keep_private, sqlite_files
from docsmcp_site.secret import installation_secret_key
from docsmcp_site.settings.env import env

SITE_DIR = Path(__file__).resolve().parent.parent
BASE_DIR = SITE_DIR.parent
# Where this installation's state lives (common/home.py, docs/deploy.md): DOCSMCP_HOME; else var/ of a
# checkout; else the user data directory (~/.local/share/docsmcp on Linux). Every path below defaults under it.
DOCSMCP_HOME = data_home(BASE_DIR)

# What this process writes (DOCSMCP_HOME, the database, indexes, caches) is private to its account: umask 077.
# Here rather than in boot(): every process that loads the settings gets it, whichever way it was started.
keep_private()

DEBUG = env("DJANGO_DEBUG")
# Without DJANGO_SECRET_KEY: a development key under DEBUG, otherwise one generated for this installation.
SECRET_KEY = env("DJANGO_SECRET_KEY") or (
    "docsmcp-dev-secret-only-for-debug-0123456789" if DEBUG else installation_secret_key(
        env("DOCSMCP_SECRET_KEY_FILE", DOCSMCP_HOME / "secret_key")))
ALLOWED_HOSTS = env("DJANGO_ALLOWED_HOSTS")
VERSION = __version__

# Every app, but a command that only builds or checks docs runs without the OAuth server's
# (docsmcp_site/installed_apps.py): its models import jwcrypto and cryptography.
INSTALLED_APPS = installed_apps(sys.argv)

MIDDLEWARE = [
    # Names each request (X-Request-ID) so a logged server error can be found from the response.
    "docsmcp_site.request_log.request_id",
    # First: answers a Host outside ALLOWED_HOSTS on /mcp paths with a JSON 403 (DNS rebinding).
    "mcp_endpoint.security.host_guard",
    # Gives errors Django or ninja answer under /api/v1/ (404, 405, 413...) the REST API's JSON shape.
    "common.api.errors.api_error_shape",
    # Refuses a disallowed Origin (403) and non-JSON writes (415) under /api/v1/ before anything reads them.
    "docsmcp_site.api.guard.api_guard",
    # No API key's corpus limit carries over from one request to the next on the same thread.
    "corpus.access.request_scope",
    "django.middleware.security.SecurityMiddleware",
    # Serves collected static files (the admin's CSS and JS) when DEBUG is off; `serve` collects them.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Answers an engine or app error that escapes a page from the HTML surface's table (pages.py).
    "docsmcp_site.pages.page_errors",
]

ROOT_URLCONF = "docsmcp_site.urls"
APPEND_SLASH = True

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # A checkout's templates/; the wheel installs the same files as docsmcp_site/templates/ (setup.py).
        "DIRS": [BASE_DIR / "templates" if is_checkout(BASE_DIR) else SITE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "docsmcp_site.wsgi.application"

# Without DATABASE_URL, an SQLite file under DOCSMCP_HOME that `docsmcp` migrates on first use (cli.py); a
# DATABASE_URL server is the operator's to migrate, as several nodes may share it.
_database_url = env("DATABASE_URL")
DATABASE_EMBEDDED = not _database_url
if DATABASE_EMBEDDED:
    DOCSMCP_HOME.mkdir(parents=True, exist_ok=True)  # the embedded default lives there; a fresh install lacks it
DATABASES = {
    "default": dj_database_url.parse(
        _database_url or f"sqlite:///{DOCSMCP_HOME / 'docsmcp.sqlite3'}",
        conn_max_age=env("DATABASE_CONN_MAX_AGE"),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Serving workers, the query log's writer thread and the task queue share one file. Write-ahead logging
    # lets a reader go on while another process commits, and with synchronous=NORMAL a commit waits for no
    # disk flush (a power cut may lose the last second of query log, never the file); IMMEDIATE takes the
    # write lock when a transaction begins, so two writers queue instead of one failing with "locked"; they
    # queue for up to 20 s (Python's default, 5 s, turned a burst of writes on a loaded host into 500s).
    DATABASES["default"]["OPTIONS"] = {"init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL",
                                       "transaction_mode": "IMMEDIATE", "timeout": 20,
                                       **DATABASES["default"].get("OPTIONS", {})}
keep_private(DOCSMCP_HOME, *sqlite_files(DATABASES["default"]))  # as made 0755/0644 by earlier versions
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = DOCSMCP_HOME / "static"

# Admin login throttling (docsmcp_site/login_throttle.py): this many failed logins for one username, or from
# one address, within the window, and the login page refuses every attempt until the oldest one ages out.
DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = env("DOCSMCP_ADMIN_LOGIN_MAX_FAILURES")
DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES = env("DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES")

DOCSMCP_LOG_LEVEL = env("DOCSMCP_LOG_LEVEL")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Lines logged while a request is served end with its ID (docsmcp_site/request_log.py).
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s%(request_suffix)s"}},
    "filters": {"request_id": {"()": "docsmcp_site.request_log.RequestIdFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]}},
    "loggers": {
        "docsmcp": {"handlers": ["console"], "level": DOCSMCP_LOG_LEVEL},
        "retrieval": {"handlers": ["console"], "level": DOCSMCP_LOG_LEVEL},
        # Every 5xx (and its traceback), whatever DEBUG is (docsmcp_site/request_log.py); 4xx stay out.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}
