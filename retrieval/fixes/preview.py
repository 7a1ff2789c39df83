"""Before/after view of a proposed change: the chunks an agent would see, per affected file.

A markdown change is previewed on that file. A manifest change re-resolves the files the
manifest governs and shows those whose strategy or metadata changes (the motivating file
first). Only manifests and the affected files are read, so the preview stays cheap on a
large corpus.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from retrieval.errors import ConfigError, SkippedFile
from retrieval.ingest.files import read_regular_file
from retrieval.ingest.manifest import (
    MANIFEST_NAME,
    Manifest,
    nearest_manifest,
    parse_manifest,
    resolve_file_config,
)
from retrieval.ingest.pages import FileResult, process_file
from retrieval.ingest.scan import DEFAULT_MAX_FILE_BYTES, MARKDOWN_SUFFIXES, CorpusScan


@dataclass(frozen=True)
class ChunkView:
    chunk_id: str
    heading: str
    size: int
    start_line: int
    end_line: int


@dataclass
class FilePreview:
    relpath: str
    before: list[ChunkView]
    after: list[ChunkView]
    before_config: str
    after_config: str
    before_findings: list[str]
    after_findings: list[str]

    @property
    def changed(self) -> bool:
        return (self.before != self.after or self.before_config != self.after_config
                or self.before_findings != self.after_findings)


@dataclass
class Preview:
    files: list[FilePreview] = field(default_factory=list)
    more: int = 0  # affected files left out of `files`
    error: str = ""


def _walk(root: Path) -> tuple[dict[str, str], list[str]]:
    manifests: dict[str, str] = {}
    markdown: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        current = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (current / d).is_symlink())
        reldir = current.relative_to(root).as_posix()
        reldir = "" if reldir == "." else reldir
        for name in filenames:
            path = current / name
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                continue
            relpath = f"{reldir}/{name}" if reldir else name
            if name == MANIFEST_NAME:
                raw = _read(path.resolve() if path.is_symlink() else path)
                if raw is not None:
                    manifests[reldir] = raw.decode("utf-8", errors="replace")
            elif name.endswith(MARKDOWN_SUFFIXES):
                markdown.append(relpath)
    return manifests, sorted(markdown)


def _read(path: Path) -> bytes | None:
    """A source file as a build reads it (retrieval/ingest/files.py), or None where the build skips it."""
    try:
        return read_regular_file(path, DEFAULT_MAX_FILE_BYTES)
    except (OSError, SkippedFile):
        return None


def _parse_all(texts: dict[str, str]) -> dict[str, Manifest]:
    out = {}
    for directory, text in texts.items():
        try:
            out[directory] = parse_manifest(text, directory)
        except ConfigError:
            continue  # an invalid manifest is validate's business; preview the rest
    return out


def _views(result: FileResult) -> tuple[list[ChunkView], str, list[str]]:
    chunks = [ChunkView(c.chunk_id, c.heading, len(c.content), c.start_line, c.end_line) for c in result.chunks]
    config = "—"
    if result.config is not None:
        strategy = result.config.strategy
        config = f"chunk_by={strategy.chunk_by}, max={strategy.max_chunk_size}"
        if strategy.min_chunk_size:
            config += f", min={strategy.min_chunk_size}"
        if result.config.metadata:
            config += "; " + ", ".join(f"{k}={v}" for k, v in sorted(result.config.metadata.items()))
        if result.chunks and result.chunks[0].keywords:  # they rank every chunk: show what a content fix adds
            config += f"; keywords: {result.chunks[0].keywords}"
    findings = [f"{f.severity} {f.code} {f.location()}: {f.message[:160]}" for f in result.findings
                if f.code != "strategy-default"]
    return chunks, config, findings


def preview_change(root: Path, target_path: str, old_text: str | None, new_text: str, *,
                   focus: str | None = None, limit: int = 10) -> Preview:
    root = Path(root).resolve()
    texts, markdown = _walk(root)
    target = PurePosixPath(target_path)
    is_manifest = target.name == MANIFEST_NAME
    directory = "" if str(target.parent) == "." else target.parent.as_posix()
    before_texts, after_texts = dict(texts), dict(texts)
    if is_manifest:
        before_texts.pop(directory, None)
        if old_text is not None:
            before_texts[directory] = old_text
        after_texts[directory] = new_text
        try:
            parse_manifest(new_text, directory)
        except ConfigError as exc:
            return Preview(error=str(exc))
    before, after = _parse_all(before_texts), _parse_all(after_texts)
    taxonomy_before = CorpusScan(root, before, {}, {}, []).taxonomy_config()
    taxonomy_after = CorpusScan(root, after, {}, {}, []).taxonomy_config()

    if is_manifest:
        prefix = f"{directory}/" if directory else ""
        candidates = [p for p in markdown if p.startswith(prefix)]
        affected = [p for p in candidates if _manifest_level(p, before) != _manifest_level(p, after)]
        if focus in candidates and focus not in affected:
            affected.insert(0, focus)
        elif focus in affected:
            affected.remove(focus)
            affected.insert(0, focus)
    else:
        affected = [target_path]

    preview = Preview(more=max(0, len(affected) - limit))
    for relpath in affected[:limit]:
        if relpath == target_path:
            raw_before, raw_after = (old_text or "").encode("utf-8"), new_text.encode("utf-8")
        else:
            path = root / relpath
            raw_before = raw_after = _read(path.resolve() if path.is_symlink() else path)
            if raw_before is None:
                continue
        b_chunks, b_config, b_findings = _views(process_file(relpath, raw_before, "", before, taxonomy_before))
        a_chunks, a_config, a_findings = _views(process_file(relpath, raw_after, "", after, taxonomy_after))
        preview.files.append(FilePreview(relpath, b_chunks, a_chunks, b_config, a_config, b_findings, a_findings))
    return preview


def _manifest_level(relpath: str, manifests: dict[str, Manifest]) -> tuple:
    config = resolve_file_config(relpath, manifests)
    manifest = nearest_manifest(relpath, manifests)
    return config.strategy, tuple(sorted(config.metadata.items())), manifest.directory if manifest else None
