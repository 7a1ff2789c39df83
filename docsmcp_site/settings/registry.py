"""Every environment variable the server reads, once: its type, default, section and what it does.

The settings modules read each one through `env.env(NAME)`, which parses it by the type written here, and
docs/settings.md is generated from this table (`scripts/settings_docs.py`; tests/docsmcp_site/test_settings_documented.py
fails when the committed page is not what the table gives). A default that depends on another setting
(a path under DOCSMCP_HOME, the broker's Redis) is COMPUTED here and handed in by the module that reads it;
`shown` is what the page says of it.
"""

from __future__ import annotations

from dataclasses import dataclass

# The types a variable may have, and what the page calls each.
KINDS = {"str": "text", "int": "whole number", "float": "number", "bool": "switch", "list": "comma-separated list",
         "choice": "one of", "path": "path"}


class _Computed:
    def __repr__(self) -> str:
        return "COMPUTED"


COMPUTED = _Computed()


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: object
    section: str
    help: str
    # The default as the page says it, where the value alone would not tell (computed, or a size in bytes).
    shown: str = ""
    # Choices of a "choice" variable.
    choices: tuple[str, ...] = ()
    # A number outside these bounds stops the process at start, naming the variable.
    minimum: float = 0
    maximum: float | None = None
    # For "str": whether an empty value means the default (`FOO=` in a unit file) rather than the empty text.
    empty_is_default: bool = False
    # Read elsewhere than through env(): that module's path (common/home.py runs before the settings exist).
    read_by: str = ""


# The page's sections, in order, with a sentence each.
SECTIONS = {
    "Where state lives": "The installation's home and database; every path default below is under `DOCSMCP_HOME`.",
    "Site and admin": "Django's own switches, the secret key, the hosts the server answers to and the admin's login.",
    "Task queue": "Celery runs builds, eval runs and fix scans; never a web request.",
    "Builds and sources": "Where builds are written, how they are embedded, which sources they may read, and the fixers.",
    "Serving": "`manage.py serve`'s workers, the connections they accept and the corpora they hold open.",
    "MCP endpoint": "Where `/mcp/` listens, who may call it and `/api/v1/`, and how much one call or caller may take.",
    "OAuth sign-in": "OAuth 2.1 for `/mcp/` and `/api/v1/`: the built-in authorization server, client registration "
                     "and an external issuer (docs/security.md).",
    "Query log, insights and evals": "What the server records of agents' calls, the insights read from it, and eval runs.",
    "citeloom profile": "Bounds of the citeloom tools (docs/contracts/citeloom-tools.md).",
}

_HOME, _SITE, _QUEUE, _BUILD, _SERVE, _MCP, _OAUTH, _LOG, _CITE = SECTIONS

