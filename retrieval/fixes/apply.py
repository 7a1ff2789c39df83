"""Writing an approved fix: only inside the corpus root, only to a markdown file or a manifest, never
through a symbolic link, and atomically (a temp file in the same directory, then os.replace)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

from retrieval.errors import SkippedFile, UnsafeTarget
from retrieval.ingest.files import read_regular_file
from retrieval.ingest.manifest import MANIFEST_NAME
from retrieval.ingest.scan import MARKDOWN_SUFFIXES

from .edits import content_hash

TEMP_SUFFIX = ".docsmcp-tmp"  # neither markdown nor a manifest, so a scan never picks a leftover up


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
    """The hash of the target as it is now; never opens anything but a regular file (a pipe swapped
    in would block the approval), and never through a link."""
    try:
        raw = read_regular_file(path, None)
    except FileNotFoundError:
        raw = None
    except SkippedFile as exc:
        raise UnsafeTarget(f"target {path.name!r} is {exc}") from None
    return content_hash(raw)


def atomic_write(path: Path, text: str, *, root: Path | None = None) -> str:
    """Replace `path` with `text` (UTF-8) in one rename, keeping its permissions; returns the new hash.

    With `root` (the resolved corpus root `path` lies in), every directory from the root down is
    opened without following links and the file is written and renamed relative to the last one:
    a directory swapped for a link after `resolve_target` looked is refused, never followed.
    """
    data = text.encode("utf-8")
    if root is None:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    else:
        dir_fd = _open_below(Path(root), path.parent.relative_to(root).parts)
    try:
        _replace_in(dir_fd, path.name, data)
    finally:
        os.close(dir_fd)
    return content_hash(data)


def _open_below(root: Path, parts: tuple[str, ...]) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(root, flags)
    try:
        for part in parts:
            try:
                below = os.open(part, flags, dir_fd=fd)
            except OSError as exc:  # ELOOP or ENOTDIR: a link, or no longer a directory
                raise UnsafeTarget(f"{part!r} on the way to the target is not a plain directory "
                                   f"({exc.strerror}); fixes never write through links") from None
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def _replace_in(dir_fd: int, name: str, data: bytes) -> None:
    try:
        current = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        mode = 0o644
    else:
        if not stat.S_ISREG(current.st_mode):
            raise UnsafeTarget(f"target {name!r} is no longer a regular file; nothing was written")
        mode = stat.S_IMODE(current.st_mode)
    tmp = f".{name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        os.fsync(dir_fd)
