"""Builds: where they live, how they are embedded, which sources they may read, and the fixers that
propose edits to those sources."""

import os
from pathlib import Path

from docsmcp_site.settings.core import BASE_DIR, DOCSMCP_HOME
from docsmcp_site.settings.env import env

# A local path, or an object store (`s3://bucket/prefix`, reached with DOCSMCP_STORAGE_OPTIONS or the
# AWS_* variables: docs/deploy.md). Every web node and worker must name the same root.
_index_root = env("DOCSMCP_INDEX_ROOT", str(DOCSMCP_HOME / "indexes"))
DOCSMCP_INDEX_ROOT: Path | str = _index_root.rstrip("/") if "://" in _index_root else Path(_index_root)
# What reaches the object store (corpus.apps hands it to retrieval.storage): never stored anywhere else.
DOCSMCP_STORAGE_ENVIRONMENT = {name: value for name, value in os.environ.items()
                               if name == "DOCSMCP_STORAGE_OPTIONS" or name.startswith("AWS_")}
DOCSMCP_EMBEDDING_PROVIDER = env("DOCSMCP_EMBEDDING_PROVIDER")
OPENAI_API_KEY = env("OPENAI_API_KEY")
OPENAI_BASE_URL = env("OPENAI_BASE_URL")
DOCSMCP_KEEP_BUILDS = env("DOCSMCP_KEEP_BUILDS")
# A running build's worker renews its lease every third of this; a build whose lease lapsed is
# marked failed (its worker stopped) by the reaper or the next build request, so a dead worker blocks a corpus this long.
DOCSMCP_BUILD_LEASE_SECONDS = env("DOCSMCP_BUILD_LEASE_SECONDS")
# Seconds between two passes of every Celery worker's reaper over dead builds (corpus/reaping.py); 0 turns it off.
DOCSMCP_BUILD_REAP_SECONDS = env("DOCSMCP_BUILD_REAP_SECONDS")
# Directories a corpus registered through the REST API or the admin may read its markdown from
# (comma-separated). Narrow by default: sources/ under DOCSMCP_HOME and the bundled sample. `manage.py build_index`,
# run by the operator, may register any directory.
DOCSMCP_SOURCE_ROOTS = env("DOCSMCP_SOURCE_ROOTS",
                           f"{DOCSMCP_HOME / 'sources'},{BASE_DIR / 'corpus' / 'sample_docs'}")
# Directories mounted at the same place on every Celery worker host (a shared volume): a corpus under
# one is not warned about as unreadable by workers elsewhere (corpus/reach.py).
DOCSMCP_SHARED_SOURCE_ROOTS = env("DOCSMCP_SHARED_SOURCE_ROOTS")
# Git sources: bare cache repositories on this host's disk (never the index root), the time one git
# command may take, and the URL prefixes the REST API and the admin may register (file:// URLs are
# held to DOCSMCP_SOURCE_ROOTS instead). `manage.py build_index --git` may use any URL. A deploy key
# (DOCSMCP_GIT_SSH_KEY, a private key file) or GIT_SSH_COMMAND / a credential helper gives git its
# credentials; a password in a URL is refused.
DOCSMCP_GIT_CACHE_DIR = env("DOCSMCP_GIT_CACHE_DIR", DOCSMCP_HOME / "git")
DOCSMCP_GIT_TIMEOUT = env("DOCSMCP_GIT_TIMEOUT")
DOCSMCP_GIT_SSH_KEY = env("DOCSMCP_GIT_SSH_KEY")
DOCSMCP_GIT_ALLOWED_URLS = env("DOCSMCP_GIT_ALLOWED_URLS")
# A source file (markdown page or manifest) larger than this is skipped with a finding, so one huge
# page cannot take the build's memory.
DOCSMCP_MAX_FILE_BYTES = env("DOCSMCP_MAX_FILE_BYTES")
# The LLM fixer (manage.py fix_docs --llm): chat model, and how many files one run may send it.
DOCSMCP_FIX_MODEL = env("DOCSMCP_FIX_MODEL")
DOCSMCP_FIX_LLM_MAX_FILES = env("DOCSMCP_FIX_LLM_MAX_FILES")
