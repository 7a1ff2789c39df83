"""Writes of the corpus app: register corpora, validate, build, activate, cancel, prune.

The admin, the management commands, the Celery task and the REST API are thin callers of
these functions, so a build behaves the same whichever door it came through.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from retrieval import storage

from .access import visible
from .errors import (
    BuildInProgress,
    BuildStateConflict,
    CorpusError,
    CorpusExists,
    CorpusNotAllowed,
    EmbeddingChangeRefused,
    SourceDirNotAllowed,
    TaskQueueUnavailable,
)
from .execution import corpus_dir
from .gitsource import caches_remove
from .models import BuildRun, Corpus
from .providers import check_embedding_options, check_provider_name, corpus_embedding
from .queue import enqueue
from .reaping import expire_builds

log = logging.getLogger("docsmcp.build")
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")


def check_source_dir(source_dir: str, *, any_root: bool = False) -> Path:
    """A source directory must exist and sit inside one of DOCSMCP_SOURCE_ROOTS.

    `any_root` is for the operator's own command line (`build_index --source`): whoever runs it can
    read the files anyway. The REST API and the admin never pass it, so a caller cannot make the
    server read (and report file names and lines from) a directory the operator did not allow.
    """
    if not (source_dir or "").strip():
        raise CorpusError("source_dir is required: give the directory that holds the corpus's markdown")
    try:
        path = Path(source_dir).expanduser().resolve()
    except (ValueError, OSError, RuntimeError) as exc:  # NUL byte, name too long, unknown ~user
        raise CorpusError(f"source_dir {source_dir[:200]!r} is not a usable path ({exc.__class__.__name__}); "
                          "give an absolute directory path") from None
    roots = [Path(r).expanduser().resolve() for r in settings.DOCSMCP_SOURCE_ROOTS]
    if not any_root and not any(path.is_relative_to(root) for root in roots):
        raise SourceDirNotAllowed(f"source_dir {path} is outside the allowed roots "
                                  f"({', '.join(map(str, roots)) or 'none'}); move the docs under one of them, "
                                  "add a root to DOCSMCP_SOURCE_ROOTS, or register the corpus with "
                                  "`manage.py build_index --source DIR`")
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
                  corpus_settings: dict | None = None, any_root: bool = False, git: bool = False) -> Corpus:
    """`git`: the markdown comes from a git repository the caller sets next, not from `source_dir`."""
    if not SLUG_RE.match(name or ""):
        raise CorpusError(f"corpus name {name!r} is not a slug: use lowercase letters, digits, '-' and '_' "
                          "(e.g. 'payments-docs')")
    if kind not in dict(Corpus.KIND_CHOICES):
        raise CorpusError(f"unknown corpus kind {kind!r}; use one of {', '.join(dict(Corpus.KIND_CHOICES))}")
    if not visible(name):
        raise CorpusNotAllowed(f"this API key is limited to other corpora and cannot create {name!r}; use a key "
                               "without a corpus limit, or one that lists this name")
    if Corpus.objects.filter(name=name).exists() or _alias_owner(name) is not None:
        raise CorpusExists(f"corpus {name!r} already exists (as a name or an alias); choose another name")
    if kind == Corpus.KIND_MARKDOWN and not git:
        source_dir = str(check_source_dir(source_dir, any_root=any_root))
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
    provider = values.get("embedding_provider") or settings.DOCSMCP_EMBEDDING_PROVIDER
    check_provider_name(provider)
    if "keep_builds" in values:
        keep = values["keep_builds"]
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise CorpusError(f"settings.keep_builds must be a whole number >= 1, not {keep!r}")
    if "strict" in values and not isinstance(values["strict"], bool):
        raise CorpusError(f"settings.strict must be true or false, not {values['strict']!r}")
    if "embedding_options" in values:
        check_embedding_options(provider, values["embedding_options"])
    if "coverage" in values:
        check_coverage_setting(values["coverage"])
    return values


def check_coverage_setting(value: object) -> None:
    """settings.coverage: the scores at which this corpus's searches say `covered` and `partial`."""
    example = '{"covered": 0.5, "partial": 0.3}'
    if not isinstance(value, dict) or set(value) != {"covered", "partial"}:
        raise CorpusError(f"settings.coverage must be an object with exactly the keys covered and partial, e.g. "
                          f"{example}; got {value!r}")
    for key in ("covered", "partial"):
        number = value[key]
        if isinstance(number, bool) or not isinstance(number, int | float) or not 0.0 <= number <= 1.0:
            raise CorpusError(f"settings.coverage.{key} must be a number from 0 to 1, e.g. {example}; got {number!r}")
    if value["partial"] > value["covered"]:
        raise CorpusError(f"settings.coverage.partial ({value['partial']}) must not exceed settings.coverage.covered "
                          f"({value['covered']}): a score is partial from `partial` up to `covered`")


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


def corpus_delete(*, corpus: Corpus) -> None:
    """Deletes the corpus with its files; deleting the row users name deletes every version of it."""
    rows = [corpus, *corpus.versions.all()]
    if BuildRun.objects.filter(corpus__in=rows, status__in=BuildRun.IN_FLIGHT).exists():
        raise BuildInProgress(f"corpus {corpus.name!r} has a build in progress; cancel it before deleting")
    paths = [corpus_dir(row) for row in rows]
    git_urls = [row.git_url for row in rows if row.git_url]
    if corpus.version_of_id and corpus.version_of.default_version == corpus.version:
        Corpus.objects.filter(pk=corpus.version_of_id).update(default_version="")
    corpus.delete()
    for path in paths:
        storage.delete_tree(path)
    caches_remove(git_urls)