SETTINGS: tuple[Setting, ...] = (
    # Where state lives
    Setting("DOCSMCP_HOME", "path", COMPUTED, _HOME,
            "where the defaults below keep their state (database, indexes, task queue, caches, secret key, collected "
            "static files)", read_by="common/home.py",
            shown="a checkout's `var/`; installed: the user data directory (`~/.local/share/docsmcp`, "
                  "`$XDG_DATA_HOME/docsmcp`, macOS `~/Library/Application Support/docsmcp`, Windows "
                  "`%LOCALAPPDATA%\\docsmcp`)"),
    Setting("XDG_DATA_HOME", "path", "", _HOME, "an installed server's data directory is `$XDG_DATA_HOME/docsmcp` "
            "(Linux; a relative path is ignored)", read_by="common/home.py", shown="`~/.local/share`"),
    Setting("LOCALAPPDATA", "path", "", _HOME, "an installed server's data directory is `%LOCALAPPDATA%\\docsmcp` "
            "(Windows)", read_by="common/home.py", shown="`~\\AppData\\Local`"),
    Setting("HOME", "path", "", _HOME, "the user's home, under which the data directory is found", read_by="common/home.py",
            shown="the account's home"),
    Setting("DATABASE_URL", "str", "", _HOME,
            "any `dj-database-url` form, e.g. `postgres://user@host:5432/db`; without it an SQLite file that "
            "`docsmcp` migrates on first use (a server's database is the operator's to migrate)",
            shown="`sqlite:///$DOCSMCP_HOME/docsmcp.sqlite3`"),
    Setting("DATABASE_CONN_MAX_AGE", "int", 60, _HOME,
            "seconds a process keeps a database connection open for its next request (`0`: a new connection per "
            "request)"),
    Setting("DOCSMCP_LOG_LEVEL", "str", "INFO", _HOME,
            "level of the `docsmcp` and `retrieval` loggers on standard error (`DEBUG`, `INFO`, `WARNING`, `ERROR`); "
            "every 5xx is logged there too, with its traceback and the request's `X-Request-ID`, whatever DEBUG is "
            "(docs/security.md)", empty_is_default=True),
    # Site and admin
    Setting("DJANGO_DEBUG", "bool", False, _SITE, "Django's debug pages; never on a server others reach"),
    Setting("DJANGO_SECRET_KEY", "str", "", _SITE,
            "signs sessions and keys the HMAC of list and search cursors; set it identically on every web worker",
            shown="generated once into `$DOCSMCP_HOME/secret_key` (0600); a development key only with "
                  "`DJANGO_DEBUG=true`"),
    Setting("DOCSMCP_SECRET_KEY_FILE", "path", COMPUTED, _SITE, "where the generated secret key is kept",
            shown="`$DOCSMCP_HOME/secret_key`"),
    Setting("DJANGO_ALLOWED_HOSTS", "list", ("localhost", "127.0.0.1", "[::1]", "testserver"), _SITE,
            "Host header allow-list (DNS rebinding protection); a Host outside it gets `403` on `/mcp/`"),
    Setting("DOCSMCP_ADMIN_LOGIN_MAX_FAILURES", "int", 10, _SITE,
            "admin login throttling: after this many failed logins for one username, or from one address, within the "
            "window, the login page refuses every attempt until the oldest has aged out, and says how long (`0`: off)"),
    Setting("DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES", "int", 15, _SITE,
            "the window of `DOCSMCP_ADMIN_LOGIN_MAX_FAILURES` and `DOCSMCP_OAUTH_REGISTRATION_MAX`, in minutes"),
    # Task queue
    Setting("CELERY_BROKER_URL", "str", "filesystem://", _QUEUE,
            "e.g. `redis://127.0.0.1:6379/0`; then run `celery -A common worker` yourself. Without it a filesystem "
            "queue under `$DOCSMCP_HOME/celery/` and `manage.py serve` starts a worker beside the web server",
            shown="a filesystem queue in `$DOCSMCP_HOME/celery/`", empty_is_default=True),
    Setting("CELERY_RESULT_BACKEND", "str", COMPUTED, _QUEUE,
            "where Celery keeps task results (docsmcp reads its builds' and runs' state from the database, not from "
            "here)", shown="the broker's URL; none with the filesystem queue", empty_is_default=True),
    Setting("DOCSMCP_CELERY_DIR", "path", COMPUTED, _QUEUE, "the filesystem queue's directory (without "
            "`CELERY_BROKER_URL`)", shown="`$DOCSMCP_HOME/celery`"),
    Setting("CELERY_TASK_ALWAYS_EAGER", "bool", False, _QUEUE,
            "run tasks inside the caller (tests, one-off scripts); never for a server, where a build takes minutes"),
    Setting("CELERY_TASK_DEFAULT_QUEUE", "str", "celery", _QUEUE,
            "the queue tasks are sent to and a worker started by `manage.py serve` reads; give each deployment "
            "sharing one Redis its own", empty_is_default=True),
    Setting("CELERY_WORKER_CONCURRENCY", "int", 2, _QUEUE, "tasks one worker runs at once (threads pool: no fork)"),
    # Builds and sources
    Setting("DOCSMCP_INDEX_ROOT", "str", COMPUTED, _BUILD,
            "where builds are written: `<root>/<corpus>/builds/<build id>/`; a local path, or `s3://bucket/prefix` "
            "on S3-compatible storage for several hosts (docs/deploy.md); every web node and worker names the same "
            "root", shown="`$DOCSMCP_HOME/indexes`", empty_is_default=True),
    Setting("DOCSMCP_STORAGE_OPTIONS", "str", "", _BUILD,
            "JSON object of storage options for an `s3://` root, e.g. `{\"endpoint\": \"http://minio:9000\", "
            "\"allow_http\": \"true\", \"region\": \"us-east-1\"}`; the `AWS_*` variables (`AWS_ACCESS_KEY_ID`, "
            "`AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, ...) fill what it leaves out. Environment "
            "only: never stored in the database", read_by="docsmcp_site/settings/build.py", shown="unset"),
    Setting("DOCSMCP_EMBEDDING_PROVIDER", "choice", "none", _BUILD,
            "how builds embed chunks for semantic search (docs/building.md): `hash` needs nothing, `local` a model "
            "shipped in a Python package, `openai` an OpenAI-compatible endpoint; a corpus's own provider overrides it",
            choices=("none", "hash", "openai", "local")),
    Setting("OPENAI_API_KEY", "str", "", _BUILD, "key of an OpenAI-compatible endpoint (embeddings, LLM fixer)",
            shown="unset"),
    Setting("OPENAI_BASE_URL", "str", "", _BUILD, "any OpenAI-compatible endpoint (embeddings, LLM fixer)",
            shown="OpenAI's"),
    Setting("DOCSMCP_KEEP_BUILDS", "int", 3, _BUILD, "complete builds kept per corpus for rollback (the active one is always kept)"),
    Setting("DOCSMCP_BUILD_LEASE_SECONDS", "int", 40, _BUILD,
            "a running build whose worker is silent this long is marked failed (worker stopped) by the reaper or the "
            "next build request; its worker renews the lease every third of it", minimum=1),
    Setting("DOCSMCP_BUILD_REAP_SECONDS", "int", 20, _BUILD,
            "seconds between two passes of every Celery worker's reaper, which marks failed the builds whose worker "
            "stopped or that no worker picked up (reads never do); `0` turns it off. Where Celery beat runs, the task "
            "`corpus.reap_builds` is also on its schedule"),
    Setting("DOCSMCP_SOURCE_ROOTS", "list", COMPUTED, _BUILD,
            "directories that corpora registered through the REST API or the admin may read from, checked again at "
            "every build and fix (a directory that now resolves elsewhere through a link is refused); "
            "`manage.py build_index --source DIR`, run by the operator, may use any directory; empty: none",
            shown="`$DOCSMCP_HOME/sources/`, the bundled `corpus/sample_docs/`"),
    Setting("DOCSMCP_SHARED_SOURCE_ROOTS", "list", (), _BUILD,
            "directories mounted at the same place on every Celery worker host (a shared volume): a corpus under one "
            "is not warned about as unreadable by workers elsewhere", shown="none"),
    Setting("DOCSMCP_GIT_CACHE_DIR", "path", COMPUTED, _BUILD,
            "bare cache repositories of git-sourced corpora, on the building host's disk (never the index root)",
            shown="`$DOCSMCP_HOME/git`"),
    Setting("DOCSMCP_GIT_TIMEOUT", "float", 120, _BUILD,
            "seconds one git command (fetch, ls-remote, ...) may take before the build fails with a clear error"),
    Setting("DOCSMCP_GIT_SSH_KEY", "str", "", _BUILD,
            "a deploy key (private key file) git uses for SSH URLs; or set `GIT_SSH_COMMAND` / a credential helper "
            "through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0` (git ignores `~/.gitconfig`, see "
            "docs/versions.md). Passwords in URLs are refused", shown="unset"),
    Setting("DOCSMCP_GIT_ALLOWED_URLS", "list", (), _BUILD,
            "URL prefixes (e.g. `https://github.com/myorg/`) that corpora registered through the REST API or the "
            "admin may be built from, compared after resolving `..`, `%2e` and default ports, segment by segment; "
            "`file://` URLs must be under `DOCSMCP_SOURCE_ROOTS`; `manage.py build_index --git`, run by the "
            "operator, may use any URL", shown="none"),
    Setting("DOCSMCP_MAX_FILE_BYTES", "int", 2 * 1024 * 1024, _BUILD,
            "a markdown file or manifest larger than this is skipped with a `file-too-large` warning naming it and "
            "the limit, so one huge page cannot take a build's memory", shown="`2097152` (2 MiB)"),
    Setting("DOCSMCP_FIX_MODEL", "str", "gpt-4o-mini", _BUILD, "chat model of the LLM fixer (`manage.py fix_docs "
            "--llm`)", empty_is_default=True),
    Setting("DOCSMCP_FIX_LLM_MAX_FILES", "int", 20, _BUILD, "files one LLM fixer run may send the model"),
    # Serving
    Setting("WEB_CONCURRENCY", "int", 0, _SERVE,
            "web worker processes of `manage.py serve` (gunicorn's variable); `0`: one per core plus one"),
    Setting("DOCSMCP_HEADER_TIMEOUT", "float", 10, _SERVE,
            "under `manage.py serve` a request reaches a thread only once it has fully arrived: seconds a connection "
            "has to send its request head before it is answered `408` and closed"),
    Setting("DOCSMCP_BODY_TIMEOUT", "float", 30, _SERVE, "seconds a request's body may take after its head, likewise"),
    Setting("DOCSMCP_SEND_TIMEOUT", "float", 60, _SERVE,
            "seconds a client may take none of its response before its connection is closed; the worker's event loop "
            "sends what a slow reader has not read yet, so it holds memory, no thread"),
    Setting("DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS", "int", 200, _SERVE,
            "connections one client address may hold open in one `serve` worker (each holds at most 1,000); past it a "
            "new one is answered 503 and closed. Behind a proxy every client has the proxy's address: raise it above "
            "the proxy's connections to this server, or `0` (no cap), and cap connections per client at the proxy "
            "(docs/deploy.md)"),
    Setting("DOCSMCP_INDEX_CACHE_DIR", "path", COMPUTED, _SERVE,
            "with an `s3://` root, where a web node keeps verified local copies of the builds it serves (fetched once "
            "in the background; a copy nobody on the node asked for in 5 minutes is deleted when the node copies the "
            "corpus's next build)", shown="`$DOCSMCP_HOME/index-cache`"),
    Setting("DOCSMCP_LOCAL_THREADS", "int", 0, _SERVE,
            "threads one query embedding of the `local` model may use in a `manage.py serve` worker; builds use every "
            "core. At 1 (the default with `serve`'s default workers) the gunicorn master loads the model once before "
            "it forks and the workers share it; above 1 each worker loads its own copy",
            shown="`0` (the cores divided among `serve`'s workers, at least 1)"),
    Setting("DOCSMCP_DEFAULT_CORPUS", "str", "", _SERVE, "the corpus served at `/mcp/`", shown="the first corpus"),
    Setting("DOCSMCP_CORPUS_ENUM_MAX", "int", 20, _SERVE,
            "`/mcp/` of several corpora (docs/corpora.md): up to this many corpora a caller may read, `search_docs`' "
            "and `get_doc`'s `corpus` argument lists them; above, it is a free string and a wrong name gets \"did you "
            "mean\""),
    Setting("DOCSMCP_SEARCH_ALL_MAX", "int", 20, _SERVE,
            "up to this many readable corpora, a search at `/mcp/` without `corpus` covers them all; above, the ones "
            "that best match the query (`list_corpora`'s ranking)"),
    Setting("DOCSMCP_SEARCH_ROUTE_TOP", "int", 1, _SERVE,
            "of the corpora with a semantic model's vectors that a search without `corpus` covers, how many it ranks "
            "in full: those whose chunks come closest to the query; corpora without such vectors are always ranked. "
            "`0`: every corpus"),
    Setting("DOCSMCP_SERVING_MEMORY_MB", "int", 0, _SERVE,
            "memory a serving worker may spend on open indexes (docs/corpora.md): corpora open on first use and the "
            "least recently used close beyond it; `0`: no budget (at most 8 indexes open besides the pinned ones)"),
    Setting("DOCSMCP_PINNED_CORPORA", "str", "", _SERVE,
            "corpora a worker loads before it serves and never closes: comma-separated names, or `*` for all",
            shown="every corpus while the server has at most `DOCSMCP_PIN_ALL_MAX`, else none"),
    Setting("DOCSMCP_PIN_ALL_MAX", "int", 20, _SERVE, "see `DOCSMCP_PINNED_CORPORA`"),
    # MCP endpoint
    Setting("MCP_SERVER_HOST", "str", "127.0.0.1", _MCP,
            "`manage.py serve` bind address; another address with `MCP_AUTH_REQUIRED` off prints a warning "
            "(docsmcp.W001)"),
    Setting("MCP_SERVER_PORT", "int", 8001, _MCP, "`manage.py serve` port; also names the server's own `/mcp/` for "
            "eval runs", minimum=1, maximum=65535),
    Setting("MCP_AUTH_REQUIRED", "bool", False, _MCP,
            "bearer auth on `/mcp/` and `/api/v1/`; when `false`, callers without a key may only read, and every "
            "write needs a key with the scope (or an admin staff session); a key that is not valid is always `401`. "
            "Keys (with scopes, optionally limited to some corpora) are created in the admin or with "
            "`manage.py mcp_apikey`"),
    Setting("MCP_API_KEY", "str", "", _MCP,
            "one key with every scope, checked without the database; treat it as a root password and prefer database "
            "keys with narrow scopes", shown="unset"),
    Setting("MCP_ALLOWED_ORIGINS", "list", ("http://localhost:*", "https://localhost:*", "http://127.0.0.1:*",
                                            "https://127.0.0.1:*", "http://[::1]:*", "https://[::1]:*"), _MCP,
            "browser `Origin` values allowed on `/mcp/` and `/api/v1/` (others get `403`); `http://host:*` matches "
            "any port; `*` (any web page) must be set explicitly", shown="loopback origins, any port"),
    Setting("MCP_MAX_BODY_BYTES", "int", 1024 * 1024, _MCP,
            "request bodies larger than this get `413` before they are read", shown="`1048576` (1 MiB)"),
    Setting("MCP_RATE_LIMIT_PER_MINUTE", "int", 600, _MCP,
            "requests per key, or per address for anonymous callers, per minute; `0` turns limiting off"),
    Setting("MCP_RATE_LIMIT_REDIS_URL", "str", COMPUTED, _MCP,
            "counters in Redis, shared by every worker; empty (or a broker that is not Redis) keeps them in each "
            "process's memory", shown="`CELERY_BROKER_URL` when it is Redis"),
    Setting("MCP_TRUST_X_FORWARDED_FOR", "bool", False, _MCP,
            "rate-limit anonymous callers by the last `X-Forwarded-For` hop: only behind your own proxy"),
    Setting("DOCSMCP_TRUST_X_FORWARDED_PROTO", "bool", False, _MCP,
            "believe `X-Forwarded-Proto`, so the URLs the server names (OAuth metadata, issuer, token audience, "
            "resource links) are `https://` behind a TLS-terminating proxy: only behind your own proxy"),
    Setting("MCP_LIST_PAGE_SIZE", "int", 100, _MCP, "page size of `tools/list`, `resources/list`, `prompts/list` "
            "(cursor-paginated)"),
    Setting("MCP_RESPONSE_TOKEN_BUDGET", "int", 8000, _MCP,
            "most tokens (estimated as characters / 4) one tool result may hold; longer results are cut with a "
            "notice saying how to read the rest (docs/mcp.md)"),
    Setting("MCP_CACHE_TTL_MS", "int", 0, _MCP,
            "`ttlMs` on cacheable 2026-07-28 results; `0`: re-fetched each time (tool schemas follow the active "
            "build)"),
    Setting("MCP_MAX_BATCH", "int", 20, _MCP, "messages per JSON-RPC batch (protocol 2025-03-26 only)"),
    Setting("MCP_MAX_BATCH_RESPONSE_BYTES", "int", 1024 * 1024, _MCP,
            "a batch's replies stop at this size; later calls get \"response budget exhausted\" errors",
            shown="`1048576` (1 MiB)"),
    Setting("DOCSMCP_DEFAULT_PROFILE", "str", "docs", _MCP,
            "the tool profile served at `/mcp` and `/mcp/` (`documents`, `techdoc`, `citeloom`: docs/profiles.md); "
            "`/mcp/<profile>/` always works"),
    # OAuth sign-in
    Setting("DOCSMCP_OAUTH_SERVER", "bool", True, _OAUTH,
            "the built-in authorization server: sign-in through Django's login, a consent page, tokens in the admin"),
    Setting("DOCSMCP_OAUTH_ACCESS_TOKEN_SECONDS", "int", 3600, _OAUTH,
            "lifetime of an access token; a client refreshes it with its (rotated) refresh token", minimum=1),
    Setting("DOCSMCP_OAUTH_REFRESH_TOKEN_SECONDS", "int", 30 * 24 * 3600, _OAUTH, "lifetime of a refresh token",
            shown="`2592000` (30 days)", minimum=1),
    Setting("DOCSMCP_OAUTH_REGISTRATION", "bool", COMPUTED, _OAUTH,
            "dynamic client registration (RFC 7591): any caller may register a client (it still needs a user's "
            "sign-in and consent for a token)",
            shown="on while the server listens on loopback and trusts no proxy's headers"),
    Setting("DOCSMCP_OAUTH_REGISTRATION_MAX", "int", 20, _OAUTH,
            "OAuth dynamic client registrations one address may make within `DOCSMCP_ADMIN_LOGIN_WINDOW_MINUTES` "
            "before it gets 429 (`0`: no limit); failed client authentications at `/oauth/token/` count like failed "
            "logins (docs/security.md)"),
    Setting("DOCSMCP_OAUTH_CLIENT_METADATA_DOCUMENTS", "bool", True, _OAUTH,
            "Client ID Metadata Documents: an HTTPS URL as `client_id`, its document fetched (public hosts only, "
            "size and time bounded)"),
    Setting("DOCSMCP_OAUTH_CLIENT_HOSTS", "list", (), _OAUTH,
            "the hosts whose client metadata documents are fetched", shown="any public host"),
    Setting("DOCSMCP_OAUTH_ISSUER", "str", "", _OAUTH,
            "an external issuer (instead of, or beside, the built-in server): its tokens are JWTs signed by a key of "
            "its JWKS, with this server's audience", shown="unset"),
    Setting("DOCSMCP_OAUTH_AUDIENCE", "str", "", _OAUTH, "the audience the external issuer's tokens must name",
            shown="this server's URL"),
    Setting("DOCSMCP_OAUTH_JWKS_URL", "str", "", _OAUTH, "where the external issuer's keys are",
            shown="`<issuer>/.well-known/jwks.json`"),
    Setting("DOCSMCP_OAUTH_SCOPE_MAP", "list", (), _OAUTH,
            "the external issuer's scopes as docsmcp's, `theirs=ours` pairs (e.g. `docs.read=read,docs.write=write`)",
            shown="the same names"),
    # Query log, insights and evals
    Setting("DOCSMCP_QUERY_LOG", "choice", "full", _LOG,
            "what the query log keeps of every search and read call and every agent feedback report: `full`, "
            "`no-text` (no query text, feedback query or comment, only IDs that resolve to a chunk or page, and an "
            "access log without query strings) or `off` (nothing); see docs/security.md",
            choices=("full", "no-text", "off")),
    Setting("DOCSMCP_QUERY_LOG_DAYS", "int", 90, _LOG,
            "days query records and feedback are kept; older ones are deleted hourly by each serving process and by "
            "`manage.py prune_query_log` (`0`: keep forever)"),
    Setting("DOCSMCP_QUERY_LOG_BUFFER", "int", 10000, _LOG,
            "records one process holds for the log's background writer; past that, new records are dropped and "
            "counted, never waited for"),
    Setting("DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE", "int", 20, _LOG,
            "feedback reports (`docs_feedback` and its equivalents) per caller per minute, a limit of their own "
            "beside `MCP_RATE_LIMIT_PER_MINUTE`; `0` = unlimited"),
    Setting("DOCSMCP_INSIGHTS_LOW_SCORE", "float", 0.4, _LOG,
            "on the insights pages, a search whose best hit scores under this counts as low-score (unanswered); a "
            "corpus's settings `{\"low_score\": ...}` override it (docs/feedback.md)", maximum=1),
    Setting("DOCSMCP_INSIGHTS_CACHE_SECONDS", "int", 30, _LOG,
            "seconds a corpus's insights page reuses its calls per day, top queries and pages (`0`: always "
            "recomputed, and the gap list's questions too, which are otherwise reused until a call arrives)"),
    Setting("DOCSMCP_EVAL_ALLOWED_URLS", "list", (), _LOG,
            "URL prefixes eval runs over HTTP may target besides this server's own `/mcp/` URLs", shown="none"),
    # citeloom profile
    Setting("CITELOOM_TIMEOUT_STORE_CHUNKS", "float", 15, _CITE, "seconds `store_chunks` may take"),
    Setting("CITELOOM_TIMEOUT_FIND_CHUNKS", "float", 8, _CITE, "seconds `find_chunks` may take"),
    Setting("CITELOOM_TIMEOUT_QUERY_HYBRID", "float", 15, _CITE, "seconds `query_hybrid` may take"),
    Setting("CITELOOM_TIMEOUT_INSPECT_COLLECTION", "float", 5, _CITE, "seconds `inspect_collection` may take"),
    Setting("CITELOOM_TIMEOUT_LIST_PROJECTS", "float", 2, _CITE, "seconds `list_projects` may take"),
    Setting("CITELOOM_MAX_CHARS_PER_CHUNK", "int", 1800, _CITE, "characters of a chunk's text in a result",
            minimum=1),
    Setting("CITELOOM_MAX_TOP_K", "int", 20, _CITE, "most results one query may ask for", minimum=1),
    Setting("CITELOOM_BATCH_MIN", "int", 100, _CITE, "fewest chunks one `store_chunks` call is told to send", minimum=1),
    Setting("CITELOOM_BATCH_MAX", "int", 500, _CITE, "most chunks one `store_chunks` call may send", minimum=1),
    Setting("CITELOOM_MAX_BODY_BYTES", "int", 32 * 1024 * 1024, _CITE,
            "bodies on the citeloom path may be this large (`store_chunks` carries vectors: 500 x 384 floats is "
            "about 4 MB)", shown="`33554432` (32 MiB)"),
)

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}


