"""Reading one source file: regular files only, never opened before they are known to be, and bounded.

A named pipe opened for reading blocks until something writes to it (a build waited forever), a
device may do anything when opened, and a 40 MB page held whole took a build 590 MB. So a file is
`lstat`ed first and opened only when regular and small enough; the open follows no link and cannot
block, and `fstat` checks the opened file is the one `lstat` saw (nothing swapped in between).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal, overload

from retrieval.errors import FileTooLarge, NotRegularFile

OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@overload
def read_regular_file(path: Path | str, max_bytes: int | None) -> bytes: ...
@overload
def read_regular_file(path: Path | str, max_bytes: int | None, *,
                      with_stat: Literal[True]) -> tuple[bytes, os.stat_result]: ...
def read_regular_file(path, max_bytes, *, with_stat=False):
    """The bytes of `path`, a regular file of at most `max_bytes` (None: any size); with `with_stat`, and
    the `lstat` taken before they were read (what seen.py records).

    Raises NotRegularFile or FileTooLarge, and FileNotFoundError when it is gone (or a dangling link).
    """
    seen = os.lstat(path)
    if not stat.S_ISREG(seen.st_mode):
        raise NotRegularFile(seen.st_mode)
    if max_bytes is not None and seen.st_size > max_bytes:
        raise FileTooLarge(seen.st_size, max_bytes)
    fd = os.open(path, OPEN_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
            raise NotRegularFile(opened.st_mode if not stat.S_ISREG(opened.st_mode) else stat.S_IFLNK)
        raw = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(raw) > max_bytes:  # it grew after lstat
        raise FileTooLarge(len(raw), max_bytes)
    return (raw, seen) if with_stat else raw
