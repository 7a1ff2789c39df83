"""Writing an approved fix: only inside the corpus root, only to a markdown file or a manifest, never
through a symbolic link, and atomically (a temp file in the same directory, then os.replace)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path, PurePosixPath

from retrieval.errors import RetrievalError
from retrieval.ingest.manifest import MANIFEST_NAME
from retrieval.ingest.sources import MARKDOWN_SUFFIXES

from .edits import content_hash

TEMP_SUFFIX = ".docsmcp-tmp"  # neither markdown nor a manifest, so a scan never picks a leftover up


class UnsafeTarget(RetrievalError):
    """A target path that could write outside the corpus root, through a link, or to a non-doc file."""


def resolve_target(root: Path, relpath: str) -> Path:
    """The absolute path a fix may write, or UnsafeTarget with the reason."""
    if not relpath or "\x00" in relpath or "\\" in relpath:
        raise UnsafeTarget(f"target {relpath!r} is not a plain relative path")
    pure = PurePosixPath(relpath)
    parts = relpath.split("/")
    if pure.is_absolute() or relpath.startswith("~"):
        raise UnsafeTarget(f"target {relpath!r} is absolute; fixes only write inside the corpus root")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafeTarget(f"target {relpath!r} contains '..', '.' or an empty segment")
    if any(part.startswith(".") for part in parts[:-1]):
        raise UnsafeTarget(f"target {relpath!r} is inside a hidden directory, which the corpus does not include")
    if not (pure.name == MANIFEST_NAME or pure.name.endswith(MARKDOWN_SUFFIXES)):
        raise UnsafeTarget(f"target {relpath!r} is neither markdown nor {MANIFEST_NAME}")
    base = Path(root).resolve(strict=True)
    current = base
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise UnsafeTarget(f"target {relpath!r}: {current.relative_to(base)} is a symbolic link; "
                               "fixes never write through links")
    if not current.parent.is_dir():
        raise UnsafeTarget(f"target {relpath!r}: directory {current.parent.relative_to(base)} does not exist")
    if not current.resolve().is_relative_to(base):
        raise UnsafeTarget(f"target {relpath!r} resolves outside the corpus root")
    if current.exists() and not current.is_file():
        raise UnsafeTarget(f"target {relpath!r} exists and is not a regular file")
    return current


def current_hash(path: Path) -> str:
    return content_hash(path.read_bytes() if path.is_file() else None)


def atomic_write(path: Path, text: str) -> str:
    """Replace `path` with `text` (UTF-8) in one rename, keeping its permissions; returns the new hash."""
    data = text.encode("utf-8")
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass
    return content_hash(data)
