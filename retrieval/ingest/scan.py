"""What a corpus holds once read: its manifests, its pages' bytes, the findings of reading them.

A folder on disk (`folder`) and a tree read from elsewhere (`tree`, a git commit) give the same
`CorpusScan`, so everything after the read is one code path.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_left
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from retrieval.errors import ConfigError

from . import sitegen
from .files import FileTooLarge
from .manifest import MANIFEST_NAME, Manifest, TaxonomyConfig, nearest_manifest, parse_manifest

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024  # a larger page is skipped with a finding (DOCSMCP_MAX_FILE_BYTES)


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    code: str
    file: str
    line: int | None  # 1-based
    message: str
    suggestion: str = ""
    kind: str = ""  # what a repeated finding is counted by, when its code covers several (`hugo shortcode tabs`)

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_dict(self) -> dict:
        found = {"severity": self.severity, "code": self.code, "file": self.file, "line": self.line,
                 "message": self.message, "suggestion": self.suggestion}
        return {**found, "kind": self.kind} if self.kind else found


@dataclass
class CorpusScan:
    root: Path
    manifests: dict[str, Manifest]
    manifest_texts: dict[str, str]
    files: MutableMapping[str, bytes]  # relpath -> raw bytes of every markdown file (read on use: seen.py)
    findings: list[Finding]  # corpus-level findings (manifests, symlinks, encodings)
    generator: str = ""  # the site generator whose syntax the pages are read in ("": plain markdown)
    generator_reason: str = ""  # how it was known: the manifest, a configuration file, the pages' syntax
    excluded: list[str] = field(default_factory=list)  # paths left out by exclude rules (folders end in /)
    # Files that are not pages, read because a page's markdown-include names them (read_included_files)
    include_files: dict[str, bytes] = field(default_factory=dict)
    site_prefix: str = ""  # the corpus root's path from the folder of mkdocs.yml ("docs"), "" when it is that folder
    # relpath -> its stat when read (seen.py), and the generator signatures of the pages detection sampled:
    # what the next build of a folder compares against, to read only what changed
    seen: dict[str, list[int]] = field(default_factory=dict, repr=False)
    signatures: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _includes: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _markdown_includes: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)  # page -> {written: path}

    @cached_property
    def left_out(self) -> frozenset[str]:
        """Pages governed by a manifest that failed to parse: how to chunk and tag them is unknown,
        so a build leaves them out (the manifest's own error says what to fix)."""
        invalid = set(self.manifest_texts) - set(self.manifests)
        if not invalid:
            return frozenset()
        return frozenset(p for p in self.files if _governing_dir(p, self.manifest_texts) in invalid)

    @property
    def root_manifest(self) -> Manifest | None:
        return self.manifests.get("")

    def taxonomy_config(self) -> dict[str, TaxonomyConfig]:
        """Taxonomy settings from every manifest; the root's win where two disagree."""
        merged: dict[str, TaxonomyConfig] = {}
        for directory in sorted(self.manifests, key=lambda d: (d != "", d)):
            for key, conf in self.manifests[directory].taxonomy.items():
                merged.setdefault(key, conf)
        return merged

    def file_key(self, relpath: str) -> str:
        """Content hash plus the texts that decide how the file is chunked and tagged."""
        manifest = nearest_manifest(relpath, self.manifests)
        digest = hashlib.sha256(self.files[relpath])
        digest.update(b"\0" + self.manifest_texts.get(manifest.directory if manifest else "\0", "").encode())
        digest.update(b"\0" + self.manifest_texts.get("", "").encode())
        if self.generator or relpath.endswith(".mdx"):  # plain pages keep the keys of builds before generators
            digest.update(f"\0{self.generator}:{sitegen.CLEANER_VERSION}".encode())
        for included in self.includes(relpath):  # an edit of an included file chunks its includers again
            digest.update(b"\0" + included.encode() + b"\0" + hashlib.sha256(self._bytes(included)).digest())
        return digest.hexdigest()

    def includes(self, relpath: str) -> list[str]:
        """The corpus pages and files `relpath` includes (retrieval/ingest/sitegen/includes.py)."""
        found = self._includes.get(relpath)
        if found is None:
            found = page_includes(self.files, relpath, self.generator)
            for path in self._markdown_includes.get(relpath, {}).values():
                if path != relpath and path not in found:
                    found.append(path)
            self._includes[relpath] = found
        return found

    @property
    def includes_files(self) -> bool:
        """Whether some page's markdown-include named a file found (read_included_files): then every page
        was read to find them, and a file that is not a page has no stat of its own recorded (seen.py)."""
        return bool(self._markdown_includes)

    def known_includes(self, relpath: str, included: list[str]) -> None:
        """The pages `relpath` includes, as recorded when its bytes were what they are (seen.py)."""
        self._includes[relpath] = included

    def all_includes(self) -> dict[str, list[str]] | None:
        """Every page that includes others, with them; None when some page's includes were not looked for."""
        if any(relpath not in self._includes for relpath in self.files):
            return None
        return {relpath: found for relpath, found in self._includes.items() if found and relpath in self.files}

    def any_included(self, paths: frozenset[str]) -> bool:
        """Whether some page includes one of `paths`."""
        return bool(self.generator) and any(set(self.includes(p)) & paths for p in self.files)

    def included(self, relpath: str) -> dict[str, bytes]:
        """What `sitegen.clean` takes as `included`: the pages `relpath` includes by path, the files
        its markdown-includes name by the include as written."""
        found = {path: self.files[path] for path in page_includes(self.files, relpath, self.generator)}
        for written, path in self._markdown_includes.get(relpath, {}).items():
            if path != relpath:
                found[sitegen.markdown_include_key(written)] = self._bytes(path)
        return found

    def _bytes(self, path: str) -> bytes:
        return self.files[path] if path in self.files else self.include_files[path]


def read_included_files(scan: CorpusScan, read: Callable[[str], bytes | None]) -> None:
    """The files a MkDocs corpus's markdown-includes name, found inside the corpus root: a page is
    taken from the corpus, another file read with `read` (None: absent, outside the root, not a
    regular file or too large). The pages that name them keep which file each include found; an
    include that found none is told when the page is cleaned (sitegen/mkdocs.py)."""
    if scan.generator != "mkdocs":
        return
    excluded = tuple(p for p in scan.excluded if p.endswith("/"))
    for relpath, raw in scan.files.items():
        if b"{!" not in raw:
            continue
        found = {}
        for written in sitegen.markdown_includes(raw.decode("utf-8", "replace")):
            for candidate in sitegen.markdown_include_candidates(written, scan.site_prefix):
                if candidate in scan.files or candidate in scan.include_files:
                    found[written] = candidate
                    break
                if candidate.endswith(MARKDOWN_SUFFIXES) or candidate.startswith(excluded):
                    continue  # a page left out is not read as a file
                body = read(candidate)
                if body is not None and b"\0" not in body:  # text only
                    scan.include_files[candidate] = body
                    found[written] = candidate
                    break
        if found:
            scan._markdown_includes[relpath] = found


def read_as_generator(scan: CorpusScan, root: Path | None, names: set[str] | None = None,
                      signatures: dict[str, list[str]] | None = None) -> None:
    """The root manifest's generator, else the one detected; a Hugo corpus's bundle resources left out.
    `signatures`: those of pages unchanged since a previous detection recorded them (`sitegen.detect`)."""
    choice = scan.root_manifest.generator if scan.root_manifest else "auto"
    if choice == "none":
        return
    if choice != "auto":
        scan.generator, scan.generator_reason = choice, f"\"generator\": \"{choice}\" in {MANIFEST_NAME}"
    else:
        scan.signatures = dict(signatures or {})
        found = sitegen.detect(root, scan.files, names=names, signatures=scan.signatures)
        scan.generator, scan.generator_reason = found.name, found.reason
    if scan.generator == "hugo":
        _hugo_bundle_resources(scan)


def _hugo_bundle_resources(scan: CorpusScan) -> None:
    """A folder with an `index.md` is a Hugo leaf bundle: its other pages are resources the page
    shows (a glossary's entries), not pages of the site, so they are not indexed as pages."""
    bundles = sorted({p.rpartition("/")[0] for p in scan.files if p.endswith("/index.md")})
    if not bundles:
        return
    # Each bundle's pages found by bisection in the sorted paths, not by a pass over every page: a site
    # whose pages are all bundles (`posts/NAME/index.md`) would otherwise cost pages x pages.
    order = {relpath: n for n, relpath in enumerate(scan.files)}
    paths = sorted(order)
    for bundle in bundles:
        under = paths[bisect_left(paths, bundle + "/"):bisect_left(paths, bundle + "0")]  # "0" follows "/"
        inside = sorted((p for p in under if p in scan.files and p != f"{bundle}/index.md"), key=order.__getitem__)
        if not inside:
            continue
        for relpath in inside:
            del scan.files[relpath]
            scan.excluded.append(relpath)
        scan.findings.append(Finding(
            "warning", "hugo-bundle-resources", f"{bundle}/index.md", None,
            f"{len(inside)} page(s) under {bundle}/ are resources of this Hugo leaf bundle (its index.md), "
            "not pages of the site; they are left out", "rename index.md to _index.md if they are pages"))


def too_large(scan: CorpusScan, relpath: str, size: int, limit: int) -> None:
    scan.findings.append(Finding("warning", "file-too-large", relpath, None, str(FileTooLarge(size, limit)),
                                 "split it into smaller pages, or raise DOCSMCP_MAX_FILE_BYTES"))


def add_manifest(scan: CorpusScan, text: str, reldir: str, relpath: str) -> None:
    scan.manifest_texts[reldir] = text
    try:
        scan.manifests[reldir] = parse_manifest(text, reldir)
    except ConfigError as exc:
        line = exc.line or _manifest_line(text, str(exc))
        scan.findings.append(Finding("error", "manifest-invalid", relpath, line, str(exc),
                                     "fix the manifest; see docs/manifests.md for the schema"))


def _manifest_line(text: str, message: str) -> int | None:
    """Line of the first name quoted in a schema error (`unknown key(s) 'colour'`, `chunk_by='h4'`),
    looked up as a JSON key first, then as a JSON string value."""
    for name in re.findall(r"'([^']+)'", message):
        quoted = re.escape(json.dumps(name))
        for pattern in (quoted + r"\s*:", quoted):
            match = re.search(pattern, text)
            if match:
                return text.count("\n", 0, match.start()) + 1
    return None


def page_includes(files: Mapping[str, bytes], relpath: str, generator: str) -> list[str]:
    raw = files[relpath]
    if not generator or (b"include" not in raw and b"8<" not in raw):
        return []
    return sitegen.included_pages(raw.decode("utf-8", "replace"), relpath, generator, files)


def _governing_dir(relpath: str, manifest_texts: dict[str, str]) -> str | None:
    parts = PurePosixPath(relpath).parts[:-1]
    for depth in range(len(parts), -1, -1):
        directory = "/".join(parts[:depth])
        if directory in manifest_texts:
            return directory
    return None
