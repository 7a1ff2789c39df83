"""Process set-up for a program that runs the engine, done by the program, not by an import.

Importing `retrieval` changes nothing outside it, so a library user, a test or a tool that only
reads a module pays for nothing and finds its process as it left it. A program that builds or
serves (manage.py, the WSGI and ASGI applications, the Celery app, the `docsmcp` command, the
bench scripts) calls `boot()` first, before LanceDB or Arrow is imported.
"""

from __future__ import annotations

from .lazyimports import defer_namespace_client
from .memory import tune_allocators


def boot() -> None:
    """Defers LanceDB's REST namespace client (lazyimports.py) and tunes the allocators (memory.py).
    Safe to call more than once; what the environment already chose is kept."""
    defer_namespace_client()
    tune_allocators()
