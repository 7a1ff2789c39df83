"""A corpus read from a local folder.

Only regular files are opened, and only once they are known to be: a named pipe would block the
build forever, a device could do anything.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
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
from .seen import SourceFiles, stat_record
from .sitegen import CONFIG_FILES
from .sitegen.includes import MAX_INCLUDED_FILE_BYTES


def scan_corpus(root: Path, *, max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
                known: Known | None = None) -> CorpusScan:
    """Every manifest and markdown file under `root`. Only regular files are opened, and only once
    they are known to be (a named pipe would block the build forever, a device could do anything);
    a file over `max_file_bytes` is skipped with a finding rather than held in memory.

    `known`: what the previous build recorded of the folder (`Known`). A page whose stat matches its
    record is not read unless its bytes are asked for (seen.py)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise ConfigError(f"source directory {root} does not exist or is not a directory")
    started = time.time_ns()
    files = SourceFiles()
    scan = CorpusScan(root, {}, {}, files, [])
    rules = Excluder()
    stats = known.stats if known is not None else {}
    _walk(scan, rules, str(root), "", max_file_bytes, started, stats, files)
    signatures = {p: found for p, found in known.signatures.items() if files.unchanged(p)} if known else None
    read_as_generator(scan, root, signatures=signatures)
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


@dataclass
class Known:
    """What the previous build of a folder saw: each page's stat (seen.py) and the generator signatures
    of the pages detection sampled, recorded while the files were the same."""

    stats: dict[str, list[int]]
    signatures: dict[str, list[str]]


def _walk(scan: CorpusScan, rules: Excluder, current: str, reldir: str, max_file_bytes: int | None,
          started: int, stats: dict[str, list[int]], files: SourceFiles) -> None:
    """One folder: its rules, its files in name order, then its subfolders in name order (os.walk's
    top-down order), hidden folders and links to folders skipped."""
    try:
        with os.scandir(current) as listing:
            entries = list(listing)
    except OSError:  # unreadable, or gone since listed: os.walk skips it too
        return
    dirnames, filenames = [], []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        (dirnames if is_dir else filenames).append(entry)
    names = {entry.name for entry in filenames}
    for name in (MANIFEST_NAME, IGNORE_FILE):  # a folder's own rules apply to its entries
        if name in names:
            _read_rules(scan, rules, Path(current, name), reldir, max_file_bytes)
    kept = []
    for entry in sorted((d for d in dirnames if not d.name.startswith(".")), key=lambda d: d.name):
        reldir_child = f"{reldir}/{entry.name}" if reldir else entry.name
        if rules.excluded(reldir_child, is_dir=True):
            scan.excluded.append(reldir_child + "/")
        else:
            kept.append(entry)
    for entry in list(kept):
        if entry.is_symlink():
            kept.remove(entry)
            _check_link(scan, Path(entry.path))
    for entry in sorted(filenames, key=lambda e: e.name):
        name = entry.name
        relpath = f"{reldir}/{name}" if reldir else name
        if name in (MANIFEST_NAME, IGNORE_FILE):
            continue
        if not name.endswith(MARKDOWN_SUFFIXES):
            if entry.is_symlink():
                _check_link(scan, Path(entry.path))
            continue
        path = entry.path
        link = entry.is_symlink()
        if link:
            if not _check_link(scan, Path(path)):
                continue
            path = str(Path(path).resolve())
        if rules.excluded(relpath):
            scan.excluded.append(relpath)
            continue
        if not link and _unchanged(files, relpath, path, max_file_bytes, stats, scan.seen):
            continue
        raw = _read_source_file(scan, path, relpath, max_file_bytes, None if link else (started, scan.seen))
        if raw is not None:
            files[relpath] = raw
    for entry in kept:
        _walk(scan, rules, entry.path, f"{reldir}/{entry.name}" if reldir else entry.name, max_file_bytes,
              started, stats, files)


def _unchanged(files: SourceFiles, relpath: str, path: str, max_file_bytes: int | None,
               stats: dict[str, list[int]], seen: dict[str, list[int]]) -> bool:
    """Whether the page is as the previous build recorded it; then it is added to `files` unread."""
    recorded = stats.get(relpath)
    if recorded is None:
        return False
    try:
        found = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(found.st_mode) or (max_file_bytes is not None and found.st_size > max_file_bytes):
        return False
    now = [found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino]
    if now != recorded:
        return False
    files.defer(relpath, path, max_file_bytes)
    seen[relpath] = recorded
    return True


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


def _read_source_file(scan: CorpusScan, path: Path | str, relpath: str, max_file_bytes: int | None,
                      record: tuple[int, dict[str, list[int]]] | None = None) -> bytes | None:
    """The file's bytes, or None with a finding when it is not a regular file or is over the limit.
    With `record` (when the scan started, where to record), the stat it was read with is recorded."""
    try:
        if record is None:
            return read_regular_file(path, max_file_bytes)
        started, seen = record
        raw, found = read_regular_file(path, max_file_bytes, with_stat=True)
        recorded = stat_record(found, started)
        if recorded is not None:
            seen[relpath] = recorded
        return raw
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