def default_text(setting: Setting) -> str:
    """The default as the page shows it."""
    if setting.shown:
        return setting.shown
    value = setting.default
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return f"`{','.join(value)}`" if value else "none"
    if value == "":
        return "unset"
    return f"`{value}`"


def _kind_text(setting: Setting) -> str:
    if setting.kind == "choice":
        return "one of " + ", ".join(f"`{choice}`" for choice in setting.choices)
    text = KINDS[setting.kind]
    if setting.kind in ("int", "float") and (setting.minimum or setting.maximum is not None):
        text += f", {setting.minimum:g}" + (f" to {setting.maximum:g}" if setting.maximum is not None else " or more")
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(checks: list[tuple[str, str, str]]) -> str:
    """docs/settings.md: one table per section, then the start-up checks (ID, what it catches, the fix)."""
    lines = [
        "# Settings",
        "",
        "<!-- Generated from docsmcp_site/settings/registry.py and docsmcp_site/checks.py by "
        "`scripts/settings_docs.py`; edit those, not this page. -->",
        "",
        "docsmcp reads its settings from the environment only. A number or switch left empty means its default; "
        "a text or list left empty is a value (`MCP_RATE_LIMIT_REDIS_URL=` keeps rate-limit counters in memory). Numbers "
        "are 0 or more unless their type says otherwise. A value that does not parse, or a number out of its "
        "bounds, stops the process at start-up naming the variable (`DOCSMCP_KEEP_BUILDS must be a whole number; got 'three'`). Switches take `1`, `true`, `yes`, "
        "`on`, `0`, `false`, `no`, `off`. Settings that contradict each other are reported by "
        "`manage.py check --deploy` ([checks below](#start-up-checks)).",
        "",
        "How to set them for a team's server: [deploy.md](deploy.md); what each one opens: "
        "[security.md](security.md).",
        "",
    ]
    for section, sentence in SECTIONS.items():
        lines += [f"## {section}", "", sentence, "", "| variable | type | default | meaning |", "| --- | --- | --- | --- |"]
        lines += [f"| `{s.name}` | {_kind_text(s)} | {_cell(default_text(s))} | {_cell(s.help)} |"
                  for s in SETTINGS if s.section == section]
        lines.append("")
    lines += [
        "## Start-up checks",
        "",
        "Django's system checks report settings that contradict each other. Errors (`docsmcp.E…`) stop "
        "`manage.py serve`, `migrate` and `check`; warnings (`docsmcp.W…`) are reported by "
        "`manage.py check --deploy`, which a deployment runs before it starts the server (docs/deploy.md). "
        "`SILENCED_SYSTEM_CHECKS` cannot be set from the environment: fix the setting instead.",
        "",
        "| ID | reported when | what to do |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{check_id}` | {_cell(when)} | {_cell(fix)} |" for check_id, when, fix in checks]
    lines.append("")
    return "\n".join(lines)
