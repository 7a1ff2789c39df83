"""One page: its text as stored, its chunks, its outline and every finding validate reports for it.

`process_file` is a pure function of (path, text, manifests) so a build can run it in worker
processes and skip it for files whose content and governing manifests did not change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.errors import ConfigError

from . import sitegen
from .chunking import Chunk, chunk_document
from .keywords import MAX_KEYWORD_CHARS, MAX_KEYWORDS, add_keywords, page_keywords
from .links import link_targets
from .manifest import (
    MANIFEST_NAME,
    STRATEGIES,
    FileConfig,
    Manifest,
    Strategy,
    TaxonomyConfig,
    parse_strategy,
    resolve_file_config,
)
from .parsing import ParsedDocument, parse_markdown
from .scan import Finding, page_includes


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


def file_text(raw: bytes) -> str:
    """A file's text as chunked and stored: UTF-8 without a byte-order mark."""
    return raw.decode("utf-8").lstrip("\ufeff")


def served_text(files: dict[str, bytes], relpath: str, generator: str,
                included: dict[str, bytes] | None = None) -> str:
    """A page's text as stored for reading whole: as its generator shows it, includes resolved.
    `included`: what `CorpusScan.included` gives (the files markdown-includes name); without it, the
    pages of `files` the page includes."""
    if included is None:
        included = {path: files[path] for path in page_includes(files, relpath, generator)}
    texts = {path: _decoded(body) for path, body in included.items()}
    return sitegen.clean(file_text(files[relpath]), generator, relpath, texts).text


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
