"""What a build saw of each source file on disk (size, times, inode), so the next build reads only the
files that changed since, as git's index does.

A rebuild after a one-page edit of an 11,100-page corpus spent a second reading and hashing the
11,099 pages that had not changed. A page whose `lstat` matches the one recorded when the previous
build read it keeps that build's key without being read; its bytes are read only if something asks
for them (`SourceFiles`). A file modified within `RACY_NS` of being read is not recorded: a second
edit in the same timestamp tick would leave its stat unchanged ("racily clean" in git's words), so
such a file is read and hashed again next time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping

from retrieval.errors import ConfigError, SkippedFile

from .files import read_regular_file

RACY_NS = 3_000_000_000  # wider than any filesystem's timestamp granularity (FAT: 2 s)

Stat = list[int]  # [size, mtime_ns, ctime_ns, inode], as recorded in files.json


def stat_record(seen: os.stat_result, started_ns: int) -> Stat | None:
    """What is recorded of a file read by a scan that started at `started_ns`; None when the file
    changed too recently for its stat to tell a later edit apart."""
    if max(seen.st_mtime_ns, seen.st_ctime_ns) >= started_ns - RACY_NS:
        return None
    return [seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns, seen.st_ino]


class SourceFiles(MutableMapping):
    """A scan's pages (relpath -> bytes) where those unchanged since the previous build are read only
    when asked for: building after a one-page change needs the bytes of that page alone."""

    def __init__(self) -> None:
        self._data: dict[str, bytes | None] = {}
        self._paths: dict[str, str] = {}  # relpath -> path on disk, for the bytes not read yet
        self._max_bytes: dict[str, int | None] = {}

    def defer(self, relpath: str, path: str, max_bytes: int | None) -> None:
        """`relpath` is in the scan, its bytes read from `path` on first use."""
        self._data[relpath] = None
        self._paths[relpath] = path
        self._max_bytes[relpath] = max_bytes

    def unchanged(self, relpath: str) -> bool:
        """Whether `relpath` matched the previous build's record when scanned (read since or not)."""
        return relpath in self._paths

    def __getitem__(self, relpath: str) -> bytes:
        raw = self._data[relpath]
        if raw is None:
            try:
                raw = self._data[relpath] = read_regular_file(self._paths[relpath], self._max_bytes[relpath])
            except (OSError, SkippedFile) as exc:  # removed, replaced or grown since the scan saw it unchanged
                raise ConfigError(f"{relpath} changed while the build was reading the folder ({exc}); "
                                  "build again once the folder is written") from exc
        return raw

    def __setitem__(self, relpath: str, raw: bytes) -> None:
        self._data[relpath] = raw
        self._paths.pop(relpath, None)

    def __delitem__(self, relpath: str) -> None:
        del self._data[relpath]
        self._paths.pop(relpath, None)

    def __contains__(self, relpath: object) -> bool:
        return relpath in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)
