"""Settings that contradict each other, reported by Django's system checks before anything is served.

Each variable is parsed alone at start-up (settings/env.py); what only shows when two are read together
(an issuer's audience without the issuer, an object store without credentials, a public address without
auth) used to surface at run time, on the first request or build that needed it. Errors stop the
management commands that run checks (`manage.py serve`, `migrate`, `check`); warnings are for a
deployment, shown by `manage.py check --deploy`. docs/settings.md lists every ID, generated from RULES.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register


@dataclass(frozen=True)
class Rule:
    id: str
    when: str  # what it catches, for the docs
    fix: str  # the hint, also in the docs
    finds: Callable[[], str | None]  # the message naming the settings involved, or None when they agree

    def message(self) -> CheckMessage | None:
        found = self.finds()
        if found is None:
            return None
        level = Error if self.id.startswith("docsmcp.E") else Warning
        return level(found, hint=self.fix, id=self.id)


RULES: list[Rule] = []


def rule(check_id: str, when: str, fix: str) -> Callable[[Callable[[], str | None]], Callable[[], str | None]]:
    def add(finds: Callable[[], str | None]) -> Callable[[], str | None]:
        RULES.append(Rule(check_id, when, fix, finds))
        return finds

    return add


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@rule("docsmcp.E001", "`DOCSMCP_OAUTH_AUDIENCE`, `DOCSMCP_OAUTH_JWKS_URL` or `DOCSMCP_OAUTH_SCOPE_MAP` is set "
      "without `DOCSMCP_OAUTH_ISSUER`",
      "set DOCSMCP_OAUTH_ISSUER to the external issuer's URL, or unset the others: without an issuer no external "
      "token is accepted")
def _external_issuer_missing() -> str | None:
    given = [name for name in ("DOCSMCP_OAUTH_AUDIENCE", "DOCSMCP_OAUTH_JWKS_URL", "DOCSMCP_OAUTH_SCOPE_MAP")
             if getattr(settings, name)]
    if given and not settings.DOCSMCP_OAUTH_ISSUER:
        return f"{', '.join(given)} set for an external OAuth issuer, but DOCSMCP_OAUTH_ISSUER is not: they do nothing"
    return None


@rule("docsmcp.E002", "`DOCSMCP_STORAGE_OPTIONS` is not a JSON object",
      'give a JSON object of storage options, e.g. {"endpoint": "https://minio.internal:9000", "region": "us-east-1"}')
def _storage_options_unreadable() -> str | None:
    raw = settings.DOCSMCP_STORAGE_ENVIRONMENT.get("DOCSMCP_STORAGE_OPTIONS", "").strip()
    if not raw:
        return None
    try:
        given = json.loads(raw)
    except json.JSONDecodeError as exc:
        return f"DOCSMCP_STORAGE_OPTIONS is not valid JSON ({exc}); every build and search on the object store would fail"
    if not isinstance(given, dict):
        return "DOCSMCP_STORAGE_OPTIONS must be a JSON object of option names to values"
    return None


@rule("docsmcp.E003", "`CITELOOM_BATCH_MIN` is above `CITELOOM_BATCH_MAX`",
      "make CITELOOM_BATCH_MIN at most CITELOOM_BATCH_MAX")
def _citeloom_batches() -> str | None:
    if settings.CITELOOM_BATCH_MIN > settings.CITELOOM_BATCH_MAX:
        return (f"CITELOOM_BATCH_MIN ({settings.CITELOOM_BATCH_MIN}) is above CITELOOM_BATCH_MAX "
                f"({settings.CITELOOM_BATCH_MAX}): no store_chunks batch could satisfy both")
    return None


@rule("docsmcp.W001", "`MCP_SERVER_HOST` is not a loopback address and `MCP_AUTH_REQUIRED` is off",
      "set MCP_AUTH_REQUIRED=true and create keys with `manage.py mcp_apikey`, or bind 127.0.0.1 behind a reverse "
      "proxy (docs/deploy.md)")
def _open_to_the_network() -> str | None:
    if not is_loopback(settings.MCP_SERVER_HOST) and not settings.MCP_AUTH_REQUIRED:
        return (f"serving on {settings.MCP_SERVER_HOST} with MCP_AUTH_REQUIRED off: anyone who can reach the port can "
                "search and read every corpus without a key")
    return None


@rule("docsmcp.W002", "`MCP_ALLOWED_ORIGINS` allows any web page (`*`) and `MCP_AUTH_REQUIRED` is off",
      "list the origins of the web apps that call the server, or set MCP_AUTH_REQUIRED=true")
def _any_origin_without_auth() -> str | None:
    if "*" in settings.MCP_ALLOWED_ORIGINS and not settings.MCP_AUTH_REQUIRED:
        return "MCP_ALLOWED_ORIGINS is * with MCP_AUTH_REQUIRED off: any web page a user opens can read every corpus"
    return None


# Where an object-store client finds credentials besides the storage options.
AWS_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")


@rule("docsmcp.W003", "`DOCSMCP_INDEX_ROOT` is an `s3://` root and no credentials are given",
      "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or credentials in DOCSMCP_STORAGE_OPTIONS; ignore this "
      "only where the host has an instance role")
def _store_without_credentials() -> str | None:
    root = str(settings.DOCSMCP_INDEX_ROOT)
    if not root.startswith("s3://"):
        return None
    environment = settings.DOCSMCP_STORAGE_ENVIRONMENT
    if any(environment.get(name) for name in AWS_CREDENTIALS):
        return None
    try:
        options = json.loads(environment.get("DOCSMCP_STORAGE_OPTIONS") or "{}")
    except json.JSONDecodeError:
        return None  # docsmcp.E002 says so
    if isinstance(options, dict) and any("key" in name or "token" in name or "credential" in name
                                         for name in map(str.lower, options)):
        return None
    return (f"DOCSMCP_INDEX_ROOT is {root}, but neither the AWS_* variables nor DOCSMCP_STORAGE_OPTIONS give "
            "credentials: builds and searches fail unless the host has an instance role")


@rule("docsmcp.W004", "`DOCSMCP_INDEX_ROOT` is on an object store while the database is SQLite or the task queue "
      "is the filesystem one",
      "with several hosts, set DATABASE_URL to a PostgreSQL server and CELERY_BROKER_URL to a Redis every host reaches "
      "(docs/deploy.md)")
def _store_with_local_state() -> str | None:
    if "://" not in str(settings.DOCSMCP_INDEX_ROOT):
        return None
    local = [what for what, is_local in (
        ("the database is an SQLite file", settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"),
        ("the task queue is a local directory", settings.CELERY_BROKER_URL == "filesystem://")) if is_local]
    if local:
        return (f"DOCSMCP_INDEX_ROOT is an object store, shared by several hosts, but {' and '.join(local)}: each "
                "host would see only its own corpora and builds")
    return None


@rule("docsmcp.W005", "`MCP_TRUST_X_FORWARDED_FOR` or `DOCSMCP_TRUST_X_FORWARDED_PROTO` is on and `MCP_SERVER_HOST` "
      "is not a loopback address",
      "trust a proxy's headers only where the proxy alone reaches the server: bind 127.0.0.1 with the proxy on the "
      "same host; where it runs elsewhere (a container network), make sure nothing but the proxy reaches the port")
def _trusted_headers_reachable() -> str | None:
    trusted = [name for name in ("MCP_TRUST_X_FORWARDED_FOR", "DOCSMCP_TRUST_X_FORWARDED_PROTO")
               if getattr(settings, name)]
    if trusted and not is_loopback(settings.MCP_SERVER_HOST):
        return (f"{' and '.join(trusted)} on while serving on {settings.MCP_SERVER_HOST}: a client that reaches the "
                "server without the proxy picks its own address or scheme")
    return None


@rule("docsmcp.W006", "`DOCSMCP_OAUTH_ISSUER` or `DOCSMCP_OAUTH_JWKS_URL` is not an `https://` URL (loopback "
      "excepted)",
      "name the issuer and its keys by https:// URLs: keys fetched over plain HTTP can be swapped on the way")
def _issuer_in_clear() -> str | None:
    for name in ("DOCSMCP_OAUTH_ISSUER", "DOCSMCP_OAUTH_JWKS_URL"):
        url = getattr(settings, name)
        if not url:
            continue
        parts = urlsplit(url)
        if parts.scheme != "https" and not is_loopback(parts.hostname or ""):
            return f"{name} is {url}: tokens would be checked against keys fetched without TLS"
    return None


@rule("docsmcp.W007", "`DOCSMCP_OAUTH_REGISTRATION` is set on while `DOCSMCP_OAUTH_SERVER` is off",
      "turn DOCSMCP_OAUTH_SERVER on, or unset DOCSMCP_OAUTH_REGISTRATION: registration is part of the built-in server")
def _registration_without_server() -> str | None:
    if settings.DOCSMCP_OAUTH_EXPLICIT and settings.DOCSMCP_OAUTH_REGISTRATION and not settings.DOCSMCP_OAUTH_SERVER:
        return "DOCSMCP_OAUTH_REGISTRATION is on but DOCSMCP_OAUTH_SERVER is off: no client can register"
    return None


@rule("docsmcp.W008", "`MCP_API_KEY` is shorter than 32 characters",
      "use a long random key (`python -c 'import secrets; print(secrets.token_urlsafe(32))'`), or database keys "
      "with narrow scopes (`manage.py mcp_apikey`)")
def _short_environment_key() -> str | None:
    if settings.MCP_API_KEY and len(settings.MCP_API_KEY) < 32:
        return f"MCP_API_KEY has {len(settings.MCP_API_KEY)} characters; it holds every scope, like a root password"
    return None


@rule("docsmcp.W009", "`DOCSMCP_EMBEDDING_PROVIDER=openai` without `OPENAI_API_KEY` or `OPENAI_BASE_URL`",
      "set OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server that needs no key)")
def _openai_without_key() -> str | None:
    if settings.DOCSMCP_EMBEDDING_PROVIDER == "openai" and not (settings.OPENAI_API_KEY or settings.OPENAI_BASE_URL):
        return "DOCSMCP_EMBEDDING_PROVIDER is openai but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: builds of corpora without their own endpoint would fail"
    return None


@rule("docsmcp.W010", "`CELERY_TASK_ALWAYS_EAGER` is on",
      "unset CELERY_TASK_ALWAYS_EAGER on a server: it is for tests and one-off scripts")
def _tasks_inline() -> str | None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return ("CELERY_TASK_ALWAYS_EAGER is on: builds, eval runs and fix scans would run inside the web request "
                "that asks for them, for minutes")
    return None


@rule("docsmcp.W011", "`DOCSMCP_GIT_SSH_KEY` names no readable file",
      "give the path of the deploy key's private key file, readable by the account the workers run as")
def _ssh_key_missing() -> str | None:
    key = settings.DOCSMCP_GIT_SSH_KEY
    if key and not os.access(Path(key).expanduser(), os.R_OK):
        return f"DOCSMCP_GIT_SSH_KEY is {key}, which this account cannot read: every fetch of an SSH URL would fail"
    return None


def findings(deploy: bool) -> list[CheckMessage]:
    """The errors (every run) or the warnings (a deployment's run) the current settings give."""
    chosen = [r for r in RULES if r.id.startswith("docsmcp.W") == deploy]
    return [message for r in chosen if (message := r.message()) is not None]


@register("docsmcp")
def settings_agree(app_configs, **kwargs) -> list[CheckMessage]:
    return findings(deploy=False)


@register("docsmcp", deploy=True)
def deployment_settings(app_configs, **kwargs) -> list[CheckMessage]:
    return findings(deploy=True)


def documented() -> list[tuple[str, str, str]]:
    """(ID, when, fix) of every rule, for docs/settings.md."""
    return [(r.id, r.when, r.fix) for r in sorted(RULES, key=lambda r: r.id)]
