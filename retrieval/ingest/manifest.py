"""`.docs-mcp.json` manifests, front matter and inline hints resolved into one config per file.

Precedence, lowest to highest: system default (`**/*.md -> h2`), nearest manifest's baseline,
its `overrides` (glob relative to the manifest's directory, last match wins), YAML front
matter (`mcp_chunking_hint`, `mcp_metadata` / `metadata`), then a file-level inline
`<!-- mcp_chunking_hint: {...} -->` comment. Manifests never merge across directories.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

from retrieval.errors import ConfigError
from retrieval.format.metadata import AutoInclude

from .sitegen import CHOICES as GENERATOR_CHOICES

MANIFEST_NAME = ".docs-mcp.json"
STRATEGIES = ("h1", "h2", "h3", "file")
DEFAULT_MAX_CHUNK_SIZE = 20_000
MANIFEST_KEYS = {
    "version", "description", "mcpServerInstructions", "strategy", "metadata", "overrides",
    "taxonomy", "auto_include", "$schema", "exclude", "generator",
}
STRATEGY_KEYS = {"chunk_by", "max_chunk_size", "min_chunk_size"}
OVERRIDE_KEYS = {"pattern", "strategy", "metadata"}
TAXONOMY_KEYS = {"description", "values", "vector_collapse"}
AUTO_INCLUDE_KEYS = {"when", "unless", "include"}


@dataclass(frozen=True)
class Strategy:
    chunk_by: str = "h2"
    max_chunk_size: int = DEFAULT_MAX_CHUNK_SIZE
    min_chunk_size: int = 0

    @property
    def level(self) -> int:
        """Split level: 1-3 for headings, 0 for `file`."""
        return 0 if self.chunk_by == "file" else int(self.chunk_by[1])

    def as_dict(self) -> dict:
        return {"chunk_by": self.chunk_by, "max_chunk_size": self.max_chunk_size,
                "min_chunk_size": self.min_chunk_size}


@dataclass(frozen=True)
class TaxonomyConfig:
    description: str | None = None
    values: tuple[str, ...] | None = None  # allowed values, when the manifest restricts them
    vector_collapse: bool = False


@dataclass(frozen=True)
class Override:
    pattern: str
    strategy: Strategy | None
    metadata: dict[str, str]


@dataclass
class Manifest:
    directory: str  # relative to the corpus root, "" for the root
    strategy: Strategy | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    overrides: list[Override] = field(default_factory=list)
    description: str = ""
    instructions: str = ""
    taxonomy: dict[str, TaxonomyConfig] = field(default_factory=dict)
    auto_include: list[AutoInclude] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)  # .gitignore-style patterns, relative to `directory`
    generator: str = "auto"  # the root manifest's: auto | none | a site generator (retrieval/ingest/sitegen)


@dataclass(frozen=True)
class FileConfig:
    strategy: Strategy
    metadata: dict[str, str]
    manifest_dir: str | None  # None when no manifest governs the file
    explicit_strategy: bool  # False when the system default applied


def _check_keys(where: str, data: dict, allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed, key=str)
    if unknown:
        guesses = {key: close[0] for key in unknown
                   if (close := difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.6))}
        if len(unknown) == 1 and guesses:
            hint = f" (did you mean {guesses[unknown[0]]!r}?)"
        else:
            hint = "".join(f" (did you mean {guess!r} for {key!r}?)" for key, guess in guesses.items())
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}{hint}; "
                          f"allowed: {', '.join(sorted(allowed))}")


def parse_strategy(value: object, where: str) -> Strategy:
    """Accepts the object form or the short string form (`mcp_chunking_hint: file`)."""
    if isinstance(value, str):
        value = {"chunk_by": value}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: strategy must be an object like {{\"chunk_by\": \"h2\"}}")
    _check_keys(where, value, STRATEGY_KEYS)
    chunk_by = value.get("chunk_by")
    if chunk_by not in STRATEGIES:
        raise ConfigError(f"{where}: unknown strategy chunk_by={chunk_by!r}; use one of {', '.join(STRATEGIES)}")
    sizes = {}
    for key in ("max_chunk_size", "min_chunk_size"):
        if key in value:
            size = value[key]
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                raise ConfigError(f"{where}: {key} must be a positive integer, got {size!r}")
            sizes[key] = size
    return Strategy(chunk_by=chunk_by, **sizes)


def parse_metadata(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: metadata must be an object of string values")
    out = {}
    for key, item in value.items():
        if not isinstance(item, str | int | float) or isinstance(item, bool) or str(item).strip() == "":
            raise ConfigError(f"{where}: metadata value for {key!r} must be a non-empty string")
        if not str(key).strip() or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", str(key).strip()):
            raise ConfigError(f"{where}: metadata key {key!r} must be an identifier (letters, digits, _)")
        out[str(key).strip()] = str(item).strip()
    return out


def parse_manifest(text: str, directory: str) -> Manifest:
    where = f"{directory + '/' if directory else ''}{MANIFEST_NAME}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                          line=exc.lineno) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a manifest must be a JSON object")
    _check_keys(where, data, MANIFEST_KEYS)
    if data.get("version") != "1":
        raise ConfigError(f"{where}: \"version\" must be \"1\" (got {data.get('version')!r})")
    manifest = Manifest(directory=directory)
    if "strategy" in data:
        manifest.strategy = parse_strategy(data["strategy"], f"{where} strategy")
    manifest.metadata = parse_metadata(data.get("metadata"), f"{where} metadata")
    for n, item in enumerate(data.get("overrides") or []):
        at = f"{where} overrides[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("pattern"), str) or not item["pattern"]:
            raise ConfigError(f"{at}: each override needs a non-empty \"pattern\" glob")
        _check_keys(at, item, OVERRIDE_KEYS)
        strategy = parse_strategy(item["strategy"], at) if "strategy" in item else None
        manifest.overrides.append(Override(item["pattern"], strategy, parse_metadata(item.get("metadata"), at)))
    exclude = data.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(p, str) and p.strip() for p in exclude):
        raise ConfigError(f"{where}: \"exclude\" must be a list of patterns, e.g. [\"drafts/\", \"**/*.draft.md\"]")
    manifest.exclude = [p.strip() for p in exclude]
    generator = data.get("generator", "auto")
    if generator not in GENERATOR_CHOICES:
        raise ConfigError(f"{where}: unknown generator {generator!r}; use one of {', '.join(GENERATOR_CHOICES)}")
    manifest.generator = generator
    manifest.description = str(data.get("description") or "")
    manifest.instructions = str(data.get("mcpServerInstructions") or "")
    for key, conf in (data.get("taxonomy") or {}).items():
        at = f"{where} taxonomy.{key}"
        if not isinstance(conf, dict):
            raise ConfigError(f"{at}: must be an object")
        _check_keys(at, conf, TAXONOMY_KEYS)
        values = conf.get("values")
        if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            raise ConfigError(f"{at}.values: must be a list of strings")
        manifest.taxonomy[key] = TaxonomyConfig(
            description=conf.get("description"),
            values=tuple(values) if values is not None else None,
            vector_collapse=bool(conf.get("vector_collapse", False)),
        )
    for n, rule in enumerate(data.get("auto_include") or []):
        at = f"{where} auto_include[{n}]"
        if not isinstance(rule, dict):
            raise ConfigError(f"{at}: must be an object")
        _check_keys(at, rule, AUTO_INCLUDE_KEYS)
        if not isinstance(rule.get("when"), str) or not isinstance(rule.get("unless"), str) \
                or not isinstance(rule.get("include"), dict) or not rule["include"]:
            raise ConfigError(f"{at}: needs \"when\" (key), \"unless\" (key) and \"include\" ({{key: value}})")
        manifest.auto_include.append(AutoInclude(rule["when"], rule["unless"],
                                                 parse_metadata(rule["include"], at)))
    return manifest


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern:
    """Glob with `**` spanning directories and `*` / `?` staying inside one path segment."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(path: str, pattern: str) -> bool:
    return bool(_glob_regex(pattern).match(path))


