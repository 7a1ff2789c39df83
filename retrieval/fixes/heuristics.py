"""The deterministic heuristic fixer: pure functions from an analysed corpus to proposals.

Heuristics (thresholds in `fix_base.Thresholds`, rules written down in docs/fixes.md):
- bootstrap-manifest: no root `.docs-mcp.json` -> one, with the strategy whose chunks fall
  most often in a good size band, and `language` metadata for `sdks/<lang>/`-style folders;
- deeper-split: sections larger than min(large_section, max_chunk_size) that have deeper headings;
- shallower-split: median chunk smaller than tiny_median -> the nearest coarser level, or `file`;
- taxonomy-value: a value the taxonomy does not allow (nearest allowed value, else allow it), and
  a missing value the path implies (`sdks/ruby/...` next to `sdks/python/` tagged `python`);
- hint-fix: malformed hint comments repaired (or removed), orphaned and dangling ones removed.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

from retrieval.errors import ConfigError
from retrieval.ingest.manifest import MANIFEST_NAME, STRATEGIES, Strategy

from .base import (
    KINDS,
    FixContext,
    ProposedFix,
    Thresholds,
    analyse_corpus,
    change_file_config,
    make_fix,
    median_size,
    strategy_source,
)
from .hints import HINT_CODES, hint_fixes, repair_hint
from .json_edits import format_json
from .taxonomy import closest_value, taxonomy_fixes

__all__ = ["HINT_CODES", "KINDS", "FixContext", "ProposedFix", "Thresholds", "analyse_corpus", "closest_value",
           "heuristic_fixes", "hint_fixes", "repair_hint", "taxonomy_fixes"]

LANGUAGE_PARENTS = {"sdks", "sdk", "clients", "client-libraries", "libraries", "languages", "bindings"}
KNOWN_LANGUAGES = {
    "python", "typescript", "javascript", "go", "golang", "java", "kotlin", "ruby", "php", "csharp", "dotnet",
    "rust", "swift", "dart", "elixir", "scala", "cpp", "node",
}
BOOTSTRAP_PREFERENCE = ("h2", "h3", "h1", "file")  # ties go to the seed's default, then finer splits


def heuristic_fixes(ctx: FixContext, *, description: str = "") -> list[ProposedFix]:
    bootstrap = bootstrap_manifest(ctx, description=description)
    skip = set(_ungoverned(ctx)) if bootstrap else set()
    fixes = [*bootstrap, *strategy_fixes(ctx, skip=skip), *taxonomy_fixes(ctx, skip=skip), *hint_fixes(ctx)]
    unique: dict[tuple[str, str, str], ProposedFix] = {}
    also: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for fix in fixes:  # one change motivated by several files is proposed once
        key = (fix.kind, fix.target_path, fix.new_text)
        if key in unique:
            also[key].append(fix.file)
        else:
            unique[key] = fix
    for key, files in also.items():
        unique[key].rationale += f" The same change also fixes: {', '.join(sorted(set(files)))}."
    return list(unique.values())


def _ungoverned(ctx: FixContext) -> list[str]:
    return [p for p, r in ctx.results.items() if r.config is not None and r.config.manifest_dir is None]


# --- bootstrap -------------------------------------------------------------------------------------


def bootstrap_manifest(ctx: FixContext, *, description: str = "") -> list[ProposedFix]:
    if (ctx.root / MANIFEST_NAME).exists():
        return []
    files = [p for p in _ungoverned(ctx) if ctx.results[p].chunks]
    if not files:
        return []
    # A heading level that does not split most files (absent, or a lone title) would mean "file" in disguise.
    scores = {by: _band_score(ctx, files, by) for by in STRATEGIES
              if by == "file" or 2 * sum(len(ctx.sections(p, by)) > 1 for p in files) >= len(files)}
    best = max(scores.values())
    chunk_by = next(by for by in BOOTSTRAP_PREFERENCE if by in scores and scores[by] >= best - 0.05)
    data: dict[str, object] = {"version": "1", "description": description or f"{ctx.root.name} documentation",
                               "strategy": {"chunk_by": chunk_by}}
    languages = _language_dirs(ctx, files)
    if languages:
        data["taxonomy"] = {"language": {"description": "Filter results by SDK programming language."}}
        data["overrides"] = [{"pattern": f"{d}/**", "metadata": {"language": v}} for d, v in sorted(languages.items())]
    text = format_json(data) + "\n"
    band = f"{ctx.thresholds.good_min}-{ctx.thresholds.good_max}"
    rationale = (f"The corpus has no {MANIFEST_NAME}, so {len(files)} file(s) fall back to the default h2 split "
                 f"with a strategy-default warning each. Share of content in chunks of {band} characters: "
                 + ", ".join(f"{by} {scores[by]:.0%}" if by in scores else f"{by} n/a (does not split the files)"
                             for by in STRATEGIES) + f"; chunk_by={chunk_by} chosen.")
    if languages:
        rationale += " Folders named after SDK languages get `language` metadata: " + ", ".join(
            f"{d}/ -> {v}" for d, v in sorted(languages.items())) + "."
    fix = ProposedFix(kind="bootstrap-manifest", file=MANIFEST_NAME, target_path=MANIFEST_NAME, rationale=rationale,
                      old_text=None, new_text=text, base_hash="",
                      finding={"code": "strategy-default", "file": files[0], "line": None, "severity": "warning",
                               "message": f"{len(files)} file(s) use the default strategy"})
    return [fix]


def _band_score(ctx: FixContext, files: list[str], chunk_by: str) -> float:
    good = total = 0
    for relpath in files:
        for chunk in ctx.sections(relpath, chunk_by):
            size = len(chunk.content)
            total += size
            if ctx.thresholds.good_min <= size <= ctx.thresholds.good_max:
                good += size
    return good / total if total else 0.0


def _language_dirs(ctx: FixContext, files: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for relpath in files:
        dirs = PurePosixPath(relpath).parts[:-1]
        for n, part in enumerate(dirs):
            name = part.lower()
            if n > 0 and dirs[n - 1].lower() in LANGUAGE_PARENTS or name in KNOWN_LANGUAGES:
                out["/".join(dirs[: n + 1])] = name
                break
    return out


# --- strategy drift --------------------------------------------------------------------------------


def strategy_fixes(ctx: FixContext, *, skip: set[str] = frozenset()) -> list[ProposedFix]:
    fixes = []
    for relpath, result in sorted(ctx.results.items()):
        if relpath in skip or result.config is None or not result.chunks or result.reused:
            continue
        fix = deeper_split(ctx, relpath) or shallower_split(ctx, relpath)
        if fix is not None:
            fixes.append(fix)
    return fixes


def deeper_split(ctx: FixContext, relpath: str) -> ProposedFix | None:
    strategy = ctx.results[relpath].config.strategy
    limit = min(ctx.thresholds.large_section, strategy.max_chunk_size)
    sections = ctx.sections(relpath, strategy.chunk_by)
    big = [c for c in sections if len(c.content) > limit]
    if not big:
        return None
    doc = ctx.doc(relpath)
    inner = {b.level for c in big for b in doc.blocks
             if b.kind == "heading" and c.start_line - 1 < b.start < c.end_line and b.level > max(strategy.level, c.heading_level)}
    levels = sorted(level for level in inner if level <= 3)
    if not levels:
        return None
    proposed = Strategy(f"h{levels[0]}", strategy.max_chunk_size, strategy.min_chunk_size)
    after = ctx.sections(relpath, proposed.chunk_by)
    old_max, new_max = max(len(c.content) for c in sections), max(len(c.content) for c in after)
    if new_max >= old_max:
        return None
    largest = max(big, key=lambda c: len(c.content))
    oversized = next((f for f in ctx.results[relpath].findings if f.code == "chunk-oversized"), None)
    finding = oversized.as_dict() if oversized else {
        "severity": "warning", "code": "section-oversized", "file": relpath, "line": largest.start_line,
        "message": f"section {largest.chunk_id} has {len(largest.content)} characters under chunk_by={strategy.chunk_by}"}
    rationale = (f"{len(big)} section(s) under chunk_by={strategy.chunk_by} are larger than {limit} characters "
                 f"(largest: '{largest.heading or relpath}', {len(largest.content)} characters, line {largest.start_line}). "
                 f"They have h{levels[0]} sub-headings, so chunk_by={proposed.chunk_by} splits them along the author's "
                 f"own structure instead of by size: largest chunk {old_max} -> {new_max} characters, "
                 f"{len(sections)} -> {len(after)} sections.")
    return _strategy_fix(ctx, relpath, "deeper-split", proposed, rationale, finding)


def shallower_split(ctx: FixContext, relpath: str) -> ProposedFix | None:
    result = ctx.results[relpath]
    strategy, chunks, th = result.config.strategy, result.chunks, ctx.thresholds
    median = median_size(chunks)
    if strategy.level == 0 or len(chunks) < th.min_chunks_for_tiny or median >= th.tiny_median:
        return None
    limit = min(th.large_section, strategy.max_chunk_size)
    doc = ctx.doc(relpath)
    levels = {b.level for b in doc.blocks if b.kind == "heading"}
    for chunk_by in [f"h{n}" for n in range(strategy.level - 1, 0, -1) if n in levels] + ["file"]:
        proposed = Strategy(chunk_by, strategy.max_chunk_size, strategy.min_chunk_size)
        sections = ctx.sections(relpath, chunk_by)
        if len(sections) < 2 and chunk_by != "file":
            continue
        if max(len(c.content) for c in sections) > limit:
            continue
        after = ctx.chunks(relpath, proposed)
        if chunk_by != "file" and median_size(after) < th.tiny_median:
            continue
        rationale = (f"{len(chunks)} chunks with a median of {median} characters under chunk_by={strategy.chunk_by}: "
                     f"below {th.tiny_median}, each chunk holds too little context to be found or read alone. "
                     f"chunk_by={chunk_by} gives {len(after)} chunk(s) with a median of {median_size(after)} "
                     f"characters, none above {limit}.")
        finding = {"severity": "warning", "code": "chunks-tiny", "file": relpath, "line": None,
                   "message": f"median chunk size {median} < {th.tiny_median}"}
        return _strategy_fix(ctx, relpath, "shallower-split", proposed, rationale, finding)
    return None


def _strategy_fix(ctx: FixContext, relpath: str, kind: str, proposed: Strategy, rationale: str,
                  finding: dict) -> ProposedFix | None:
    try:
        change = change_file_config(ctx, relpath, strategy=proposed)
    except (ConfigError, ValueError):
        return None
    where = {"inline": "the file's hint comment", "frontmatter": "its front matter",
             "manifest": f"an override in {change.target_path}", "none": "its front matter"}
    rationale += f" Written to {where[strategy_source(ctx, relpath).kind]}."
    return make_fix(ctx, kind=kind, relpath=relpath, change=change, rationale=rationale, finding=finding,
                    expect=lambda after: after.config is not None and after.config.strategy == proposed)
