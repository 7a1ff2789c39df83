"""Taxonomy heuristics: values the taxonomy does not allow, and values a file's folder implies."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from pathlib import PurePosixPath

from retrieval.ingest.manifest import glob_match, nearest_manifest

from .base import (
    Change,
    FixContext,
    ProposedFix,
    local_path,
    make_fix,
    manifest_dir,
    manifest_path,
    metadata_block,
)
from .frontmatter_edits import frontmatter_set
from .json_edits import json_append, json_set


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
    block = metadata_block(ctx.doc(relpath).frontmatter, key)
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
