"""Walk a corpus directory: manifests, markdown files, and every finding validate reports.

`process_file` is a pure function of (path, text, manifests) so a build can run it in worker
processes and skip it for files whose content and governing manifests did not change.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from retrieval.errors import ConfigError

from . import sitegen
from .chunking import Chunk, chunk_document
from .exclude import IGNORE_FILE, Excluder, parse_rules
from .files import FileTooLarge, NotRegularFile, read_regular_file
from .keywords import MAX_KEYWORD_CHARS, MAX_KEYWORDS, add_keywords, page_keywords
from .links import link_targets
from .manifest import (
    MANIFEST_NAME,
    STRATEGIES,
    FileConfig,
    Manifest,
    Strategy,
    TaxonomyConfig,
    nearest_manifest,
    parse_manifest,
    parse_strategy,
    resolve_file_config,
)
from .parsing import ParsedDocument, parse_markdown
from .pool import exit_with

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


@dataclass(frozen=True)
class OutlineEntry:
    level: int
    text: str
    line: int  # 1-based


@dataclass
class FileResult:
    relpath: str
    key: str  # hash of content + governing manifests: unchanged key -> reuse the previous build's rows
    title: str
    content: str
    config: FileConfig | None
    chunks: list[Chunk] = field(default_factory=list)
    outline: list[OutlineEntry] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    reused: bool = False  # rows come from the previous build; `chunks` stays empty, `content` may too
    metadata: dict[str, str] = field(default_factory=dict)  # taxonomy values of every chunk of the file
    chunk_count: int = 0
    links: list[str] = field(default_factory=list)  # link targets within the corpus (retrieval/ingest/links.py)


@dataclass
class CorpusScan:
    root: Path
    manifests: dict[str, Manifest]
    manifest_texts: dict[str, str]
    files: dict[str, bytes]  # relpath -> raw bytes of every markdown file
    findings: list[Finding]  # corpus-level findings (manifests, symlinks, encodings)
    generator: str = ""  # the site generator whose syntax the pages are read in ("": plain markdown)
    generator_reason: str = ""  # how it was known: the manifest, a configuration file, the pages' syntax
    excluded: list[str] = field(default_factory=list)  # paths left out by exclude rules (folders end in /)
    _includes: dict[str, list[str]] = field(default_factory=dict, repr=False)

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
        for included in self.includes(relpath):  # an edit of an included page chunks its includers again
            digest.update(b"\0" + included.encode() + b"\0" + hashlib.sha256(self.files[included]).digest())
        return digest.hexdigest()

    def includes(self, relpath: str) -> list[str]:
        """The corpus pages `relpath` includes (retrieval/ingest/sitegen/includes.py)."""
        found = self._includes.get(relpath)
        if found is None:
            found = page_includes(self.files, relpath, self.generator)
            self._includes[relpath] = found
        return found

    def any_included(self, paths: frozenset[str]) -> bool:
        """Whether some page includes one of `paths`."""
        return bool(self.generator) and any(set(self.includes(p)) & paths for p in self.files)

    def included(self, relpath: str) -> dict[str, bytes]:
        return {path: self.files[path] for path in self.includes(relpath)}


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
    _read_as_generator(scan, root)
    return scan


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
        _add_manifest(scan, text, reldir, relpath)
        if reldir in scan.manifests:
            rules.add(parse_rules(scan.manifests[reldir].exclude, reldir))
    else:
        rules.add(parse_rules(text, reldir))


def _read_as_generator(scan: CorpusScan, root: Path | None, names: set[str] | None = None) -> None:
    """The root manifest's generator, else the one detected; a Hugo corpus's bundle resources left out."""
    choice = scan.root_manifest.generator if scan.root_manifest else "auto"
    if choice == "none":
        return
    if choice != "auto":
        scan.generator, scan.generator_reason = choice, f"\"generator\": \"{choice}\" in {MANIFEST_NAME}"
    else:
        found = sitegen.detect(root, scan.files, names=names)
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


def _read_source_file(scan: CorpusScan, path: Path, relpath: str, max_file_bytes: int | None) -> bytes | None:
    """The file's bytes, or None with a finding when it is not a regular file or is over the limit."""
    try:
        return read_regular_file(path, max_file_bytes)
    except FileNotFoundError:  # removed since the directory was listed, or a dangling link
        return None
    except FileTooLarge as exc:
        return _too_large(scan, relpath, exc.size, exc.limit)
    except NotRegularFile as exc:
        scan.findings.append(Finding("warning", "not-regular-file", relpath, None, str(exc),
                                     "replace it with a regular file, or remove it from the corpus directory"))
        return None


