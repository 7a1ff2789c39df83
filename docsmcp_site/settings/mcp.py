"""The MCP endpoint: where `manage.py serve` listens, who may call /mcp/ and /api/v1/, and how much one
call or caller may take (names and defaults from the TechDoc contract, docs/contracts/techdoc-tools.md)."""

from docsmcp_site.settings.celery import CELERY_BROKER_URL
from docsmcp_site.settings.env import env

MCP_SERVER_HOST = env("MCP_SERVER_HOST")
MCP_SERVER_PORT = env("MCP_SERVER_PORT")
MCP_AUTH_REQUIRED = env("MCP_AUTH_REQUIRED")
MCP_API_KEY = env("MCP_API_KEY")
# Web origins that may call /mcp/ and /api/v1/ from a browser; ":*" means any port. Loopback only by
# default: "*" (any web page) must be set explicitly.
MCP_ALLOWED_ORIGINS = env("MCP_ALLOWED_ORIGINS")
MCP_MAX_BODY_BYTES = env("MCP_MAX_BODY_BYTES")
DATA_UPLOAD_MAX_MEMORY_SIZE = MCP_MAX_BODY_BYTES
MCP_RATE_LIMIT_PER_MINUTE = env("MCP_RATE_LIMIT_PER_MINUTE")
# Counters in Redis, shared by every worker: the broker's Redis unless set; empty (or a broker that is not
# Redis) keeps them in each process's memory.
MCP_RATE_LIMIT_REDIS_URL = env("MCP_RATE_LIMIT_REDIS_URL",
                               "" if CELERY_BROKER_URL == "filesystem://" else CELERY_BROKER_URL)
# Rate-limit anonymous callers by the last X-Forwarded-For hop (only behind a proxy you run).
MCP_TRUST_X_FORWARDED_FOR = env("MCP_TRUST_X_FORWARDED_FOR")
# Behind a proxy that terminates TLS: believe its X-Forwarded-Proto, so the URLs the server names
# (OAuth metadata, issuer, token audience, resource links) are https:// as clients see them.
DOCSMCP_TRUST_X_FORWARDED_PROTO = env("DOCSMCP_TRUST_X_FORWARDED_PROTO")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if DOCSMCP_TRUST_X_FORWARDED_PROTO else None
# Page size of tools/list, resources/list, prompts/list (cursor-paginated).
MCP_LIST_PAGE_SIZE = env("MCP_LIST_PAGE_SIZE")
# Ceiling of one tool result, in tokens estimated as characters / 4 (mcp_endpoint/budget.py).
MCP_RESPONSE_TOKEN_BUDGET = env("MCP_RESPONSE_TOKEN_BUDGET")
# ttlMs on cacheable 2026-07-28 results; 0 = re-fetch each time (tool schemas follow the active build).
MCP_CACHE_TTL_MS = env("MCP_CACHE_TTL_MS")
# Bounded work per request (docs/security.md): messages per JSON-RPC batch, and the bytes of replies
# one batch may return before further calls are answered with a "response budget exhausted" error.
MCP_MAX_BATCH = env("MCP_MAX_BATCH")
MCP_MAX_BATCH_RESPONSE_BYTES = env("MCP_MAX_BATCH_RESPONSE_BYTES")
# The tool profile served at /mcp and /mcp/ (docs, documents, techdoc, citeloom); /mcp/<profile>/ always works.
DOCSMCP_DEFAULT_PROFILE = env("DOCSMCP_DEFAULT_PROFILE")
