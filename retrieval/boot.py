"""Process set-up for a program that runs the engine, done by the program, not by an import.

Importing `retrieval` changes nothing outside it, so a library user, a test or a tool that only
reads a module pays for nothing and finds its process as it left it. A program that builds or
serves (manage.py, the WSGI and ASGI applications, the Celery app, the `docsmcp` command, the
bench scripts) calls `boot()` first, before LanceDB or Arrow is imported.
"""

from __future__ import annotations

import os

from .lazyimports import defer_namespace_client
from .memory import tune_allocators


def boot() -> None:
    """Defers LanceDB's REST namespace client (lazyimports.py), tunes the allocators (memory.py) and
    keeps Lance's own log (LANCE_LOG, read when Lance first logs) to errors, which the build and search
    report themselves. Safe to call more than once; what the environment already chose is kept."""
    os.environ.setdefault("LANCE_LOG", "error")
    defer_namespace_client()
    tune_allocators()