def _new_build_id() -> str:
    return f"{timezone.now():%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def lease_expired(build: BuildRun) -> bool:
    """A running build whose worker has not renewed its lease is orphaned: that worker stopped."""
    lease = timedelta(seconds=settings.DOCSMCP_BUILD_LEASE_SECONDS)
    return (build.status == BuildRun.RUNNING
            and (build.heartbeat_at or build.started_at or build.created_at) < timezone.now() - lease)


def _embedding_change(corpus: Corpus, provider: str, options: dict) -> str:
    """What a build with this provider would do to the active build's vectors ('' when nothing).

    Adding vectors to a full-text-only corpus loses nothing, so it needs no confirmation."""
    active = corpus.active_build
    if active is None or active.status != BuildRun.COMPLETE or not active.embedding:
        return ""
    spec = active.embedding
    before = spec.get("provider")
    if before != provider:
        now = "drop its vectors (full-text only)" if provider == "none" else f"replace them with {provider!r} vectors"
        return f"the active build {active.build_id} has {before!r} vectors ({spec.get('model')}); this build would {now}"
    model = options.get("model")
    if model and spec.get("model") and model != spec["model"]:
        return (f"the active build {active.build_id} has {before!r} vectors of model {spec['model']!r}; "
                f"this build would replace them with model {model!r}")
    return ""


def build_request(*, corpus: Corpus, kind: str = BuildRun.KIND_INCREMENTAL, embedding_provider: str | None = None,
                  change_embeddings: bool = False, requested_by: str = "") -> BuildRun:
    """Reserve the corpus for one build; a second request while one is in flight is refused.

    The corpus's settings say how it is embedded. Naming another provider here changes that setting
    for good; a build that would drop or replace the active build's vectors needs `change_embeddings`.
    """
    if kind not in dict(BuildRun.KIND_CHOICES):
        raise CorpusError(f"unknown build kind {kind!r}; use one of {', '.join(dict(BuildRun.KIND_CHOICES))}")
    if corpus.kind != Corpus.KIND_MARKDOWN:
        raise CorpusError(f"corpus {corpus.name!r} is fed by store_chunks; it has no markdown to build")
    provider, options = corpus_embedding(corpus)
    if embedding_provider and embedding_provider != provider:
        check_provider_name(embedding_provider)
        provider, options = embedding_provider, {}  # the old provider's options mean nothing to the new one
    check_provider_name(provider)
    check_embedding_options(provider, options)
    change = "" if kind == BuildRun.KIND_VALIDATE else _embedding_change(corpus, provider, options)
    if change and not change_embeddings:
        raise EmbeddingChangeRefused(f"corpus {corpus.name!r}: {change}. Searches would lose or change their "
                                     "semantic leg; confirm with --change-embeddings (CLI), "
                                     "\"change_embeddings\": true (REST) or the admin's confirmation")
    expire_builds(corpus)
    try:
        with transaction.atomic():
            if kind != BuildRun.KIND_VALIDATE and corpus.settings.get("embedding_provider") != provider:
                corpus.settings = {**corpus.settings, "embedding_provider": provider, "embedding_options": options}
                corpus.save(update_fields=["settings", "updated_at"])
            return BuildRun.objects.create(corpus=corpus, build_id=_new_build_id(), kind=kind,
                                           embedding_provider=provider, requested_by=requested_by)
    except IntegrityError as exc:
        running = corpus.builds.filter(status__in=BuildRun.IN_FLIGHT).first()
        raise BuildInProgress(f"corpus {corpus.name!r} already has a build in progress "
                              f"({running.build_id if running else 'unknown'}); wait for it to finish or cancel it") from exc


def build_cancel(*, build: BuildRun) -> BuildRun:
    """A queued or orphaned build is cancelled at once; a running one is asked to stop at its next batch."""
    if build.status == BuildRun.QUEUED or lease_expired(build):
        reason = "cancelled before it started" if build.status == BuildRun.QUEUED else \
            "cancelled; its worker had stopped"
        BuildRun.objects.filter(pk=build.pk, status=build.status).update(
            status=BuildRun.CANCELLED, error=reason, finished_at=timezone.now())
        build.refresh_from_db()
        if build.status == BuildRun.CANCELLED:
            return build
    if build.status == BuildRun.RUNNING:
        BuildRun.objects.filter(pk=build.pk).update(cancel_requested=True)
        build.refresh_from_db()
        return build
    raise BuildStateConflict(f"build {build.build_id} is {build.status}; only queued or running builds "
                             "can be cancelled")


def build_start(*, corpus: Corpus, kind: str = BuildRun.KIND_INCREMENTAL, embedding_provider: str | None = None,
                change_embeddings: bool = False, requested_by: str = "") -> BuildRun:
    """Reserve and hand to a Celery worker; the caller (an admin or REST request) returns at once.

    A build that fails reports it on its BuildRun (status, error, findings), never by raising
    into the caller. A broker that cannot take the task fails the reserved build (so the corpus
    is not blocked) and raises TaskQueueUnavailable.
    """
    build = build_request(corpus=corpus, kind=kind, embedding_provider=embedding_provider,
                          change_embeddings=change_embeddings, requested_by=requested_by)
    transaction.on_commit(lambda: _dispatch(build.pk))
    return build


def _dispatch(build_pk: int) -> None:
    try:
        enqueue("corpus.run_build", build_pk)
    except TaskQueueUnavailable as exc:
        BuildRun.objects.filter(pk=build_pk, status=BuildRun.QUEUED).update(
            status=BuildRun.FAILED, error=f"could not start the build: {exc}", finished_at=timezone.now())
        raise
    except Exception:
        log.exception("build %s failed", build_pk)  # run inline (CELERY_TASK_ALWAYS_EAGER): reported on its row
