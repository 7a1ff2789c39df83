"""The MCP endpoint: where `manage.py serve` listens, who may call /mcp/ and /api/v1/, and how much one
call or caller may take (names and defaults from the TechDoc contract, docs/contracts/techdoc-tools.md)."""

from docsmcp_site.settings.celery import CELERY_BROKER_URL
from docsmcp_site.settings.env import env_bool, env_int, env_list, env_str

MCP_SERVER_HOST = env_str("MCP_SERVER_HOST", "127.0.0.1")
MCP_SERVER_PORT = env_int("MCP_SERVER_PORT", 8001)
MCP_AUTH_REQUIRED = env_bool("MCP_AUTH_REQUIRED", False)
MCP_API_KEY = env_str("MCP_API_KEY")
# Web origins that may call /mcp/ and /api/v1/ from a browser; ":*" means any port. Loopback only by
# default: "*" (any web page) must be set explicitly.
MCP_ALLOWED_ORIGINS = env_list(
    "MCP_ALLOWED_ORIGINS",
    "http://localhost:*,https://localhost:*,http://127.0.0.1:*,https://127.0.0.1:*,http://[::1]:*,https://[::1]:*",
)
MCP_MAX_BODY_BYTES = env_int("MCP_MAX_BODY_BYTES", 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MCP_MAX_BODY_BYTES
MCP_RATE_LIMIT_PER_MINUTE = env_int("MCP_RATE_LIMIT_PER_MINUTE", 600)
# Counters in Redis, shared by every worker: the broker's Redis unless set; empty (or a broker that is not
# Redis) keeps them in each process's memory.
MCP_RATE_LIMIT_REDIS_URL = env_str("MCP_RATE_LIMIT_REDIS_URL",
                                   "" if CELERY_BROKER_URL == "filesystem://" else CELERY_BROKER_URL)
# Rate-limit anonymous callers by the last X-Forwarded-For hop (only behind a proxy you run).
MCP_TRUST_X_FORWARDED_FOR = env_bool("MCP_TRUST_X_FORWARDED_FOR", False)
# Behind a proxy that terminates TLS: believe its X-Forwarded-Proto, so the URLs the server names
# (OAuth metadata, issuer, token audience, resource links) are https:// as clients see them.
DOCSMCP_TRUST_X_FORWARDED_PROTO = env_bool("DOCSMCP_TRUST_X_FORWARDED_PROTO", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if DOCSMCP_TRUST_X_FORWARDED_PROTO else None
# Page size of tools/list, resources/list, prompts/list (cursor-paginated).
MCP_LIST_PAGE_SIZE = env_int("MCP_LIST_PAGE_SIZE", 100)
# Ceiling of one tool result, in tokens estimated as characters / 4 (mcp_endpoint/budget.py).
MCP_RESPONSE_TOKEN_BUDGET = env_int("MCP_RESPONSE_TOKEN_BUDGET", 8000)
# ttlMs on cacheable 2026-07-28 results; 0 = re-fetch each time (tool schemas follow the active build).
MCP_CACHE_TTL_MS = env_int("MCP_CACHE_TTL_MS", 0)
# Bounded work per request (docs/security.md): messages per JSON-RPC batch, and the bytes of replies
# one batch may return before further calls are answered with a "response budget exhausted" error.
MCP_MAX_BATCH = env_int("MCP_MAX_BATCH", 20)
MCP_MAX_BATCH_RESPONSE_BYTES = env_int("MCP_MAX_BATCH_RESPONSE_BYTES", 1024 * 1024)
# The tool profile served at /mcp and /mcp/ (docs, documents, techdoc, citeloom); /mcp/<profile>/ always works.
DOCSMCP_DEFAULT_PROFILE = env_str("DOCSMCP_DEFAULT_PROFILE", "docs")