def _too_large(scan: CorpusScan, relpath: str, size: int, limit: int) -> None:
    scan.findings.append(Finding("warning", "file-too-large", relpath, None, str(FileTooLarge(size, limit)),
                                 "split it into smaller pages, or raise DOCSMCP_MAX_FILE_BYTES"))


def _check_link(scan: CorpusScan, path: Path) -> bool:
    relpath = path.relative_to(scan.root).as_posix()
    target = path.resolve()
    if not target.is_relative_to(scan.root):
        scan.findings.append(Finding("error", "path-escape", relpath, None,
                                     f"symlink points outside the corpus root (to {target})",
                                     "copy the file into the corpus or remove the link"))
        return False
    return True  # whatever it points at is read like any other file: regular files only


def scan_tree(root: Path, files: dict[str, bytes], links: dict[str, str] | None = None, *,
              oversized: dict[str, int] | None = None,
              max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES) -> CorpusScan:
    """The scan of a tree read from somewhere other than a directory (a git commit), path for path
    what `scan_corpus` gives for the same files on disk: hidden directories skipped, links followed
    only inside the tree, files over `max_file_bytes` skipped with a finding. `links` maps a link's
    path to its target's ('' when it leaves the tree); `oversized` gives the sizes of files the
    reader left unread because of the limit."""
    scan = CorpusScan(Path(root), {}, {}, {}, [])
    links, oversized = links or {}, oversized or {}
    rules = Excluder()
    for relpath in sorted(p for p in files if p.rpartition("/")[2] in (MANIFEST_NAME, IGNORE_FILE)):
        reldir, _, name = relpath.rpartition("/")
        if any(part.startswith(".") for part in reldir.split("/") if part) or rules.excluded_path(relpath):
            continue
        text = files[relpath].decode("utf-8", errors="replace")
        if name == MANIFEST_NAME:
            _add_manifest(scan, text, reldir, relpath)
            rules.add(parse_rules(scan.manifests[reldir].exclude, reldir) if reldir in scan.manifests else [])
        else:
            rules.add(parse_rules(text, reldir))
    for relpath in sorted({*files, *links, *oversized}, key=lambda p: (p.count("/"), p)):
        parts = relpath.split("/")
        if any(part.startswith(".") for part in parts[:-1]):
            continue
        if parts[-1] in (MANIFEST_NAME, IGNORE_FILE):  # read above; one over the size limit is told here
            if max_file_bytes is not None and oversized.get(relpath, 0) > max_file_bytes:
                _too_large(scan, relpath, oversized[relpath], max_file_bytes)
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
            _too_large(scan, relpath, size, max_file_bytes)
            continue
        if raw is None:
            continue
        scan.files[relpath] = raw
    scan.files = dict(sorted(scan.files.items()))
    _read_as_generator(scan, None, names={p for p in files if "/" not in p})
    return scan


def _add_manifest(scan: CorpusScan, text: str, reldir: str, relpath: str) -> None:
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


def file_text(raw: bytes) -> str:
    """A file's text as chunked and stored: UTF-8 without a byte-order mark."""
    return raw.decode("utf-8").lstrip("\ufeff")


def page_includes(files: dict[str, bytes], relpath: str, generator: str) -> list[str]:
    raw = files[relpath]
    if not generator or (b"include" not in raw and b"8<" not in raw):
        return []
    return sitegen.included_pages(raw.decode("utf-8", "replace"), relpath, generator, files)


def served_text(files: dict[str, bytes], relpath: str, generator: str) -> str:
    """A page's text as stored for reading whole: as its generator shows it, includes resolved."""
    included = {path: _decoded(files[path]) for path in page_includes(files, relpath, generator)}
    return sitegen.clean(file_text(files[relpath]), generator, relpath, included).text


