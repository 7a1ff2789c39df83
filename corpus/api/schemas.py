"""Request and response schemas of the corpus REST routers, and the functions that fill them."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from django.urls import reverse
from ninja import Field, Schema

from common.api.pagination import Input
from corpus.models import BuildRun, Corpus
from corpus.reach import source_warnings
from retrieval.embeddings import PROVIDERS

# Choices come from the model and the provider registry, never typed out here.
CorpusKind = Literal[tuple(dict(Corpus.KIND_CHOICES))]  # type: ignore[valid-type]
BuildKind = Literal[tuple(dict(BuildRun.KIND_CHOICES))]  # type: ignore[valid-type]
BuildStatus = Literal[tuple(dict(BuildRun.STATUS_CHOICES))]  # type: ignore[valid-type]
ProviderName = Literal[tuple(sorted(PROVIDERS))]  # type: ignore[valid-type]
Severity = Literal["error", "warning"]

SECRET_KEY_RE = re.compile(r"key|secret|token|password", re.IGNORECASE)
REDACTED = "***"
FINDINGS_IN_STATUS = 50
LINK_TARGET_RE = re.compile(r"\s*\(to [^()]*\)")

NAME_HELP = "A slug: lowercase letters, digits, '-' and '_', starting with a letter or digit (e.g. payments-docs)."
SOURCE_HELP = ("Directory holding the corpus's markdown; must exist on the server and sit inside one of "
               "DOCSMCP_SOURCE_ROOTS (by default var/sources/ and the bundled sample).")
SETTINGS_HELP = ('Per-corpus build settings, e.g. {"embedding_provider": "hash", "keep_builds": 3, "strict": true} '
                 "(strict: any validation error fails the build instead of leaving the page out).")
ALIASES_HELP = "Other names clients may use for the corpus (slugs)."


GIT_HELP = ("A git repository to build from instead of source_dir (no password in it; credentials come from "
            "the server's environment). Must start with one of DOCSMCP_GIT_ALLOWED_URLS; file:// URLs must lie "
            "under DOCSMCP_SOURCE_ROOTS.")


class CorpusIn(Input):
    name: str = Field(..., min_length=1, max_length=100, description=NAME_HELP, examples=["payments-docs"])
    kind: CorpusKind = Field(Corpus.KIND_MARKDOWN, description="markdown: built from source_dir; "
                             "chunks: filled by store_chunks.")
    source_dir: str = Field("", max_length=1000, description=SOURCE_HELP)
    description: str = Field("", max_length=10_000)
    version: str = Field("", max_length=100)
    aliases: list[str] = Field(default_factory=list, max_length=50, description=ALIASES_HELP)
    settings: dict[str, Any] = Field(default_factory=dict, description=SETTINGS_HELP)
    git_url: str = Field("", max_length=1000, description=GIT_HELP)
    git_ref: str = Field("", max_length=255, description="With git_url: branch or tag (default: the remote's HEAD).")
    git_subdir: str = Field("", max_length=1000, description="With git_url: the corpus root inside the repository.")


class CorpusPatch(Input):
    """Omitted (or null) fields keep their value."""

    description: str | None = Field(None, max_length=10_000)
    version: str | None = Field(None, max_length=100)
    source_dir: str | None = Field(None, max_length=1000, description=SOURCE_HELP)
    aliases: list[str] | None = Field(None, max_length=50, description=ALIASES_HELP + " Replaces the list.")
    settings: dict[str, Any] | None = Field(None, description=SETTINGS_HELP + " Replaces the object.")
    git_url: str | None = Field(None, max_length=1000, description=GIT_HELP)
    git_ref: str | None = Field(None, max_length=255)
    git_subdir: str | None = Field(None, max_length=1000)


class ActiveBuildOut(Schema):
    build_id: str
    activated_at: datetime | None
    chunks: int | None
    url: str


class CorpusOut(Schema):
    name: str
    kind: str
    source_dir: str = Field(description="The directory the server builds from; empty for callers without the "
                                        "'build' scope (a path on the server is not theirs to know).")
    description: str
    version: str
    aliases: list[str]
    settings: dict[str, Any] = Field(description="Values under keys that look like secrets are redacted.")
    taxonomy: dict[str, list[str]] = Field(description="Filter keys and their values, from the active build.")
    active_build: ActiveBuildOut | None
    git_url: str
    git_ref: str
    git_subdir: str
    version_of: str | None = Field(description="The corpus this row is another version of (null: it is the corpus).")
    default_version: str = Field(description="The version its bare name serves (empty: this row's own).")
    revision: str = Field(description="The git commit (or directory content hash) the active build was made from.")
    latest_commit: str = Field(description="The git ref's newest commit as last seen by a fetch or push webhook.")
    stale: bool = Field(description="True when latest_commit differs from the active build's revision.")
    created_at: datetime
    updated_at: datetime
    url: str
    builds_url: str
    warnings: list[str] = Field(default_factory=list, description="What may keep builds from working, e.g. a "
                                "source directory that Celery workers on other hosts cannot read.")


class BuildIn(Input):
    kind: BuildKind = Field(BuildRun.KIND_INCREMENTAL, description="validate: check only; incremental: "
                            "re-embed changed chunks; full: rebuild everything.")
    embedding_provider: ProviderName | None = Field(None, description="Defaults to the corpus's setting, "
                                                    "then DOCSMCP_EMBEDDING_PROVIDER. Another provider becomes "
                                                    "the corpus's setting for later builds.")
    change_embeddings: bool = Field(False, description="Confirm a build that drops or replaces the active "
                                    "build's vectors (another provider or model); refused with 409 otherwise.")


class BuildListParams(Input):
    status: BuildStatus | None = Field(None, description="Only builds in this status.")


class FindingParams(Input):
    severity: Severity | None = Field(None, description="Only errors or only warnings.")


class ProgressOut(Schema):
    stage: str
    done: int
    total: int
    percent: int


class FindingOut(Schema):
    severity: str
    code: str
    file: str
    line: int | None
    message: str
    suggestion: str = ""


class BuildOut(Schema):
    build_id: str
    corpus: str
    kind: str
    status: str
    is_active: bool
    embedding_provider: str
    embedding: dict[str, Any] | None
    progress: ProgressOut
    cancel_requested: bool
    error: str
    error_count: int
    warning_count: int
    stats: dict[str, Any]
    timings: dict[str, Any]
    requested_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    activated_at: datetime | None
    url: str = Field(description="Poll this URL for status and progress.")
    findings_url: str


class BuildDetailOut(BuildOut):
    findings: list[FindingOut] = Field(description=f"The first {FINDINGS_IN_STATUS} findings, errors first; "
                                                   "all of them are at findings_url.")
    findings_truncated: bool


def redact(values: Any) -> Any:
    """Settings as shown to API readers: values under secret-looking keys are replaced."""
    if isinstance(values, dict):
        return {k: REDACTED if SECRET_KEY_RE.search(str(k)) and v else redact(v) for k, v in values.items()}
    if isinstance(values, list):
        return [redact(v) for v in values]
    return values


def unredact(incoming: Any, stored: Any) -> Any:
    """Settings sent back as read keep their secrets: a `***` where `redact` put one means "unchanged"."""
    if isinstance(incoming, dict) and isinstance(stored, dict):
        out = {}
        for key, value in incoming.items():
            if value == REDACTED and SECRET_KEY_RE.search(str(key)) and key in stored:
                out[key] = stored[key]
            else:
                out[key] = unredact(value, stored.get(key))
        return out
    if isinstance(incoming, list) and isinstance(stored, list) and len(incoming) == len(stored):
        return [unredact(new, old) for new, old in zip(incoming, stored, strict=True)]
    return incoming


def corpus_url(corpus: Corpus) -> str:
    return reverse("api:corpus", kwargs={"name": corpus.name})


def build_url(build: BuildRun) -> str:
    return reverse("api:build", kwargs={"name": build.corpus.name, "build_id": build.build_id})


def corpus_out(corpus: Corpus, *, show_source: bool = True) -> dict:
    """`show_source`: whether the caller may see where the server reads the corpus (a path on the server)."""
    build = corpus.active_build
    return {
        "name": corpus.name, "kind": corpus.kind, "source_dir": corpus.source_dir if show_source else "",
        "description": corpus.description, "version": corpus.version, "aliases": list(corpus.aliases or []),
        "settings": redact(corpus.settings or {}),
        "taxonomy": {t.key: list(t.values or []) for t in corpus.taxonomy.all()},
        "active_build": None if build is None else {
            "build_id": build.build_id, "activated_at": build.activated_at,
            "chunks": (build.stats or {}).get("total_chunks"), "url": build_url(build),
        },
        "git_url": corpus.git_url, "git_ref": corpus.git_ref, "git_subdir": corpus.git_subdir,
        "version_of": corpus.version_of.name if corpus.version_of_id else None,
        "default_version": corpus.default_version, "revision": corpus.built_revision,
        "latest_commit": corpus.latest_commit, "stale": corpus.is_stale,
        "created_at": corpus.created_at, "updated_at": corpus.updated_at,
        "url": corpus_url(corpus), "builds_url": reverse("api:builds", kwargs={"name": corpus.name}),
        "warnings": source_warnings(corpus),
    }


def build_out(build: BuildRun) -> dict:
    url = build_url(build)
    return {
        "build_id": build.build_id, "corpus": build.corpus.name, "kind": build.kind, "status": build.status,
        "is_active": build.is_active, "embedding_provider": build.embedding_provider,
        "embedding": build.embedding,
        "progress": {"stage": build.stage, "done": build.progress_done, "total": build.progress_total,
                     "percent": 100 if build.status == BuildRun.COMPLETE else build.progress_percent},
        "cancel_requested": build.cancel_requested, "error": build.error,
        "error_count": build.error_count, "warning_count": build.warning_count,
        "stats": build.stats or {}, "timings": build.timings or {}, "requested_by": build.requested_by,
        "created_at": build.created_at, "started_at": build.started_at, "finished_at": build.finished_at,
        "activated_at": build.activated_at, "url": url, "findings_url": f"{url}/findings",
    }


def public_finding(finding: dict) -> dict:
    """A finding as API callers see it: it names the file, not where a link points (a build stores
    "symlink points outside the corpus root (to /etc/passwd)" for the operator's `validate_docs`)."""
    message = finding.get("message")
    if not isinstance(message, str) or not LINK_TARGET_RE.search(message):
        return finding
    return {**finding, "message": LINK_TARGET_RE.sub("", message)}


def findings_sorted(build: BuildRun, severity: str | None = None) -> list[dict]:
    """Errors before warnings, each in the order validate reported them."""
    findings = [public_finding(f) for f in (build.findings or []) if severity is None or f.get("severity") == severity]
    return sorted(findings, key=lambda f: f.get("severity") != "error")


def build_detail_out(build: BuildRun) -> dict:
    findings = findings_sorted(build)
    return {**build_out(build), "findings": findings[:FINDINGS_IN_STATUS],
            "findings_truncated": len(findings) > FINDINGS_IN_STATUS}
