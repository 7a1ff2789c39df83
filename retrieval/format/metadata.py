"""`metadata.json`: what a build knows about itself, read by every server that serves it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from retrieval.errors import IndexUnavailable
from retrieval.storage import Location, join, read_bytes, write_bytes

METADATA_VERSION = "1.1.0"
METADATA_FILE = "metadata.json"


@dataclass(frozen=True)
class AutoInclude:
    """When `when` is filtered and `unless` is not, also return chunks matching `include` (a manifest's
    `auto_include` rule, kept in metadata.json for the servers that apply it)."""

    when: str
    unless: str
    include: dict[str, str]


@dataclass(frozen=True)
class TaxonomyField:
    description: str | None
    values: tuple[str, ...]  # canonical values found in the corpus, sorted
    vector_collapse: bool = False

    def schema_description(self, key: str) -> str:
        return self.description or f"Filter results by {key}."


@dataclass
class BuildMetadata:
    build_id: str
    corpus: str
    corpus_description: str
    instructions: str
    taxonomy: dict[str, TaxonomyField]
    auto_include: list[AutoInclude]
    stats: dict
    embedding: dict | None  # {"provider", "model", "dimensions"} or None for FTS-only
    files: dict[str, str]  # relpath -> title
    metadata_version: str = METADATA_VERSION
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """Field by field: `asdict` deep-copies every value, `files` (a title per page) included, a cost
        that every build, a one-page rebuild too, paid in proportion to the corpus."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["auto_include"] = [asdict(rule) for rule in self.auto_include]
        data["taxonomy"] = {k: {"description": v.description, "values": list(v.values),
                                "vector_collapse": v.vector_collapse} for k, v in self.taxonomy.items()}
        return data


def write_metadata(directory: Location, metadata: BuildMetadata) -> None:
    """Written last in a build, whole (a rename on disk, one PUT on an object store): its presence
    marks the build complete."""
    text = json.dumps(metadata.to_json(), indent=2, sort_keys=True, ensure_ascii=False)
    write_bytes(join(directory, METADATA_FILE), text.encode("utf-8"))


def read_metadata(directory: Location) -> BuildMetadata:
    try:
        data = json.loads(read_bytes(join(directory, METADATA_FILE)))
    except FileNotFoundError as exc:
        raise IndexUnavailable(f"no index at {directory} (metadata.json is missing)") from exc
    except json.JSONDecodeError as exc:
        raise IndexUnavailable(f"metadata.json at {directory} is unreadable: {exc}") from exc
    major = str(data.get("metadata_version", "0")).split(".")[0]
    if major != METADATA_VERSION.split(".")[0]:
        raise IndexUnavailable(f"index at {directory} has metadata version {data.get('metadata_version')}; "
                               f"this server reads {METADATA_VERSION}: rebuild the index")
    return BuildMetadata(
        build_id=data["build_id"],
        corpus=data.get("corpus", ""),
        corpus_description=data.get("corpus_description", ""),
        instructions=data.get("instructions", ""),
        taxonomy={k: TaxonomyField(v.get("description"), tuple(v.get("values", [])), bool(v.get("vector_collapse")))
                  for k, v in data.get("taxonomy", {}).items()},
        auto_include=[AutoInclude(**rule) for rule in data.get("auto_include", [])],
        stats=data.get("stats", {}),
        embedding=data.get("embedding"),
        files=data.get("files", {}),
        metadata_version=data.get("metadata_version", METADATA_VERSION),
        extra=data.get("extra", {}),
    )