def _decoded(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").lstrip("\ufeff")


def process_file(relpath: str, raw: bytes, key: str, manifests: dict[str, Manifest],
                 taxonomy: dict[str, TaxonomyConfig], generator: str = "",
                 included: dict[str, bytes] | None = None) -> FileResult:
    """`included`: the bytes of the corpus pages this one includes (`CorpusScan.included`)."""
    try:
        text = file_text(raw)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return FileResult(relpath, key, relpath, "", None, findings=[Finding(
            "error", "encoding", relpath, line, f"file is not valid UTF-8 (byte {exc.start})",
            "re-save the file as UTF-8")])
    cleaned = sitegen.clean(text, generator, relpath,
                            {path: _decoded(body) for path, body in (included or {}).items()})
    text = cleaned.text
    doc = parse_markdown(text)
    findings: list[Finding] = [Finding("warning", "generator-syntax", relpath, n.line, n.message, n.suggestion, n.kind)
                               for n in cleaned.notices]
    if doc.frontmatter_error:
        findings.append(Finding("error", "frontmatter-invalid", relpath, 1, doc.frontmatter_error,
                                "fix the YAML between the leading --- lines"))
    file_hint, section_hints = _resolve_hints(relpath, doc, findings)
    try:
        config = resolve_file_config(relpath, manifests, doc.frontmatter, file_hint)
    except ConfigError as exc:
        findings.append(Finding("error", "frontmatter-invalid", relpath, 1, str(exc),
                                "use mcp_chunking_hint: {chunk_by: h1|h2|h3|file} and mcp_metadata: {key: value}"))
        config = resolve_file_config(relpath, manifests, None, file_hint)
    if not config.explicit_strategy:
        findings.append(Finding("warning", "strategy-default", relpath, None,
                                "no chunking strategy set; using the default **/*.md -> h2",
                                f"add a {MANIFEST_NAME} with \"strategy\": {{\"chunk_by\": \"h2\"}}"))
    _check_taxonomy(relpath, config.metadata, taxonomy, findings)
    chunks = chunk_document(relpath, doc, config.strategy, section_hints)
    keywords = page_keywords(doc.frontmatter, doc.lines, doc.frontmatter_end)
    add_keywords(chunks, keywords.terms)
    findings.extend(Finding("warning", "keywords-invalid", relpath, keywords.line, f"{problem}; ignored",
                            "write keywords: [term, another term], each at most "
                            f"{MAX_KEYWORD_CHARS} characters, at most {MAX_KEYWORDS} of them")
                    for problem in keywords.problems)
    _check_hints_used(relpath, doc, section_hints, findings)
    _check_chunks(relpath, chunks, config.strategy, findings)
    if not doc.blocks:
        findings.append(Finding("warning", "empty-file", relpath, None, "file has no content; it gives no chunks",
                                "add content or remove the file"))
    outline = [OutlineEntry(b.level, b.text, b.start + 1) for b in doc.blocks if b.kind == "heading"]
    return FileResult(relpath, key, doc.title or Path(relpath).stem, text, config, chunks, outline, findings,
                      metadata=dict(config.metadata), chunk_count=len(chunks), links=link_targets(doc, relpath))


def _resolve_hints(relpath: str, doc: ParsedDocument, findings: list[Finding]) -> tuple[Strategy | None, dict[int, int]]:
    """A hint before any content is file-level; one directly before a heading is section-level."""
    file_hint: Strategy | None = None
    sections: dict[int, int] = {}
    for line in doc.stray_hint_lines:
        findings.append(Finding("error", "hint-orphan", relpath, line + 1,
                                "mcp_chunking_hint is not a standalone HTML comment, so it attaches to nothing",
                                "put <!-- mcp_chunking_hint: {\"chunk_by\": \"h3\"} --> on its own line "
                                "directly before a heading, or at the top of the file"))
    for hint in doc.hints:
        try:
            data = json.loads(hint.raw)
        except json.JSONDecodeError as exc:
            findings.append(Finding("error", "hint-malformed", relpath, hint.line + 1,
                                    f"malformed mcp_chunking_hint: {exc.msg}",
                                    "write valid JSON, e.g. <!-- mcp_chunking_hint: {\"chunk_by\": \"h3\"} -->"))
            continue
        try:
            strategy = parse_strategy(data, "malformed mcp_chunking_hint")
        except ConfigError as exc:
            findings.append(Finding("error", "hint-malformed", relpath, hint.line + 1, str(exc),
                                    f"chunk_by is one of {', '.join(STRATEGIES)}, e.g. "
                                    "<!-- mcp_chunking_hint: {\"chunk_by\": \"h3\"} -->"))
            continue
        following = hint.block_index + 1
        before_content = all(b.kind == "html" for b in doc.blocks[: hint.block_index])
        if before_content:
            file_hint = strategy
        elif following < len(doc.blocks) and doc.blocks[following].kind == "heading":
            if strategy != Strategy(strategy.chunk_by):
                findings.append(Finding("error", "hint-malformed", relpath, hint.line + 1,
                                        "a section hint takes only chunk_by; sizes belong in the manifest "
                                        "or a file-level hint", "remove max_chunk_size/min_chunk_size here"))
            sections[following] = strategy.level
        else:
            findings.append(Finding("error", "hint-orphan", relpath, hint.line + 1,
                                    "mcp_chunking_hint is not followed by a heading, so it attaches to nothing",
                                    "move the comment to the line directly before the heading it is for"))
    return file_hint, sections


def _check_hints_used(relpath: str, doc: ParsedDocument, hints: dict[int, int], findings: list[Finding]) -> None:
    for index, level in hints.items():
        heading = doc.blocks[index]
        deeper = []
        for block in doc.blocks[index + 1:]:
            if block.kind == "heading" and block.level <= heading.level:
                break
            if block.kind == "heading":
                deeper.append(block.level)
        if level > heading.level and not any(heading.level < lv <= level for lv in deeper):
            line = next((h.line + 1 for h in doc.hints if h.block_index == index - 1), heading.start + 1)
            findings.append(Finding("error", "hint-dangling", relpath, line,
                                    f"hint asks to split '{heading.text}' at h{level}, but that section has no "
                                    f"heading between h{heading.level + 1} and h{level}",
                                    "remove the hint or add the sub-headings it expects"))


def _check_taxonomy(relpath: str, metadata: dict[str, str], taxonomy: dict[str, TaxonomyConfig],
                    findings: list[Finding]) -> None:
    for key, value in metadata.items():
        allowed = taxonomy.get(key).values if key in taxonomy else None
        if allowed is not None and value not in allowed:
            findings.append(Finding("error", "taxonomy-value", relpath, None,
                                    f"{key}={value!r} is not an allowed value; allowed: {', '.join(allowed)}",
                                    f"use one of {', '.join(allowed)} or add {value!r} to taxonomy.{key}.values "
                                    "in the root manifest"))


def _check_chunks(relpath: str, chunks: list[Chunk], strategy: Strategy, findings: list[Finding]) -> None:
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.chunk_id in seen:
            findings.append(Finding("error", "duplicate-chunk-id", relpath, chunk.start_line,
                                    f"duplicate chunk ID {chunk.chunk_id}", "rename one of the headings"))
        seen.add(chunk.chunk_id)
        if len(chunk.content) > strategy.max_chunk_size:
            findings.append(Finding("warning", "chunk-oversized", relpath, chunk.start_line,
                                    f"chunk {chunk.chunk_id} has {len(chunk.content)} characters, over "
                                    f"max_chunk_size {strategy.max_chunk_size} (one block cannot be split)",
                                    "split the block, or raise max_chunk_size for this file"))


def process_corpus(scan: CorpusScan, *, progress: Callable[[int, int], None] | None = None,
                   workers: int = 1) -> list[FileResult]:
    """Parse and chunk every file, in path order."""
    paths = sorted(scan.files)
    results = []
    for result in process_files(scan, [(p, scan.file_key(p)) for p in paths], workers=workers):
        results.append(result)
        if progress:
            progress(len(results), len(paths))
    return results


def process_files(scan: CorpusScan, todo: list[tuple[str, str]], *, workers: int = 1) -> Iterator[FileResult]:
    """Results of `(relpath, file_key)` pairs, in the order given, parsed in `workers` processes."""
    taxonomy = scan.taxonomy_config()
    if workers <= 1 or len(todo) < 200:
        for relpath, key in todo:
            yield _without_default_under_invalid(
                scan, process_file(relpath, scan.files[relpath], key, scan.manifests, taxonomy, scan.generator,
                                   scan.included(relpath)))
        return
    from concurrent.futures import ProcessPoolExecutor

    args = ((relpath, scan.files[relpath], key, scan.manifests, taxonomy, scan.generator, scan.included(relpath))
            for relpath, key in todo)
    global _pools
    with _pools_lock:
        _pools += 1
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("forkserver"),
                                 initializer=exit_with, initargs=(os.getpid(),)) as pool:
            for result in pool.map(_process_args, args, chunksize=32):
                yield _without_default_under_invalid(scan, result)
    finally:
        with _pools_lock:
            _pools -= 1
            if _pools == 0:
                _stop_forkserver()


