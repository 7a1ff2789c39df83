"""Writes of the corpus app: register corpora, validate, build, activate, cancel, prune.

The admin, the management commands, the Celery task and the REST API are thin callers of
these functions, so a build behaves the same whichever door it came through.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from retrieval.build import BuildRequest, build_index
from retrieval.embeddings import get_provider
from retrieval.errors import BuildCancelled, ValidationFailed
from retrieval.sources import validate_corpus

from .errors import (
    BuildInProgress,
    BuildStateConflict,
    CorpusError,
    CorpusExists,
    CorpusNotFound,
    SourceDirNotAllowed,
)
from .models import BuildRun, Corpus, TaxonomyKey

log = logging.getLogger("docsmcp.build")
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
STALE_AFTER = timedelta(minutes=15)
Progress = Callable[[str, int, int], None]


def corpus_dir(corpus: Corpus) -> Path:
    return Path(settings.DOCSMCP_INDEX_ROOT) / corpus.name


def check_source_dir(source_dir: str) -> Path:
    """A source directory must exist and, when DOCSMCP_SOURCE_ROOTS is set, sit inside one of them."""
    if not (source_dir or "").strip():
        raise CorpusError("source_dir is required: give the directory that holds the corpus's markdown")
    try:
        path = Path(source_dir).expanduser().resolve()
    except (ValueError, OSError, RuntimeError) as exc:  # NUL byte, name too long, unknown ~user
        raise CorpusError(f"source_dir {source_dir[:200]!r} is not a usable path ({exc.__class__.__name__}); "
                          "give an absolute directory path") from None
    roots = [Path(r).expanduser().resolve() for r in settings.DOCSMCP_SOURCE_ROOTS]
    if roots and not any(path.is_relative_to(root) for root in roots):
        raise SourceDirNotAllowed(f"source_dir {path} is outside the allowed roots "
                                  f"({', '.join(map(str, roots))}); set DOCSMCP_SOURCE_ROOTS or move the docs")
    try:
        is_dir = path.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        raise CorpusError(f"source_dir {path} does not exist or is not a directory")
    limit = Corpus._meta.get_field("source_dir").max_length
    if len(str(path)) > limit:
        raise CorpusError(f"source_dir {str(path)[:80]}... is longer than {limit} characters; use a shorter path")
    return path


def corpus_create(*, name: str, source_dir: str = "", description: str = "", version: str = "",
                  kind: str = Corpus.KIND_MARKDOWN, aliases: list[str] | None = None,
                  corpus_settings: dict | None = None) -> Corpus:
    if not SLUG_RE.match(name or ""):
        raise CorpusError(f"corpus name {name!r} is not a slug: use lowercase letters, digits, '-' and '_' "
                          "(e.g. 'payments-docs')")
    if kind not in dict(Corpus.KIND_CHOICES):
        raise CorpusError(f"unknown corpus kind {kind!r}; use one of {', '.join(dict(Corpus.KIND_CHOICES))}")
    if Corpus.objects.filter(name=name).exists() or _alias_owner(name) is not None:
        raise CorpusExists(f"corpus {name!r} already exists (as a name or an alias); choose another name")
    if kind == Corpus.KIND_MARKDOWN:
        source_dir = str(check_source_dir(source_dir))
    aliases = check_aliases(aliases or [], name=name)
    corpus_settings = check_corpus_settings(corpus_settings or {})
    return Corpus.objects.create(name=name, source_dir=source_dir, description=description, version=version,
                                 kind=kind, aliases=aliases, settings=corpus_settings)


def _alias_owner(alias: str, exclude_pk: int | None = None) -> Corpus | None:
    for corpus in Corpus.objects.exclude(aliases=[]).exclude(pk=exclude_pk):
        if alias in (corpus.aliases or []):
            return corpus
    return None


def check_aliases(aliases: list[str], *, name: str, exclude_pk: int | None = None) -> list[str]:
    """Aliases are slugs that name no other corpus; duplicates are dropped, order kept."""
    out: list[str] = []
    for alias in aliases:
        if not isinstance(alias, str) or not SLUG_RE.match(alias):
            raise CorpusError(f"alias {alias!r} is not a slug: use lowercase letters, digits, '-' and '_'")
        if alias == name or alias in out:
            continue
        if Corpus.objects.filter(name=alias).exclude(pk=exclude_pk).exists():
            raise CorpusExists(f"alias {alias!r} is already the name of another corpus; choose another alias")
        owner = _alias_owner(alias, exclude_pk)
        if owner is not None:
            raise CorpusExists(f"alias {alias!r} already belongs to corpus {owner.name!r}; choose another alias")
        out.append(alias)
    return out


def check_corpus_settings(values: dict) -> dict:
    """The settings a build reads are checked now rather than at build time."""
    if not isinstance(values, dict):
        raise CorpusError("settings must be a JSON object, e.g. {\"embedding_provider\": \"hash\"}")
    if "embedding_provider" in values:
        check_provider_name(values["embedding_provider"])
    if "keep_builds" in values:
        keep = values["keep_builds"]
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise CorpusError(f"settings.keep_builds must be a whole number >= 1, not {keep!r}")
    if "embedding_options" in values and not isinstance(values["embedding_options"], dict):
        raise CorpusError("settings.embedding_options must be a JSON object")
    return values


def corpus_update(*, corpus: Corpus, description: str | None = None, version: str | None = None,
                  source_dir: str | None = None, aliases: list[str] | None = None,
                  corpus_settings: dict | None = None) -> Corpus:
    """Change what a host may change after registration; None leaves a field as it is."""
    fields = []
    if description is not None:
        corpus.description = description
        fields.append("description")
    if version is not None:
        corpus.version = version
        fields.append("version")
    if source_dir is not None:
        if corpus.kind != Corpus.KIND_MARKDOWN:
            raise CorpusError(f"corpus {corpus.name!r} is fed by store_chunks; it has no source_dir")
        corpus.source_dir = str(check_source_dir(source_dir))
        fields.append("source_dir")
    if aliases is not None:
        corpus.aliases = check_aliases(aliases, name=corpus.name, exclude_pk=corpus.pk)
        fields.append("aliases")
    if corpus_settings is not None:
        corpus.settings = check_corpus_settings(corpus_settings)
        fields.append("settings")
    if fields:
        corpus.save(update_fields=[*fields, "updated_at"])
    return corpus


def corpus_ensure(*, name: str, source_dir: str | None) -> Corpus:
    """`build_index --corpus NAME --source DIR` registers the corpus on first use."""
    corpus = Corpus.objects.filter(name=name).first()
    if corpus is None:
        if not source_dir:
            raise CorpusNotFound(f"corpus {name!r} does not exist; pass --source DIR to register it")
        return corpus_create(name=name, source_dir=source_dir)
    if source_dir and str(check_source_dir(source_dir)) != corpus.source_dir:
        corpus.source_dir = str(check_source_dir(source_dir))
        corpus.save(update_fields=["source_dir", "updated_at"])
    return corpus


def corpus_delete(*, corpus: Corpus) -> None:
    if corpus.builds.filter(status__in=BuildRun.IN_FLIGHT).exists():
        raise BuildInProgress(f"corpus {corpus.name!r} has a build in progress; cancel it before deleting")
    path = corpus_dir(corpus)
    corpus.delete()
    shutil.rmtree(path, ignore_errors=True)


def _new_build_id() -> str:
    return f"{timezone.now():%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def _fail_stale_builds(corpus: Corpus) -> None:
    """A worker that died mid-build leaves a 'running' row; after a quiet period it no longer blocks."""
    cutoff = timezone.now() - STALE_AFTER
    for build in corpus.builds.filter(status__in=BuildRun.IN_FLIGHT):
        last = build.heartbeat_at or build.created_at
        if last < cutoff:
            build.status, build.error = BuildRun.FAILED, "worker stopped reporting progress; marked failed"
            build.finished_at = timezone.now()
            build.save(update_fields=["status", "error", "finished_at"])


def build_request(*, corpus: Corpus, kind: str = BuildRun.KIND_INCREMENTAL, embedding_provider: str | None = None,
                  requested_by: str = "") -> BuildRun:
    """Reserve the corpus for one build; a second request while one is in flight is refused."""
    if kind not in dict(BuildRun.KIND_CHOICES):
        raise CorpusError(f"unknown build kind {kind!r}; use one of {', '.join(dict(BuildRun.KIND_CHOICES))}")
    if corpus.kind != Corpus.KIND_MARKDOWN:
        raise CorpusError(f"corpus {corpus.name!r} is fed by store_chunks; it has no markdown to build")
    provider = embedding_provider or corpus.settings.get("embedding_provider") or settings.DOCSMCP_EMBEDDING_PROVIDER
    check_provider_name(provider)
    _fail_stale_builds(corpus)
    try:
        with transaction.atomic():
            return BuildRun.objects.create(corpus=corpus, build_id=_new_build_id(), kind=kind,
                                           embedding_provider=provider, requested_by=requested_by)
    except IntegrityError as exc:
        running = corpus.builds.filter(status__in=BuildRun.IN_FLIGHT).first()
        raise BuildInProgress(f"corpus {corpus.name!r} already has a build in progress "
                              f"({running.build_id if running else 'unknown'}); wait for it to finish or cancel it") from exc


def check_provider_name(name: str) -> None:
    from retrieval.embeddings import PROVIDERS

    if name not in PROVIDERS:
        raise CorpusError(f"unknown embedding provider {name!r}; choose one of {', '.join(sorted(PROVIDERS))}")


class _ProgressWriter:
    """Saves progress to the BuildRun at most twice a second, and checks for cancellation."""

    def __init__(self, build: BuildRun, echo: Progress | None):
        self.build, self.echo, self.last = build, echo, 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.echo:
            self.echo(stage, done, total)
        # kept on the instance too, so the build's final save() does not reset the progress it reached
        self.build.stage, self.build.progress_done, self.build.progress_total = stage, done, total
        now = time.monotonic()
        if now - self.last < 0.5 and done < total:
            return
        self.last = now
        BuildRun.objects.filter(pk=self.build.pk).update(stage=stage, progress_done=done, progress_total=total,
                                                         heartbeat_at=timezone.now())

    def cancelled(self) -> bool:
        return BuildRun.objects.filter(pk=self.build.pk, cancel_requested=True).exists()


def provider_for(name: str, corpus: Corpus | None = None):
    """The embedding provider a corpus builds and queries with; OpenAI credentials come from settings."""
    options = dict((corpus.settings.get("embedding_options") if corpus else None) or {})
    if name == "openai":
        for key, value in (("base_url", settings.OPENAI_BASE_URL), ("api_key", settings.OPENAI_API_KEY)):
            if value:
                options.setdefault(key, value)
    return get_provider(name, **options)


def build_execute(*, build: BuildRun, echo: Progress | None = None) -> BuildRun:
    """Run a reserved build to the end: validate, build, activate. Never leaves it 'running'."""
    corpus = build.corpus
    writer = _ProgressWriter(build, echo)
    now = timezone.now()
    # Claim the row atomically: a task that arrives after its build was cancelled, marked stale or
    # already run (a redelivered message) must not build.
    if not BuildRun.objects.filter(pk=build.pk, status=BuildRun.QUEUED).update(
            status=BuildRun.RUNNING, started_at=now, heartbeat_at=now):
        build.refresh_from_db()
        return build
    build.status, build.started_at, build.heartbeat_at = BuildRun.RUNNING, now, now
    try:
        if build.kind == BuildRun.KIND_VALIDATE:
            _scan, _results, findings = validate_corpus(Path(corpus.source_dir),
                                                        progress=lambda d, t: writer("validate", d, t))
            build.findings = [f.as_dict() for f in findings]
            build.stats = {"total_files": len(_results), "total_chunks": sum(len(r.chunks) for r in _results)}
            errors = [f for f in findings if f.severity == "error"]
            build.status = BuildRun.FAILED if errors else BuildRun.COMPLETE
            build.error = f"validation found {len(errors)} error(s)" if errors else ""
        else:
            _run_build(build, corpus, writer)
    except ValidationFailed as exc:
        build.status, build.error = BuildRun.FAILED, str(exc)
        build.findings = [f.as_dict() for f in exc.findings]
    except BuildCancelled as exc:
        build.status, build.error = BuildRun.CANCELLED, str(exc)
    except BaseException as exc:  # interrupted (Ctrl-C, SIGTERM) or crashed: the previous index keeps serving
        build.status = BuildRun.FAILED
        build.error = f"{type(exc).__name__}: {exc}" if str(exc) else f"interrupted ({type(exc).__name__})"
        _finish(build)
        if isinstance(exc, Exception):
            log.exception("build %s failed", build.build_id)
        raise
    _finish(build)
    return build


def _finish(build: BuildRun) -> None:
    build.finished_at = timezone.now()
    build.save()


def _run_build(build: BuildRun, corpus: Corpus, writer: _ProgressWriter) -> None:
    root = corpus_dir(corpus)
    out_dir = root / "builds" / build.build_id
    previous = corpus.active_build
    previous_dir = Path(previous.index_path) if previous and previous.index_path else None
    provider = provider_for(build.embedding_provider, corpus)
    in_daemon = multiprocessing.current_process().daemon  # Celery prefork children cannot fork pools
    request = BuildRequest(
        source_dir=Path(corpus.source_dir), out_dir=out_dir, build_id=build.build_id, corpus=corpus.name,
        provider=provider, description=corpus.description, previous_dir=previous_dir,
        full=build.kind == BuildRun.KIND_FULL, cache_dir=root / "embedding-cache",
        workers=1 if in_daemon else (os.cpu_count() or 1),
    )
    result = build_index(request, progress=writer, cancelled=writer.cancelled)
    build.index_path = str(result.path)
    build.stats, build.timings = result.stats, result.timings
    build.findings = [f.as_dict() for f in result.findings]
    build.embedding = result.metadata.embedding
    build.status, build.finished_at = BuildRun.COMPLETE, timezone.now()
    with transaction.atomic():  # whoever sees "complete" also sees it active
        build.save()
        build_activate(build=build)
    builds_prune(corpus=corpus)


def build_activate(*, build: BuildRun) -> BuildRun:
    """Flip the corpus's active pointer in one transaction; servers pick it up on their next request."""
    from retrieval.metadata import read_metadata

    if build.status != BuildRun.COMPLETE or not build.index_path or not Path(build.index_path).exists():
        raise BuildStateConflict(f"build {build.build_id} is not a complete build with an index on disk; "
                            "only complete builds can be activated")
    metadata = read_metadata(Path(build.index_path))
    with transaction.atomic():
        corpus = Corpus.objects.select_for_update().get(pk=build.corpus_id)
        corpus.active_build = build
        if not corpus.description and metadata.corpus_description != corpus.name:
            corpus.description = metadata.corpus_description
        corpus.save(update_fields=["active_build", "description", "updated_at"])
        corpus.taxonomy.exclude(key__in=list(metadata.taxonomy)).delete()
        for key, field in metadata.taxonomy.items():
            TaxonomyKey.objects.update_or_create(corpus=corpus, key=key, defaults={
                "description": field.description or "", "values": list(field.values),
                "vector_collapse": field.vector_collapse})
        BuildRun.objects.filter(pk=build.pk).update(activated_at=timezone.now())
    from .selectors import forget_active

    forget_active(corpus.name)
    build.refresh_from_db()
    return build


