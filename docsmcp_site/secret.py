"""The Django secret key of an installation that did not set DJANGO_SECRET_KEY.

A key published in the repository would let anyone forge sessions and search cursors, so each
installation generates its own once and keeps it beside its data.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def installation_secret_key(path: Path) -> str:
    """The key stored at `path`, generated on first use (owner-only 0600, created atomically).

    Concurrent first starts (several gunicorn workers and a Celery worker) race to create the
    file: the key is written to a private temporary file and hard-linked into place, so every
    process reads the same complete key and none ever sees a half-written one.
    """
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_urlsafe(50) + "\n")
        with contextlib.suppress(FileExistsError):  # another process created it first: use theirs
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> str:
    key = path.read_text().strip()
    if not key:
        raise RuntimeError(f"{path} is empty: delete it to generate a new secret key, or set DJANGO_SECRET_KEY")
    return key