def _governing_dir(relpath: str, manifest_texts: dict[str, str]) -> str | None:
    parts = PurePosixPath(relpath).parts[:-1]
    for depth in range(len(parts), -1, -1):
        directory = "/".join(parts[:depth])
        if directory in manifest_texts:
            return directory
    return None


def left_out_stats(scan: CorpusScan, left_out: list[FileResult], findings: list[Finding]) -> dict:
    """How many pages a build left out and why (by the code of each page's first error), and its
    warnings counted by code: what a summary tells once instead of once per page."""
    reasons: dict[str, int] = {}
    for result in left_out:
        code = next((f.code for f in result.findings if f.severity == "error"), "manifest-invalid")
        reasons[code] = reasons.get(code, 0) + 1
    warnings: dict[str, int] = {}
    for finding in findings:
        if finding.severity == "warning":
            warnings[finding.code] = warnings.get(finding.code, 0) + 1
    return {"left_out_files": len(left_out), "left_out": dict(sorted(reasons.items())),
            "warnings_by_code": dict(sorted(warnings.items())),
            "excluded_files": len(scan.excluded), "generator": scan.generator}


def _without_default_under_invalid(scan: CorpusScan, result: FileResult) -> FileResult:
    """A file whose governing manifest failed to parse is not missing a strategy: the manifest's own
    `manifest-invalid` error says what to fix, and a `strategy-default` warning per file would bury it."""
    parts = PurePosixPath(result.relpath).parts[:-1]
    for depth in range(len(parts), -1, -1):
        directory = "/".join(parts[:depth])
        if directory in scan.manifest_texts:
            if directory not in scan.manifests:
                result.findings = [f for f in result.findings if f.code != "strategy-default"]
            break
    return result