def build_cancel(*, build: BuildRun) -> BuildRun:
    if build.status == BuildRun.QUEUED:
        build.status, build.error, build.finished_at = BuildRun.CANCELLED, "cancelled before it started", timezone.now()
        build.save(update_fields=["status", "error", "finished_at"])
    elif build.status == BuildRun.RUNNING:
        BuildRun.objects.filter(pk=build.pk).update(cancel_requested=True)
        build.refresh_from_db()
    else:
        raise BuildStateConflict(f"build {build.build_id} is {build.status}; only queued or running builds "
                                 "can be cancelled")
    return build


def builds_prune(*, corpus: Corpus, keep: int | None = None) -> list[str]:
    """Delete index directories of old complete builds, never the active one; returns deleted build IDs."""
    keep = keep if keep is not None else int(corpus.settings.get("keep_builds", settings.DOCSMCP_KEEP_BUILDS))
    corpus.refresh_from_db()
    complete = list(corpus.builds.filter(status=BuildRun.COMPLETE).exclude(index_path="").order_by("-created_at"))
    removed = []
    for build in complete[keep:]:
        if build.pk == corpus.active_build_id:
            continue
        shutil.rmtree(build.index_path, ignore_errors=True)
        build.index_path = ""
        build.save(update_fields=["index_path"])
        removed.append(build.build_id)
    return removed


def build_start(*, corpus: Corpus, kind: str = BuildRun.KIND_INCREMENTAL, embedding_provider: str | None = None,
                requested_by: str = "") -> BuildRun:
    """Reserve and dispatch to Celery (inline when no broker is configured).

    A build that fails reports it on its BuildRun (status, error, findings), never by raising
    into the caller: with no broker the build runs inside this call, and the admin or REST
    request that asked for it still answers normally.
    """
    build = build_request(corpus=corpus, kind=kind, embedding_provider=embedding_provider, requested_by=requested_by)
    transaction.on_commit(lambda: _dispatch(build.pk))
    return build


def _dispatch(build_pk: int) -> None:
    from .tasks import run_build

    try:
        run_build.delay(build_pk)
    except Exception as exc:
        log.exception("build %s failed or could not be queued", build_pk)
        # Still queued means it never started (broker unreachable): fail it so the corpus is not blocked.
        BuildRun.objects.filter(pk=build_pk, status=BuildRun.QUEUED).update(
            status=BuildRun.FAILED, error=f"could not start the build: {type(exc).__name__}: {exc}",
            finished_at=timezone.now())
