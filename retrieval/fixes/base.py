"""What every fixer shares: the analysed corpus, the proposal record, and the edits that put a
strategy or metadata where it takes effect (inline hint > front matter > manifest override).

Plain Python, no Django: `corpus.fixes` stores the proposals, the admin reviews them.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from retrieval.errors import ConfigError, SkippedFile
from retrieval.ingest.chunking import Chunk, chunk_document
from retrieval.ingest.files import read_regular_file
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.manifest import (
    DEFAULT_MAX_CHUNK_SIZE,
    MANIFEST_NAME,
    Manifest,
    Strategy,
    glob_match,
    nearest_manifest,
    parse_manifest,
)
from retrieval.ingest.pages import FileResult, _resolve_hints, process_file
from retrieval.ingest.parsing import ParsedDocument, parse_markdown
from retrieval.ingest.scan import CorpusScan, Finding
from retrieval.ingest.validate import process_corpus

from .edits import content_hash, replace_span, unified_diff
from .frontmatter_edits import frontmatter_set
from .json_edits import json_append, json_set

# Every kind a proposal can have; the admin's filter and the docs are generated from this tuple.
KINDS = ("bootstrap-manifest", "deeper-split", "shallower-split", "strategy-tune", "taxonomy-value", "hint-fix",
         "content-keywords", "content-section", "content-page")
UNBOUNDED = 10**9


@dataclass(frozen=True)
class Thresholds:
    """Sizes are in characters of chunk content, like max_chunk_size."""

    large_section: int = 8_000  # a section above min(this, max_chunk_size) outgrew its strategy
    tiny_median: int = 200  # median chunk below this: the split is too fine
    min_chunks_for_tiny: int = 4  # ...when the file has at least this many chunks
    good_min: int = 150  # bootstrap: chunk sizes that retrieve well
    good_max: int = 3_000


@dataclass
class ProposedFix:
    kind: str
    file: str  # the file the fix is about (for a corpus-wide manifest: the manifest itself)
    target_path: str  # the file the change is written to, relative to the corpus root
    rationale: str
    old_text: str | None  # None: the target does not exist yet
    new_text: str
    base_hash: str  # sha256 of the target's bytes when proposed (edits.ABSENT_HASH when missing)
    source: str = "heuristic"
    finding: dict | None = None

    @cached_property
    def diff(self) -> str:
        return unified_diff(self.target_path, self.old_text, self.new_text)

    @property
    def identity(self) -> tuple[str, str, str]:
        return self.file, self.kind, self.diff


@dataclass
class FixContext:
    """A scanned and chunked corpus, plus lazily parsed documents, for the fixers to read."""

    root: Path
    scan: CorpusScan
    results: dict[str, FileResult]
    findings: list[Finding]
    thresholds: Thresholds = field(default_factory=Thresholds)
    _docs: dict[str, ParsedDocument] = field(default_factory=dict, repr=False)

    def doc(self, relpath: str) -> ParsedDocument:
        if relpath not in self._docs:
            self._docs[relpath] = parse_markdown(self.results[relpath].content)
        return self._docs[relpath]

    def read(self, relpath: str) -> tuple[str | None, str]:
        """(text, sha256) of a target file as it is on disk now; (None, ABSENT_HASH) when missing."""
        try:
            raw = read_regular_file(self.root / relpath, None)
        except (FileNotFoundError, SkippedFile):  # absent, or something a fix may not write (a pipe, a link)
            raw = None
        return (raw.decode("utf-8") if raw is not None else None), content_hash(raw)

    def section_hints(self, relpath: str) -> dict[int, int]:
        return _resolve_hints(relpath, self.doc(relpath), [])[1]

    def sections(self, relpath: str, chunk_by: str) -> list[Chunk]:
        """Chunks the split level alone gives, before oversized sections are split further."""
        doc = self.doc(relpath)
        return chunk_document(relpath, doc, Strategy(chunk_by, UNBOUNDED), self.section_hints(relpath))

    def chunks(self, relpath: str, strategy: Strategy) -> list[Chunk]:
        return chunk_document(relpath, self.doc(relpath), strategy, self.section_hints(relpath))

    def markdown_under(self, directory: str) -> list[str]:
        prefix = f"{directory}/" if directory else ""
        return [p for p in self.results if p.startswith(prefix)]


def analyse_corpus(root: Path, *, thresholds: Thresholds | None = None,
                   progress: Callable[[int, int], None] | None = None, workers: int = 1) -> FixContext:
    scan = scan_corpus(root)
    results = process_corpus(scan, progress=progress, workers=workers)
    findings = list(scan.findings)
    for result in results:
        findings.extend(result.findings)
    return FixContext(scan.root, scan, {r.relpath: r for r in results}, findings, thresholds or Thresholds())


def median_size(chunks: list[Chunk]) -> int:
    return int(statistics.median(len(c.content) for c in chunks)) if chunks else 0


def strategy_dict(strategy: Strategy) -> dict:
    """The shortest object that means this strategy (defaults left out)."""
    out: dict[str, object] = {"chunk_by": strategy.chunk_by}
    if strategy.max_chunk_size != DEFAULT_MAX_CHUNK_SIZE:
        out["max_chunk_size"] = strategy.max_chunk_size
    if strategy.min_chunk_size:
        out["min_chunk_size"] = strategy.min_chunk_size
    return out


def manifest_path(directory: str) -> str:
    return f"{directory}/{MANIFEST_NAME}" if directory else MANIFEST_NAME


def manifest_dir(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent


def local_path(relpath: str, directory: str) -> str:
    return relpath[len(directory) + 1:] if directory else relpath


@dataclass(frozen=True)
class StrategySource:
    """Where a file's strategy is decided, so a change is written where it takes effect."""

    kind: str  # "inline" (file-level hint comment) | "frontmatter" | "manifest" | "none"
    manifest: Manifest | None


