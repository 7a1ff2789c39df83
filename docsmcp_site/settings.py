"""Settings read from the environment; every default works on one machine with nothing but Python."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from common.home import data_home, is_checkout
from docsmcp_site import __version__
from docsmcp_site.private import keep_private, sqlite_files
from docsmcp_site.secret import installation_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
# Where this installation's state lives (common/home.py, docs/deploy.md): DOCSMCP_HOME; else var/ of a
# checkout; else the user data directory (~/.local/share/docsmcp on Linux). Every path below defaults under it.
DOCSMCP_HOME = data_home(BASE_DIR)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


os.environ.setdefault("LANCE_LOG", "error")
# What this process writes (DOCSMCP_HOME, the database, indexes, caches) is private to its account: umask 077.
keep_private()

DEBUG = env_bool("DJANGO_DEBUG", False)
# Without DJANGO_SECRET_KEY: a development key under DEBUG, otherwise one generated for this installation.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or (
    "docsmcp-dev-secret-only-for-debug-0123456789" if DEBUG else installation_secret_key(
        Path(os.environ.get("DOCSMCP_SECRET_KEY_FILE", DOCSMCP_HOME / "secret_key"))))
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
VERSION = __version__

INSTALLED_APPS = [
    # Without autodiscovery: urls.py registers the admin's models when the site's URLs load, so a
    # management command that serves no page does not import every admin module.
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corpus",
    "mcp_endpoint",
    "evals",
    "insights",
]

MIDDLEWARE = [
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
]

ROOT_URLCONF = "docsmcp_site.urls"
APPEND_SLASH = True

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # A checkout's templates/; the wheel installs the same files as docsmcp_site/templates/ (setup.py).
        "DIRS": [BASE_DIR / "templates" if is_checkout(BASE_DIR) else Path(__file__).resolve().parent / "templates"],
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

if "DATABASE_URL" not in os.environ:
    DOCSMCP_HOME.mkdir(parents=True, exist_ok=True)  # the embedded default lives there; a fresh install lacks it
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DOCSMCP_HOME / 'docsmcp.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
    )
}
keep_private(DOCSMCP_HOME, *sqlite_files(DATABASES["default"]))  # as made 0755/0644 by earlier versions
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = DOCSMCP_HOME / "static"

# Celery is the only task system. Without CELERY_BROKER_URL the broker is a directory under DOCSMCP_HOME
# (kombu's filesystem transport) and `manage.py serve` starts a worker beside the web server.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "") or "filesystem://"
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or (
    None if CELERY_BROKER_URL == "filesystem://" else CELERY_BROKER_URL)
if CELERY_BROKER_URL == "filesystem://":
    CELERY_QUEUE_DIR = Path(os.environ.get("DOCSMCP_CELERY_DIR", DOCSMCP_HOME / "celery"))
    for _folder in ("queue", "control"):
        (CELERY_QUEUE_DIR / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_QUEUE_DIR / "queue"), "data_folder_out": str(CELERY_QUEUE_DIR / "queue"),
        "control_folder": str(CELERY_QUEUE_DIR / "control"), "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 1}
# Run tasks inside the caller (tests, one-off scripts); never for a server: a build takes minutes.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Threads, not forked processes: LanceDB does not support fork, and builds release the GIL in Arrow/Lance.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = int(os.environ.get("CELERY_WORKER_CONCURRENCY", "2"))
# Web worker processes of `manage.py serve` (gunicorn's variable); 0: one per core plus one.
WEB_CONCURRENCY = int(os.environ.get("WEB_CONCURRENCY") or 0)
# A web request that queues a task answers 503 within about two seconds when the broker is down
# (two attempts of one second each), instead of hanging (corpus/queue.py).
CELERY_BROKER_CONNECTION_TIMEOUT = 1
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
# Nothing reads a task's result (a build's or run's outcome is its row), so queueing never waits on the
# result backend, whose own retries would hold a request for 20 s when Redis is down.
CELERY_TASK_IGNORE_RESULT = True

# The engine
# A local path, or an object store (`s3://bucket/prefix`, reached with DOCSMCP_STORAGE_OPTIONS or the
# AWS_* variables: docs/deploy.md). Every web node and worker must name the same root.
_index_root = str(os.environ.get("DOCSMCP_INDEX_ROOT", DOCSMCP_HOME / "indexes"))
DOCSMCP_INDEX_ROOT = _index_root.rstrip("/") if "://" in _index_root else Path(_index_root)
# What reaches the object store (corpus.apps hands it to retrieval.storage): never stored anywhere else.
DOCSMCP_STORAGE_ENVIRONMENT = {name: value for name, value in os.environ.items()
                               if name == "DOCSMCP_STORAGE_OPTIONS" or name.startswith("AWS_")}
# Where a web node keeps local copies of the active builds of an object-store root, so searches do not
# wait on the store; unused when the root is a local path.
DOCSMCP_INDEX_CACHE_DIR = Path(os.environ.get("DOCSMCP_INDEX_CACHE_DIR", DOCSMCP_HOME / "index-cache"))
DOCSMCP_EMBEDDING_PROVIDER = os.environ.get("DOCSMCP_EMBEDDING_PROVIDER", "none")
# Threads one run of the local model may use in a serving worker (0: the cores divided among the workers).
DOCSMCP_LOCAL_THREADS = int(os.environ.get("DOCSMCP_LOCAL_THREADS", "0") or 0)
DOCSMCP_KEEP_BUILDS = int(os.environ.get("DOCSMCP_KEEP_BUILDS", "3"))
# A running build's worker renews its lease every third of this; a build whose lease lapsed is
# marked failed (its worker stopped) the next time anyone asks, so a dead worker blocks a corpus this long.
DOCSMCP_BUILD_LEASE_SECONDS = int(os.environ.get("DOCSMCP_BUILD_LEASE_SECONDS", "40"))
DOCSMCP_DEFAULT_CORPUS = os.environ.get("DOCSMCP_DEFAULT_CORPUS", "")
# /mcp/ of several corpora (docs/corpora.md): up to this many corpora a caller may read, search_docs' and get_doc's
# `corpus` argument lists them (an enum); above, it is a free string and a wrong name gets "did you mean".
DOCSMCP_CORPUS_ENUM_MAX = int(os.environ.get("DOCSMCP_CORPUS_ENUM_MAX", "20"))
# Up to this many readable corpora, a search at /mcp/ without `corpus` covers them all; above, the ones that best
# match the query (list_corpora's ranking), so one search never opens every corpus of a large server.
DOCSMCP_SEARCH_ALL_MAX = int(os.environ.get("DOCSMCP_SEARCH_ALL_MAX", "20"))
# Memory a serving worker may spend on open indexes (docs/corpora.md): corpora open on first use and the least
# recently used close beyond it; 0: no budget (at most 8 indexes open besides the pinned ones, as before).
DOCSMCP_SERVING_MEMORY_MB = int(os.environ.get("DOCSMCP_SERVING_MEMORY_MB", "0") or 0)
# Corpora a worker loads before it serves and never closes: comma-separated names, or * for all. Unset: every
# corpus while the server has at most DOCSMCP_PIN_ALL_MAX of them, else none.
DOCSMCP_PINNED_CORPORA = os.environ.get("DOCSMCP_PINNED_CORPORA", "")
DOCSMCP_PIN_ALL_MAX = int(os.environ.get("DOCSMCP_PIN_ALL_MAX", "20"))
# Directories a corpus registered through the REST API or the admin may read its markdown from
# (comma-separated). Narrow by default: sources/ under DOCSMCP_HOME and the bundled sample. `manage.py build_index`,
# run by the operator, may register any directory.
DOCSMCP_SOURCE_ROOTS = env_list("DOCSMCP_SOURCE_ROOTS",
                                f"{DOCSMCP_HOME / 'sources'},{BASE_DIR / 'corpus' / 'sample_docs'}")
# Directories mounted at the same place on every Celery worker host (a shared volume): a corpus under
# one is not warned about as unreadable by workers elsewhere (corpus/reach.py).
DOCSMCP_SHARED_SOURCE_ROOTS = env_list("DOCSMCP_SHARED_SOURCE_ROOTS", "")
# Git sources: bare cache repositories on this host's disk (never the index root), the time one git
# command may take, and the URL prefixes the REST API and the admin may register (file:// URLs are
# held to DOCSMCP_SOURCE_ROOTS instead). `manage.py build_index --git` may use any URL. A deploy key
# (DOCSMCP_GIT_SSH_KEY, a private key file) or GIT_SSH_COMMAND / a credential helper gives git its
# credentials; a password in a URL is refused.
DOCSMCP_GIT_CACHE_DIR = Path(os.environ.get("DOCSMCP_GIT_CACHE_DIR", DOCSMCP_HOME / "git"))
DOCSMCP_GIT_TIMEOUT = float(os.environ.get("DOCSMCP_GIT_TIMEOUT", "120"))
DOCSMCP_GIT_SSH_KEY = os.environ.get("DOCSMCP_GIT_SSH_KEY", "")
DOCSMCP_GIT_ALLOWED_URLS = env_list("DOCSMCP_GIT_ALLOWED_URLS", "")
# A source file (markdown page or manifest) larger than this is skipped with a finding, so one huge
# page cannot take the build's memory.
DOCSMCP_MAX_FILE_BYTES = int(os.environ.get("DOCSMCP_MAX_FILE_BYTES", str(2 * 1024 * 1024)))
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
# The LLM fixer (manage.py fix_docs --llm): chat model, and how many files one run may send it.
DOCSMCP_FIX_MODEL = os.environ.get("DOCSMCP_FIX_MODEL", "gpt-4o-mini")
DOCSMCP_FIX_LLM_MAX_FILES = int(os.environ.get("DOCSMCP_FIX_LLM_MAX_FILES", "20"))

# MCP endpoint (names and defaults from the TechDoc contract)
MCP_SERVER_HOST = os.environ.get("MCP_SERVER_HOST", "127.0.0.1")
MCP_SERVER_PORT = int(os.environ.get("MCP_SERVER_PORT", "8001"))
MCP_AUTH_REQUIRED = env_bool("MCP_AUTH_REQUIRED", False)
MCP_API_KEY = os.environ.get("MCP_API_KEY", "")
# Web origins that may call /mcp/ and /api/v1/ from a browser; ":*" means any port. Loopback only by
# default: "*" (any web page) must be set explicitly.
MCP_ALLOWED_ORIGINS = env_list(
    "MCP_ALLOWED_ORIGINS",
    "http://localhost:*,https://localhost:*,http://127.0.0.1:*,https://127.0.0.1:*,http://[::1]:*,https://[::1]:*",
)
MCP_MAX_BODY_BYTES = int(os.environ.get("MCP_MAX_BODY_BYTES", str(1024 * 1024)))
# `manage.py serve` receives each request before a thread takes it (docsmcp_site/front.py): seconds a
# connection has to send its request head, and then its body, before it is answered 408 and closed.
DOCSMCP_HEADER_TIMEOUT = float(os.environ.get("DOCSMCP_HEADER_TIMEOUT", "10"))
DOCSMCP_BODY_TIMEOUT = float(os.environ.get("DOCSMCP_BODY_TIMEOUT", "30"))
MCP_RATE_LIMIT_PER_MINUTE = int(os.environ.get("MCP_RATE_LIMIT_PER_MINUTE", "600"))
MCP_RATE_LIMIT_REDIS_URL = os.environ.get("MCP_RATE_LIMIT_REDIS_URL", os.environ.get("CELERY_BROKER_URL", ""))
DATA_UPLOAD_MAX_MEMORY_SIZE = MCP_MAX_BODY_BYTES
# Page size of tools/list, resources/list, prompts/list (cursor-paginated).
MCP_LIST_PAGE_SIZE = int(os.environ.get("MCP_LIST_PAGE_SIZE", "100"))
# ttlMs on cacheable 2026-07-28 results; 0 = re-fetch each time (tool schemas follow the active build).
# Ceiling of one tool result, in tokens estimated as characters / 4 (mcp_endpoint/budget.py).
MCP_RESPONSE_TOKEN_BUDGET = int(os.environ.get("MCP_RESPONSE_TOKEN_BUDGET", "8000"))
MCP_CACHE_TTL_MS = int(os.environ.get("MCP_CACHE_TTL_MS", "0"))
# Rate-limit anonymous callers by the last X-Forwarded-For hop (only behind a proxy you run).
MCP_TRUST_X_FORWARDED_FOR = env_bool("MCP_TRUST_X_FORWARDED_FOR", False)
# Admin login throttling (docsmcp_site/login_throttle.py): this many failed logins for one username, or from
# one address, within the window, and the login page refuses every attempt until the oldest one ages out.
DOCSMCP_ADMIN_LOGIN_MAX_FAILURES = int(os.environ.get("DOCSMCP_ADMIN_LOGIN_MAX_FAILURES", "10"))
DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES = int(os.environ.get("DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES", "15"))
# Bounded work per request (docs/security.md): messages per JSON-RPC batch, and the bytes of replies
# one batch may return before further calls are answered with a "response budget exhausted" error.
MCP_MAX_BATCH = int(os.environ.get("MCP_MAX_BATCH", "20"))
MCP_MAX_BATCH_RESPONSE_BYTES = int(os.environ.get("MCP_MAX_BATCH_RESPONSE_BYTES", str(1024 * 1024)))
# Eval runs over HTTP may target this server's own /mcp/ URLs and these URL prefixes only.
DOCSMCP_EVAL_ALLOWED_URLS = env_list("DOCSMCP_EVAL_ALLOWED_URLS", "")
# The query log (corpus/querylog.py, docs/security.md): every search and read call, and agents' feedback.
# full: everything; no-text: no query text, feedback query or comment; off: nothing is recorded.
DOCSMCP_QUERY_LOG = os.environ.get("DOCSMCP_QUERY_LOG", "full").strip().lower()
if DOCSMCP_QUERY_LOG not in ("full", "no-text", "off"):
    raise ImproperlyConfigured(f"DOCSMCP_QUERY_LOG must be full, no-text or off; got {DOCSMCP_QUERY_LOG!r}")
# Days records and feedback are kept (0: forever), and how many records a process buffers for its writer.
DOCSMCP_QUERY_LOG_DAYS = int(os.environ.get("DOCSMCP_QUERY_LOG_DAYS", "90"))
DOCSMCP_QUERY_LOG_BUFFER = int(os.environ.get("DOCSMCP_QUERY_LOG_BUFFER", "10000"))
# Feedback tool calls (docs_feedback and its equivalents) per caller per minute, beside MCP_RATE_LIMIT_PER_MINUTE.
DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE = int(os.environ.get("DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE", "20"))
# Insights (docs/feedback.md): a search whose best hit scores below this counts as low-score; a corpus's
# settings {"low_score": 0.3} override it. Scores are fused ranks in [0, 1]: 1 = first in every leg.
DOCSMCP_INSIGHTS_LOW_SCORE = float(os.environ.get("DOCSMCP_INSIGHTS_LOW_SCORE", "0.4"))
# Seconds a corpus page's aggregates (calls per day, top queries, pages) are reused; 0: always recomputed.
DOCSMCP_INSIGHTS_CACHE_SECONDS = int(os.environ.get("DOCSMCP_INSIGHTS_CACHE_SECONDS", "30"))
# The tool profile served at /mcp and /mcp/ (docs, documents, techdoc, citeloom); /mcp/<profile>/ always works.
DOCSMCP_DEFAULT_PROFILE = os.environ.get("DOCSMCP_DEFAULT_PROFILE", "docs")

# citeloom profile (docs/contracts/citeloom-tools.md): per-tool timeouts in seconds, output shaping, store_chunks batch bounds.
CITELOOM_TIMEOUTS = {
    tool: float(os.environ.get(f"CITELOOM_TIMEOUT_{tool.upper()}", default))
    for tool, default in (("store_chunks", 15), ("find_chunks", 8), ("query_hybrid", 15),
                          ("inspect_collection", 5), ("list_projects", 2))
}
CITELOOM_MAX_CHARS_PER_CHUNK = int(os.environ.get("CITELOOM_MAX_CHARS_PER_CHUNK", "1800"))
CITELOOM_MAX_TOP_K = int(os.environ.get("CITELOOM_MAX_TOP_K", "20"))
CITELOOM_BATCH_MIN = int(os.environ.get("CITELOOM_BATCH_MIN", "100"))
CITELOOM_BATCH_MAX = int(os.environ.get("CITELOOM_BATCH_MAX", "500"))
# store_chunks bodies carry vectors (500 x 384 floats is about 4 MB): the citeloom path takes this much.
CITELOOM_MAX_BODY_BYTES = int(os.environ.get("CITELOOM_MAX_BODY_BYTES", str(32 * 1024 * 1024)))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "docsmcp": {"handlers": ["console"], "level": os.environ.get("DOCSMCP_LOG_LEVEL", "INFO")},
        "retrieval": {"handlers": ["console"], "level": os.environ.get("DOCSMCP_LOG_LEVEL", "INFO")},
    },
}
