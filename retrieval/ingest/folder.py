"""A corpus read from a local folder.

Only regular files are opened, and only once they are known to be: a named pipe would block the
build forever, a device could do anything.
"""

from __future__ import annotations

import os
from pathlib import Path

from retrieval.errors import ConfigError, SkippedFile

from .exclude import IGNORE_FILE, Excluder, parse_rules
from .files import FileTooLarge, NotRegularFile, read_regular_file
from .manifest import MANIFEST_NAME
from .scan import (
    DEFAULT_MAX_FILE_BYTES,
    MARKDOWN_SUFFIXES,
    CorpusScan,
    Finding,
    add_manifest,
    read_as_generator,
    read_included_files,
    too_large,
)
from .sitegen import CONFIG_FILES
from .sitegen.includes import MAX_INCLUDED_FILE_BYTES


def scan_corpus(root: Path, *, max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES) -> CorpusScan:
    """Every manifest and markdown file under `root`. Only regular files are opened, and only once
    they are known to be (a named pipe would block the build forever, a device could do anything);
    a file over `max_file_bytes` is skipped with a finding rather than held in memory."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise ConfigError(f"source directory {root} does not exist or is not a directory")
    scan = CorpusScan(root, {}, {}, {}, [])
    rules = Excluder()
    for dirpath, dirnames, filenames in os.walk(root):
        current = Path(dirpath)
        reldir = current.relative_to(root).as_posix()
        reldir = "" if reldir == "." else reldir
        for name in (MANIFEST_NAME, IGNORE_FILE):  # a folder's own rules apply to its entries
            if name in filenames:
                _read_rules(scan, rules, current / name, reldir, max_file_bytes)
        kept = []
        for name in sorted(d for d in dirnames if not d.startswith(".")):
            reldir_child = f"{reldir}/{name}" if reldir else name
            if rules.excluded(reldir_child, is_dir=True):
                scan.excluded.append(reldir_child + "/")
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in list(dirnames):
            if (current / name).is_symlink():
                dirnames.remove(name)
                _check_link(scan, current / name)
        for name in sorted(filenames):
            path = current / name
            relpath = f"{reldir}/{name}" if reldir else name
            if name in (MANIFEST_NAME, IGNORE_FILE):
                continue
            if not name.endswith(MARKDOWN_SUFFIXES):
                if path.is_symlink():
                    _check_link(scan, path)
                continue
            if path.is_symlink():
                if not _check_link(scan, path):
                    continue
                path = path.resolve()
            if rules.excluded(relpath):
                scan.excluded.append(relpath)
                continue
            raw = _read_source_file(scan, path, relpath, max_file_bytes)
            if raw is not None:
                scan.files[relpath] = raw
    read_as_generator(scan, root)
    if scan.generator == "mkdocs":
        scan.site_prefix = _site_prefix(root)
        limit = MAX_INCLUDED_FILE_BYTES if max_file_bytes is None else min(max_file_bytes, MAX_INCLUDED_FILE_BYTES)
        read_included_files(scan, lambda relpath: _read_inside(root, relpath, limit))
    return scan


def _site_prefix(root: Path) -> str:
    """The corpus root's path from the folder of mkdocs.yml, looked for where `sitegen.detect` looks."""
    names = dict(CONFIG_FILES)["mkdocs"]
    for folder in (root, *list(root.parents)[:2]):
        if any((folder / name).is_file() for name in names):
            prefix = root.relative_to(folder).as_posix()
            return "" if prefix == "." else prefix
    return ""


def _read_inside(root: Path, relpath: str, max_bytes: int) -> bytes | None:
    """The bytes of the regular file `relpath` names inside `root`, links followed only while they
    stay inside it; None for anything else."""
    try:
        target = (root / relpath).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(root):
        return None
    try:
        return read_regular_file(target, max_bytes)
    except (OSError, SkippedFile):
        return None


def _read_rules(scan: CorpusScan, rules: Excluder, path: Path, reldir: str, max_file_bytes: int | None) -> None:
    """A folder's manifest or .docsmcpignore, read before its entries so their exclude rules apply to them."""
    relpath = f"{reldir}/{path.name}" if reldir else path.name
    if path.is_symlink():
        if not _check_link(scan, path):
            return
        path = path.resolve()
    raw = _read_source_file(scan, path, relpath, max_file_bytes)
    if raw is None:
        return
    text = raw.decode("utf-8", errors="replace")
    if relpath.endswith(MANIFEST_NAME):
        add_manifest(scan, text, reldir, relpath)
        if reldir in scan.manifests:
            rules.add(parse_rules(scan.manifests[reldir].exclude, reldir))
    else:
        rules.add(parse_rules(text, reldir))


def _read_source_file(scan: CorpusScan, path: Path, relpath: str, max_file_bytes: int | None) -> bytes | None:
    """The file's bytes, or None with a finding when it is not a regular file or is over the limit."""
    try:
        return read_regular_file(path, max_file_bytes)
    except FileNotFoundError:  # removed since the directory was listed, or a dangling link
        return None
    except FileTooLarge as exc:
        return too_large(scan, relpath, exc.size, exc.limit)
    except NotRegularFile as exc:
        scan.findings.append(Finding("warning", "not-regular-file", relpath, None, str(exc),
                                     "replace it with a regular file, or remove it from the corpus directory"))
        return None


def _check_link(scan: CorpusScan, path: Path) -> bool:
    relpath = path.relative_to(scan.root).as_posix()
    target = path.resolve()
    if not target.is_relative_to(scan.root):
        scan.findings.append(Finding("error", "path-escape", relpath, None,
                                     f"symlink points outside the corpus root (to {target})",
                                     "copy the file into the corpus or remove the link"))
        return False
    return True  # whatever it points at is read like any other file: regular files only
