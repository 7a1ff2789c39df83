"""What an installation writes for itself is private to the account that runs it.

var/ holds the SQLite database (password hashes, sessions, API key hashes), the generated secret
key, the filesystem task queue and git caches; other local users must not read any of it. Every
process (manage.py and its commands, gunicorn workers, Celery workers) loads the settings, which
call `keep_private`: the process umask then drops group and other bits, so what it creates comes
out 0600 (files) and 0700 (directories), wherever it is written; and var/ and a SQLite database
made 0755/0644 by an earlier version are tightened in place.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077


def keep_private(*existing: Path) -> None:
    """Tighten the process umask (never loosen it), and take group and other access off `existing`
    paths this account owns. A path that is missing, or on a read-only file system, is left alone."""
    current = os.umask(PRIVATE_UMASK)
    os.umask(current | PRIVATE_UMASK)
    for path in existing:
        try:
            status = path.stat()
            if status.st_uid == os.geteuid() and status.st_mode & 0o077:
                path.chmod(stat.S_IMODE(status.st_mode) & ~0o077)
        except OSError:
            continue


def sqlite_files(database: dict) -> list[Path]:
    """The database file of a SQLite DATABASES entry and the journals SQLite keeps beside it; [] otherwise."""
    if "sqlite" not in database.get("ENGINE", "") or not database.get("NAME") or database["NAME"] == ":memory:":
        return []
    name = Path(database["NAME"])
    return [name, *(name.with_name(name.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]
