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

import difflib
import json
import re
from collections import defaultdict
from pathlib import PurePosixPath

import yaml

from .edits import format_json, frontmatter_set, json_append, json_set, remove_lines, replace_span
from .errors import ConfigError
from .fix_base import (
    KINDS,
    Change,
    FixContext,
    ProposedFix,
    Thresholds,
    analyse_corpus,
    change_file_config,
    local_path,
    make_fix,
    manifest_dir,
    manifest_path,
    median_size,
    strategy_dict,
    strategy_source,
)
from .manifest import MANIFEST_NAME, STRATEGIES, Strategy, glob_match, nearest_manifest, parse_strategy
from .parsing import HINT_RE

__all__ = ["KINDS", "FixContext", "ProposedFix", "Thresholds", "analyse_corpus", "heuristic_fixes"]

LANGUAGE_PARENTS = {"sdks", "sdk", "clients", "client-libraries", "libraries", "languages", "bindings"}
KNOWN_LANGUAGES = {
    "python", "typescript", "javascript", "go", "golang", "java", "kotlin", "ruby", "php", "csharp", "dotnet",
    "rust", "swift", "dart", "elixir", "scala", "cpp", "c", "r", "terraform", "node",
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


# --- taxonomy --------------------------------------------------------------------------------------


def taxonomy_fixes(ctx: FixContext, *, skip: set[str] = frozenset()) -> list[ProposedFix]:
    return [*_unknown_values(ctx), *_missing_values(ctx, skip)]


def _allowed(ctx: FixContext) -> dict[str, tuple[str, ...] | None]:
    return {key: conf.values for key, conf in ctx.scan.taxonomy_config().items()}


def closest_value(value: str, allowed: tuple[str, ...]) -> str | None:
    def norm(text: str) -> str:
        return re.sub(r"[^a-z0-9]", "", text.lower())

    for candidate in allowed:
        if norm(candidate) == norm(value):
            return candidate
    match = difflib.get_close_matches(value.lower(), [a.lower() for a in allowed], n=1, cutoff=0.6)
    return next((a for a in allowed if a.lower() == match[0]), None) if match else None


def _unknown_values(ctx: FixContext) -> list[ProposedFix]:
    allowed = _allowed(ctx)
    fixes = []
    for relpath, result in sorted(ctx.results.items()):
        if result.config is None:
            continue
        for key, value in sorted(result.config.metadata.items()):
            values = allowed.get(key)
            if values is None or value in values:
                continue
            finding = next((f.as_dict() for f in result.findings if f.code == "taxonomy-value" and f"{key}=" in f.message),
                           None)
            best = closest_value(value, values)
            if best is not None:
                change = _set_metadata_at_source(ctx, relpath, key, best)
                rationale = (f"{key}={value!r} is not an allowed value ({', '.join(values)}); {best!r} is the "
                             f"nearest allowed value, so this is most likely a typo.")
                fix = make_fix(ctx, kind="taxonomy-value", relpath=relpath, change=change, rationale=rationale,
                               finding=finding, expect=lambda after, k=key, b=best: after.config.metadata.get(k) == b)
            else:
                fix = _allow_value(ctx, relpath, key, value, values, finding)
            if fix is not None:
                fixes.append(fix)
    return fixes


def _set_metadata_at_source(ctx: FixContext, relpath: str, key: str, value: str) -> Change:
    """Change the value where it is set: front matter, the last matching override, or the baseline."""
    fm = ctx.doc(relpath).frontmatter
    if any(isinstance(fm.get(block), dict) and key in fm[block] for block in ("metadata", "mcp_metadata")):
        return _frontmatter_metadata(ctx, relpath, key, value)
    manifest = nearest_manifest(relpath, ctx.scan.manifests)
    if manifest is None:
        return _frontmatter_metadata(ctx, relpath, key, value)
    target = manifest_path(manifest.directory)
    old, digest = ctx.read(target)
    local = local_path(relpath, manifest.directory)
    setting = [n for n, o in enumerate(manifest.overrides) if key in o.metadata and glob_match(local, o.pattern)]
    path = ["overrides", setting[-1], "metadata", key] if setting else ["metadata", key]
    return Change(target, old, json_set(old, path, value), digest)


def _frontmatter_metadata(ctx: FixContext, relpath: str, key: str, value: str) -> Change:
    old, digest = ctx.read(relpath)
    fm = ctx.doc(relpath).frontmatter
    in_mcp = isinstance(fm.get("mcp_metadata"), dict) and key in fm["mcp_metadata"]
    block = "metadata" if not in_mcp and isinstance(fm.get("metadata"), dict) and key in fm["metadata"] \
        else "mcp_metadata"
    return Change(relpath, old, frontmatter_set(old or "", block, value, subkey=key), digest)


def _allow_value(ctx: FixContext, relpath: str, key: str, value: str, values: tuple[str, ...],
                 finding: dict | None) -> ProposedFix | None:
    declaring = next((d for d in sorted(ctx.scan.manifests, key=lambda d: (d != "", d))
                      if key in ctx.scan.manifests[d].taxonomy and ctx.scan.manifests[d].taxonomy[key].values is not None),
                     None)
    if declaring is None:
        return None
    target = manifest_path(declaring)
    old, digest = ctx.read(target)
    change = Change(target, old, json_append(old, ["taxonomy", key, "values"], value), digest)
    rationale = (f"{key}={value!r} ({relpath}) is not one of the allowed values ({', '.join(values)}) and none is "
                 f"close to it. If {value!r} is a legitimate {key}, allow it in {target}; otherwise reject this "
                 f"proposal and correct the file by hand.")
    return make_fix(ctx, kind="taxonomy-value", relpath=relpath, change=change, rationale=rationale, finding=finding,
                    expect=lambda after: not any(f.code == "taxonomy-value" for f in after.findings))


def _missing_values(ctx: FixContext, skip: set[str]) -> list[ProposedFix]:
    allowed = _allowed(ctx)
    observed: dict[str, set[str]] = defaultdict(set)
    for result in ctx.results.values():
        for key, value in (result.config.metadata.items() if result.config else ()):
            observed[key].add(value)
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for key in sorted(set(observed) | set(allowed)):
        candidates = set(allowed.get(key) or ()) or observed[key]
        parents = _value_parents(ctx, key)
        for relpath, result in sorted(ctx.results.items()):
            if relpath in skip or result.config is None or key in result.config.metadata:
                continue
            found = _value_from_path(relpath, candidates, parents, allowed.get(key))
            if found is not None:
                groups[(key, *found)].append(relpath)
    fixes = []
    for (key, directory, value), files in sorted(groups.items()):
        fixes.extend(_tag_group(ctx, key, directory, value, files))
    return fixes


def _value_parents(ctx: FixContext, key: str) -> set[str]:
    """Folders P where every file under P/<v>/ has key=v: a sibling folder's name is then its value too."""
    by_dir: dict[str, set[str | None]] = defaultdict(set)
    for relpath, result in ctx.results.items():
        dirs = PurePosixPath(relpath).parts[:-1]
        for n in range(1, len(dirs) + 1):
            by_dir["/".join(dirs[:n])].add(result.config.metadata.get(key) if result.config else None)
    parents = set()
    for directory, values in by_dir.items():
        name = PurePosixPath(directory).name
        if values == {name}:
            parents.add(manifest_dir(directory))
    return parents


def _value_from_path(relpath: str, candidates: set[str], parents: set[str],
                     allowed: tuple[str, ...] | None) -> tuple[str, str] | None:
    dirs = PurePosixPath(relpath).parts[:-1]
    for n, part in enumerate(dirs):
        directory = "/".join(dirs[: n + 1])
        if (part in candidates or "/".join(dirs[:n]) in parents) and (allowed is None or part in allowed):
            return directory, part
    return None


def _tag_group(ctx: FixContext, key: str, directory: str, value: str, files: list[str]) -> list[ProposedFix]:
    everything = ctx.markdown_under(directory)
    governing = {(m.directory if m else None) for m in (nearest_manifest(p, ctx.scan.manifests) for p in everything)}
    known = any(value in (r.config.metadata.get(key),) for r in ctx.results.values() if r.config)
    why = f"its name is a {key} value used elsewhere in the corpus" if known else \
        f"the folders next to it are tagged with their own names as {key}"
    reason = f"{key} is missing, and the folder {directory}/ implies {key}={value!r} ({why})."
    finding = {"severity": "warning", "code": "taxonomy-missing", "file": files[0], "line": None,
               "message": f"no {key} value"}
    if set(files) == set(everything) and len(governing) == 1 and None not in governing:
        (manifest_dir,) = governing
        target = manifest_path(manifest_dir)
        old, digest = ctx.read(target)
        if manifest_dir == directory:
            new = json_set(old, ["metadata", key], value)
        else:
            new = json_append(old, ["overrides"], {"pattern": f"{local_path(directory, manifest_dir)}/**",
                                                   "metadata": {key: value}})
        fix = make_fix(ctx, kind="taxonomy-value", relpath=files[0], change=Change(target, old, new, digest),
                       rationale=f"{len(files)} file(s) under {directory}/: {reason}", finding=finding,
                       expect=lambda after: after.config.metadata.get(key) == value)
        return [fix] if fix else []
    fixes = []
    for relpath in files:
        change = _frontmatter_metadata(ctx, relpath, key, value)
        fix = make_fix(ctx, kind="taxonomy-value", relpath=relpath, change=change, rationale=reason,
                       finding={**finding, "file": relpath},
                       expect=lambda after: after.config.metadata.get(key) == value)
        if fix:
            fixes.append(fix)
    return fixes


# --- hints -----------------------------------------------------------------------------------------

HINT_CODES = ("hint-malformed", "hint-orphan", "hint-dangling")


def hint_fixes(ctx: FixContext) -> list[ProposedFix]:
    fixes = []
    for relpath, result in sorted(ctx.results.items()):
        findings = [f for f in result.findings if f.code in HINT_CODES]
        if findings:
            fix = _fix_hints(ctx, relpath, findings)
            if fix is not None:
                fixes.append(fix)
    return fixes


def repair_hint(raw: str) -> Strategy | None:
    """Read a hint the way a person meant it: `{chunk_by: h3}`, `'h3'`, `h3`, trailing commas..."""
    for attempt in (raw, re.sub(r",\s*}", "}", raw)):
        try:
            data = yaml.safe_load(attempt)
        except yaml.YAMLError:
            continue
        if isinstance(data, dict):
            data = {str(k).strip(): (v.strip() if isinstance(v, str) else v) for k, v in data.items()}
            data = {k: v for k, v in data.items() if k in ("chunk_by", "max_chunk_size", "min_chunk_size")}
        if isinstance(data, str):
            data = data.strip().lower()
        try:
            return parse_strategy(data, "hint")
        except ConfigError:
            continue
    return None


def _fix_hints(ctx: FixContext, relpath: str, findings: list) -> ProposedFix | None:
    doc = ctx.doc(relpath)
    old, digest = ctx.read(relpath)
    if old is None:
        return None
    edits: list[tuple[int, str, object]] = []  # (line, description, edit function)
    notes = []
    by_line = {h.line + 1: h for h in doc.hints}
    heading_at = {b.start: n for n, b in enumerate(doc.blocks) if b.kind == "heading"}
    for finding in sorted(findings, key=lambda f: f.line or 0):
        if finding.code == "hint-dangling":
            index = heading_at.get(finding.line)
            hint = next((h for h in doc.hints if index is not None and h.block_index == index - 1), None)
        else:
            hint = by_line.get(finding.line)
        if hint is None and finding.code == "hint-orphan" and finding.line and finding.line - 1 in doc.stray_hint_lines:
            line = finding.line - 1
            match = HINT_RE.search(doc.lines[line])
            if match:
                edits.append((line, "", _strip_inline(line, match.group(0))))
                notes.append(f"line {finding.line}: removed a hint comment that sits inside other content")
            continue
        if hint is None or any(line == hint.line for line, _, _ in edits):
            continue
        block = doc.blocks[hint.block_index]
        comment = HINT_RE.search(block.text).group(0) if HINT_RE.search(block.text) else None
        if comment is None:
            continue
        section = hint.block_index + 1 < len(doc.blocks) and doc.blocks[hint.block_index + 1].kind == "heading"
        repaired = repair_hint(hint.raw) if finding.code == "hint-malformed" else None
        file_level = all(b.kind == "html" for b in doc.blocks[: hint.block_index])
        if repaired is not None and (section or file_level):
            value = {"chunk_by": repaired.chunk_by} if section else strategy_dict(repaired)
            new_raw = json.dumps(value)
            edits.append((hint.line, "", _replace_raw(block.start, block.end - 1, hint.raw, new_raw)))
            notes.append(f"line {hint.line + 1}: rewrote the hint as valid JSON {new_raw}")
        else:
            whole = block.text.strip() == comment.strip()
            edits.append((hint.line, "", _drop_block(block.start, block.end) if whole
                          else _replace_raw(block.start, block.end - 1, comment, "")))
            why = {"hint-malformed": "could not be read", "hint-orphan": "attaches to nothing",
                   "hint-dangling": "asks for a split level the section does not have"}[finding.code]
            notes.append(f"line {hint.line + 1}: removed a hint that {why}")
    if not edits:
        return None
    text = old
    for _line, _desc, edit in sorted(edits, key=lambda e: e[0], reverse=True):
        text = edit(text)
    change = Change(relpath, old, text, digest)
    rationale = "validate reports " + ", ".join(f"{f.code} at line {f.line}" for f in findings) + ". " + "; ".join(notes) + "."
    return make_fix(ctx, kind="hint-fix", relpath=relpath, change=change, rationale=rationale,
                    finding=findings[0].as_dict(),
                    expect=lambda after: len([f for f in after.findings if f.code in HINT_CODES]) < len(findings))


def _replace_raw(first: int, last: int, old: str, new: str):
    return lambda text: replace_span(text, first, last, old, new)


def _drop_block(start: int, end: int):
    return lambda text: remove_lines(text, start, end)


def _strip_inline(line: int, comment: str):
    def edit(text: str) -> str:
        lines = text.replace("\r\n", "\n").split("\n")
        if lines[line].strip() == comment.strip():
            return remove_lines(text, line, line + 1)
        return replace_span(text, line, line, comment, "")

    return edit