_pools = 0  # parse pools running in this process; the forkserver stops when the last one ends
_pools_lock = threading.Lock()


def _stop_forkserver() -> None:
    """Stops the forkserver and the resource tracker the pool started, and waits for them, so no
    process outlives the command and the workers' CPU counts in the command's own (`time -v`): the
    forkserver reaps the workers, and this process reaps the forkserver. Python keeps both running
    until the process exits otherwise; the next pool starts them again."""
    import multiprocessing.forkserver
    import multiprocessing.resource_tracker

    for helper in (getattr(multiprocessing.forkserver, "_forkserver", None),
                   getattr(multiprocessing.resource_tracker, "_resource_tracker", None)):
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            stop()


def _process_args(args: tuple) -> FileResult:
    return process_file(*args)


def validate_corpus(root: Path, progress: Callable[[int, int], None] | None = None,
                    workers: int | None = None, scan: CorpusScan | None = None,
                    max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
                    ) -> tuple[CorpusScan, list[FileResult], list[Finding]]:
    """`workers` defaults to a process per core, or 1 inside a daemonic process, which cannot have children.
    `scan` is a tree already read (a git commit); otherwise `root` is scanned."""
    if workers is None:
        workers = 1 if multiprocessing.current_process().daemon else (os.cpu_count() or 1)
    scan = scan or scan_corpus(root, max_file_bytes=max_file_bytes)
    results = process_corpus(scan, progress=progress, workers=workers)
    findings = list(scan.findings)
    for result in results:
        findings.extend(result.findings)
    return scan, results, findings