def strategy_source(ctx: FixContext, relpath: str) -> StrategySource:
    doc = ctx.doc(relpath)
    manifest = nearest_manifest(relpath, ctx.scan.manifests)
    if _file_hint(doc) is not None:
        return StrategySource("inline", manifest)
    if "mcp_chunking_hint" in doc.frontmatter:
        return StrategySource("frontmatter", manifest)
    return StrategySource("manifest" if manifest is not None else "none", manifest)


def _file_hint(doc: ParsedDocument):
    for hint in doc.hints:
        following = hint.block_index + 1
        followed_by_heading = following < len(doc.blocks) and doc.blocks[following].kind == "heading"
        if not followed_by_heading and all(b.kind == "html" for b in doc.blocks[: hint.block_index]):
            return hint
    return None


@dataclass(frozen=True)
class Change:
    target_path: str
    old_text: str | None
    new_text: str
    base_hash: str


def change_file_config(ctx: FixContext, relpath: str, *, strategy: Strategy | None = None,
                       metadata: dict[str, str] | None = None) -> Change:
    """One edit that sets this file's strategy and/or metadata keys, where they take effect."""
    source = strategy_source(ctx, relpath)
    metadata = metadata or {}
    if source.kind == "manifest" and source.manifest is not None:
        return _manifest_change(ctx, relpath, source.manifest, strategy, metadata)
    old, digest = ctx.read(relpath)
    text = old or ""
    if strategy is not None:
        if source.kind == "inline":
            hint = _file_hint(ctx.doc(relpath))
            text = replace_span(text, hint.line, hint.line + hint.raw.count("\n"), hint.raw,
                                json.dumps(strategy_dict(strategy)))
        else:
            value = strategy_dict(strategy)
            text = frontmatter_set(text, "mcp_chunking_hint", value["chunk_by"] if len(value) == 1 else value)
    for key, value in metadata.items():
        text = frontmatter_set(text, metadata_block(ctx.doc(relpath).frontmatter, key), value, subkey=key)
    return Change(relpath, old, text, digest)


def metadata_block(frontmatter: dict, key: str) -> str:
    """The front matter mapping that sets `key` (`mcp_metadata` wins over `metadata`), else `mcp_metadata`."""
    def sets(block: str) -> bool:
        return isinstance(frontmatter.get(block), dict) and key in frontmatter[block]

    return "metadata" if sets("metadata") and not sets("mcp_metadata") else "mcp_metadata"


def _manifest_change(ctx: FixContext, relpath: str, manifest: Manifest, strategy: Strategy | None,
                     metadata: dict[str, str]) -> Change:
    target = manifest_path(manifest.directory)
    old, digest = ctx.read(target)
    if old is None:
        raise ConfigError(f"{target} disappeared while proposing fixes")
    local = local_path(relpath, manifest.directory)
    overrides = json.loads(old).get("overrides") or []
    matching = [n for n, o in enumerate(overrides) if isinstance(o, dict) and glob_match(local, o.get("pattern", ""))]
    exact = [n for n in matching if overrides[n].get("pattern") == local]
    text = old
    if exact and exact[-1] == matching[-1]:  # the last matching override decides; edit it in place
        n = exact[-1]
        if strategy is not None:
            text = json_set(text, ["overrides", n, "strategy"], strategy_dict(strategy))
        for key, value in metadata.items():
            text = json_set(text, ["overrides", n, "metadata", key], value)
    else:
        override: dict[str, object] = {"pattern": local}
        if strategy is not None:
            override["strategy"] = strategy_dict(strategy)
        if metadata:
            override["metadata"] = dict(metadata)
        text = json_append(text, ["overrides"], override)
    return Change(target, old, text, digest)


def evaluate_change(ctx: FixContext, relpath: str, change: Change) -> FileResult:
    """How `relpath` is chunked and tagged once `change` is applied (nothing is written)."""
    manifests = dict(ctx.scan.manifests)
    raw = ctx.scan.files[relpath]
    if PurePosixPath(change.target_path).name == MANIFEST_NAME:
        directory = manifest_dir(change.target_path)
        manifests[directory] = parse_manifest(change.new_text, directory)
    elif change.target_path == relpath:
        raw = change.new_text.encode("utf-8")
    scan = CorpusScan(ctx.root, manifests, {}, {}, [])
    return process_file(relpath, raw, "", manifests, scan.taxonomy_config())


def make_fix(ctx: FixContext, *, kind: str, relpath: str, change: Change, rationale: str,
             finding: dict | None = None, source: str = "heuristic",
             expect: Callable[[FileResult], bool] | None = None) -> ProposedFix | None:
    """A proposal, or None when the change would not parse or would not have the intended effect."""
    if change.new_text == (change.old_text or ""):
        return None
    if expect is not None:
        try:
            after = evaluate_change(ctx, relpath, change)
        except ConfigError:
            return None
        if not expect(after):
            return None
    return ProposedFix(kind=kind, file=relpath, target_path=change.target_path, rationale=rationale,
                       old_text=change.old_text, new_text=change.new_text, base_hash=change.base_hash,
                       source=source, finding=finding)
