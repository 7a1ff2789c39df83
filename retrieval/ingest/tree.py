"""A corpus read from a tree of bytes rather than a folder (a git commit), scanned as the folder would be."""

from __future__ import annotations

from pathlib import Path

from .exclude import IGNORE_FILE, Excluder, parse_rules
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
from .sitegen.includes import MAX_INCLUDED_FILE_BYTES


def scan_tree(root: Path, files: dict[str, bytes], links: dict[str, str] | None = None, *,
              oversized: dict[str, int] | None = None,
              max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES, site_prefix: str = "") -> CorpusScan:
    """The scan of a tree read from somewhere other than a directory (a git commit), path for path
    what `scan_corpus` gives for the same files on disk: hidden directories skipped, links followed
    only inside the tree, files over `max_file_bytes` skipped with a finding. `links` maps a link's
    path to its target's ('' when it leaves the tree); `oversized` gives the sizes of files the
    reader left unread because of the limit. `site_prefix` is the tree's path from the folder of
    mkdocs.yml (a git source's subdirectory: markdown-include paths start from the repository's
    top, where mkdocs.yml usually sits); the files its includes name are taken from `files`."""
    scan = CorpusScan(Path(root), {}, {}, {}, [])
    links, oversized = links or {}, oversized or {}
    rules = Excluder()
    for relpath in sorted(p for p in files if p.rpartition("/")[2] in (MANIFEST_NAME, IGNORE_FILE)):
        reldir, _, name = relpath.rpartition("/")
        if any(part.startswith(".") for part in reldir.split("/") if part) or rules.excluded_path(relpath):
            continue
        text = files[relpath].decode("utf-8", errors="replace")
        if name == MANIFEST_NAME:
            add_manifest(scan, text, reldir, relpath)
            rules.add(parse_rules(scan.manifests[reldir].exclude, reldir) if reldir in scan.manifests else [])
        else:
            rules.add(parse_rules(text, reldir))
    for relpath in sorted({*files, *links, *oversized}, key=lambda p: (p.count("/"), p)):
        parts = relpath.split("/")
        if any(part.startswith(".") for part in parts[:-1]):
            continue
        if parts[-1] in (MANIFEST_NAME, IGNORE_FILE):  # read above; one over the size limit is told here
            if max_file_bytes is not None and oversized.get(relpath, 0) > max_file_bytes:
                too_large(scan, relpath, oversized[relpath], max_file_bytes)
            continue
        if parts[-1].endswith(MARKDOWN_SUFFIXES) and rules.excluded_path(relpath):
            scan.excluded.append(relpath)
            continue
        target = links.get(relpath, relpath)
        if not target:
            scan.findings.append(Finding("error", "path-escape", relpath, None,
                                         "symlink points outside the corpus root",
                                         "copy the file into the corpus or remove the link"))
            continue
        reldir, name = "/".join(parts[:-1]), parts[-1]
        if name != MANIFEST_NAME and not name.endswith(MARKDOWN_SUFFIXES):
            continue
        raw = files.get(target)
        size = oversized.get(target, len(raw) if raw is not None else 0)
        if max_file_bytes is not None and size > max_file_bytes:
            too_large(scan, relpath, size, max_file_bytes)
            continue
        if raw is None:
            continue
        scan.files[relpath] = raw
    scan.files = dict(sorted(scan.files.items()))
    read_as_generator(scan, None, names={p for p in files if "/" not in p})
    if scan.generator == "mkdocs":
        scan.site_prefix = site_prefix.strip("/")
        limit = MAX_INCLUDED_FILE_BYTES if max_file_bytes is None else min(max_file_bytes, MAX_INCLUDED_FILE_BYTES)

        def read(relpath: str) -> bytes | None:
            target = links.get(relpath, relpath)  # a link is followed only inside the tree ("" leaves it)
            raw = files.get(target) if target else None
            return raw if raw is not None and len(raw) <= limit else None

        read_included_files(scan, read)
    return scan