def nearest_manifest(relpath: str, manifests: dict[str, Manifest]) -> Manifest | None:
    parts = PurePosixPath(relpath).parts[:-1]
    for depth in range(len(parts), -1, -1):
        found = manifests.get("/".join(parts[:depth]))
        if found is not None:
            return found
    return None


def resolve_file_config(relpath: str, manifests: dict[str, Manifest], frontmatter: dict | None = None,
                        file_hint: Strategy | None = None) -> FileConfig:
    """Raises ConfigError for invalid front matter hints."""
    manifest = nearest_manifest(relpath, manifests)
    strategy: Strategy | None = None
    metadata: dict[str, str] = {}
    if manifest is not None:
        strategy = manifest.strategy
        metadata = dict(manifest.metadata)
        local = relpath[len(manifest.directory) + 1:] if manifest.directory else relpath
        for override in manifest.overrides:
            if glob_match(local, override.pattern):
                if override.strategy is not None:
                    strategy = override.strategy
                metadata.update(override.metadata)
    frontmatter = frontmatter or {}
    if "mcp_chunking_hint" in frontmatter:
        strategy = parse_strategy(frontmatter["mcp_chunking_hint"], f"{relpath} front matter mcp_chunking_hint")
    for key in ("metadata", "mcp_metadata"):
        if key in frontmatter:
            metadata.update(parse_metadata(frontmatter[key], f"{relpath} front matter {key}"))
    if file_hint is not None:
        strategy = file_hint
    explicit = strategy is not None
    return FileConfig(strategy or Strategy(), metadata, manifest.directory if manifest else None, explicit)
