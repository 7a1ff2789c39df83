"""Serving the active builds: `manage.py serve`'s workers, which corpora they hold open, and the default
corpus of /mcp/."""

from docsmcp_site.settings.core import DOCSMCP_HOME
from docsmcp_site.settings.env import env

# Web worker processes of `manage.py serve` (gunicorn's variable); 0: one per core plus one.
WEB_CONCURRENCY = env("WEB_CONCURRENCY")
# `manage.py serve` receives each request before a thread takes it (docsmcp_site/front.py): seconds a
# connection has to send its request head, and then its body, before it is answered 408 and closed.
DOCSMCP_HEADER_TIMEOUT = env("DOCSMCP_HEADER_TIMEOUT")
DOCSMCP_BODY_TIMEOUT = env("DOCSMCP_BODY_TIMEOUT")
# Seconds a client may take none of its response before its connection is closed. The worker's event loop
# sends a response the client reads slowly (docsmcp_site/departure.py), so a slow reader holds memory, no thread.
DOCSMCP_SEND_TIMEOUT = env("DOCSMCP_SEND_TIMEOUT")
# Connections one client address may hold open in one `serve` worker (each holds at most 1,000); past it a new one
# is answered 503 and closed. Behind a proxy every client has the proxy's address: raise it above the proxy's
# connections to this server, or 0 (no cap), and cap connections per client at the proxy (docs/deploy.md).
DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS = env("DOCSMCP_MAX_CONNECTIONS_PER_ADDRESS")
# Where a web node keeps local copies of the active builds of an object-store root, so searches do not
# wait on the store; unused when the root is a local path.
DOCSMCP_INDEX_CACHE_DIR = env("DOCSMCP_INDEX_CACHE_DIR", DOCSMCP_HOME / "index-cache")
# Threads one run of the local model may use in a serving worker (0: the cores divided among the workers).
DOCSMCP_LOCAL_THREADS = env("DOCSMCP_LOCAL_THREADS")
DOCSMCP_DEFAULT_CORPUS = env("DOCSMCP_DEFAULT_CORPUS")
# /mcp/ of several corpora (docs/corpora.md): up to this many corpora a caller may read, search_docs' and get_doc's
# `corpus` argument lists them (an enum); above, it is a free string and a wrong name gets "did you mean".
DOCSMCP_CORPUS_ENUM_MAX = env("DOCSMCP_CORPUS_ENUM_MAX")
# Up to this many readable corpora, a search at /mcp/ without `corpus` covers them all; above, the ones that best
# match the query (list_corpora's ranking), so one search never opens every corpus of a large server.
DOCSMCP_SEARCH_ALL_MAX = env("DOCSMCP_SEARCH_ALL_MAX")
# Of the corpora with a semantic model's vectors that a search without `corpus` covers, how many it ranks in full:
# those whose chunks come closest to the query (best cosine; the list_corpora profile breaks near ties;
# docs/corpora.md). Corpora without such vectors are always ranked. 0: every corpus.
DOCSMCP_SEARCH_ROUTE_TOP = env("DOCSMCP_SEARCH_ROUTE_TOP")
# Memory a serving worker may spend on open indexes (docs/corpora.md): corpora open on first use and the least
# recently used close beyond it; 0: no budget (at most 8 indexes open besides the pinned ones, as before).
DOCSMCP_SERVING_MEMORY_MB = env("DOCSMCP_SERVING_MEMORY_MB")
# Corpora a worker loads before it serves and never closes: comma-separated names, or * for all. Unset: every
# corpus while the server has at most DOCSMCP_PIN_ALL_MAX of them, else none.
DOCSMCP_PINNED_CORPORA = env("DOCSMCP_PINNED_CORPORA")
DOCSMCP_PIN_ALL_MAX = env("DOCSMCP_PIN_ALL_MAX")
