"""The worker's side of a build: run a reserved build to the end, activate it, prune old ones.

`corpus.services` reserves and queues builds; a Celery task (or the command, inline) calls
`build_execute` here. Activation and pruning live here too because a finished build does both.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from retrieval import storage
from retrieval.errors import BuildCancelled, GitError, StorageUnavailable, ValidationFailed
from retrieval.format.metadata import METADATA_FILE, read_metadata
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.pages import FileResult
from retrieval.ingest.reuse import validate_changed
from retrieval.ingest.scan import CorpusScan, Finding
from retrieval.storage import Location

from .errors import BuildStateConflict, CorpusError, SourceDirNotAllowed
from .gitsource import read_source
from .models import BuildRun, Corpus, TaxonomyKey
from .providers import provider_for

log = logging.getLogger("docsmcp.build")
Progress = Callable[[str, int, int], None]
CANCEL_CHECK_SECONDS = 0.5


def corpus_dir(corpus: Corpus) -> Location:
    """`<index root>/<corpus>`: a local directory or an object-store prefix (retrieval/storage)."""
    return storage.join(storage.as_location(settings.DOCSMCP_INDEX_ROOT), corpus.name)


class _Lease:
    """Renews the build's heartbeat from a background thread for as long as the build runs.

    Progress callbacks alone would leave long silent steps (a big index, a slow embedding API)
    looking like a dead worker.
    """

    def __init__(self, build: BuildRun):
        self.build_pk = build.pk
        self.interval = max(settings.DOCSMCP_BUILD_LEASE_SECONDS / 3, 0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"build-lease-{build.pk}", daemon=True)

    def __enter__(self) -> _Lease:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    self.renew()
                except Exception:  # a database hiccup: try again next time; a lapsed lease fails the build
                    log.warning("build %s: could not renew its lease", self.build_pk, exc_info=True)
                    close_old_connections()
        finally:
            connection.close()

    def renew(self) -> None:
        BuildRun.objects.filter(pk=self.build_pk, status=BuildRun.RUNNING).update(heartbeat_at=timezone.now())


class _ProgressWriter:
    """Saves progress to the BuildRun at most twice a second, and checks for cancellation."""

    def __init__(self, build: BuildRun, echo: Progress | None):
        self.build, self.echo, self.last = build, echo, 0.0
        self.last_cancel_check, self.cancel_requested, self.checked_stage = float("-inf"), False, None

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
        """Asks the database at most every CANCEL_CHECK_SECONDS within a stage (the build asks once
        per file), and always once a new stage has begun."""
        now = time.monotonic()
        if now - self.last_cancel_check >= CANCEL_CHECK_SECONDS or self.build.stage != self.checked_stage:
            self.last_cancel_check, self.checked_stage = now, self.build.stage
            self.cancel_requested = BuildRun.objects.filter(pk=self.build.pk, cancel_requested=True).exists()
        return self.cancel_requested


def build_execute(*, build: BuildRun, echo: Progress | None = None, strict: bool | None = None) -> BuildRun:
    """Run a reserved build to the end: validate, build, activate. Never leaves it 'running'.

    `strict` (default: the corpus's `strict` setting, else off) fails the build on any error; otherwise
    a page with an error is left out and the rest is built."""
    corpus = build.corpus
    now = timezone.now()
    # Claim the row atomically: a task that arrives after its build was cancelled, marked stale or
    # already run (a redelivered message) must not build.
    if not BuildRun.objects.filter(pk=build.pk, status=BuildRun.QUEUED).update(
            status=BuildRun.RUNNING, started_at=now, heartbeat_at=now):
        build.refresh_from_db()
        return build
    build.status, build.started_at, build.heartbeat_at = BuildRun.RUNNING, now, now
    with _Lease(build):
        return _execute(build, corpus, _ProgressWriter(build, echo), strict)


def source_root(corpus: Corpus) -> Path:
    """The corpus's source directory as it resolves now, each time it is read.

    DOCSMCP_SOURCE_ROOTS was checked when the directory was registered, but a link put in its place
    since (or in place of a parent) would lead a build, and an approved fix, elsewhere. So it must
    still resolve inside the roots, or to exactly the directory recorded: one the operator
    registered outside the roots (`build_index --source`) keeps building while it is itself.
    """
    if not corpus.source_dir:
        raise CorpusError(f"corpus {corpus.name!r} has no source directory")
    recorded = Path(corpus.source_dir)
    try:
        resolved = recorded.resolve(strict=True)
        is_dir = resolved.is_dir()
    except (OSError, RuntimeError):  # missing, a loop of links, unreadable
        is_dir = False
    if not is_dir:
        raise CorpusError(f"source_dir {recorded} of corpus {corpus.name!r} does not exist or is not a directory")
    roots = [Path(r).expanduser().resolve() for r in settings.DOCSMCP_SOURCE_ROOTS]
    if resolved == recorded or any(resolved.is_relative_to(root) for root in roots):
        return resolved
    log.warning("corpus %s: source_dir %s now resolves to %s, outside DOCSMCP_SOURCE_ROOTS; refused",
                corpus.name, recorded, resolved)
    raise SourceDirNotAllowed(f"source_dir {recorded} of corpus {corpus.name!r} no longer resolves to itself or "
                              "inside DOCSMCP_SOURCE_ROOTS (a symbolic link now leads elsewhere), so nothing was "
                              "read; put the directory back, or register it again with `manage.py build_index "
                              f"--corpus {corpus.name} --source DIR`")


def _execute(build: BuildRun, corpus: Corpus, writer: _ProgressWriter, strict: bool | None = None) -> BuildRun:
    try:
        if build.kind == BuildRun.KIND_VALIDATE:
            snapshot = read_source(corpus) if corpus.git_url else None
            root = Path(corpus.source_dir) if snapshot else source_root(corpus)
            findings, results = validate_source(root, scan=snapshot and snapshot.scan,
                                                previous=active_index_path(corpus),
                                                progress=lambda d, t: writer("validate", d, t))
            build.findings = [f.as_dict() for f in findings]
            build.stats = {"total_files": len(results), "total_chunks": sum(r.chunk_count for r in results)}
            errors = [f for f in findings if f.severity == "error"]
            build.status = BuildRun.FAILED if errors else BuildRun.COMPLETE
            build.error = f"validation found {len(errors)} error(s)" if errors else ""
        else:
            _run_build(build, corpus, writer, corpus.settings.get("strict", False) if strict is None else strict)
    except ValidationFailed as exc:
        build.status, build.error = BuildRun.FAILED, str(exc)
        build.findings = [f.as_dict() for f in exc.findings]
    except BuildCancelled as exc:
        build.status, build.error = BuildRun.CANCELLED, str(exc)
    except (GitError, CorpusError, StorageUnavailable) as exc:  # the source could not be read, or the index root
        # cannot take a build: say why, keep serving the last build
        build.status, build.error = BuildRun.FAILED, str(exc)
    except BaseException as exc:  # interrupted (Ctrl-C, SIGTERM) or crashed: the previous index keeps serving
        build.status = BuildRun.FAILED
        build.error = f"{type(exc).__name__}: {exc}" if str(exc) else f"interrupted ({type(exc).__name__})"
        _finish(build)
        if isinstance(exc, Exception):
            log.exception("build %s failed", build.build_id)
        raise
    _finish(build)
    return build


def validate_source(root: Path, *, previous: Location | None, scan: CorpusScan | None = None,
                    progress: Callable[[int, int], None] | None = None) -> tuple[list[Finding], list[FileResult]]:
    """Every finding of the corpus at `root` (or of `scan`, a tree already read), and each file's result; the
    files unchanged since the build at `previous` keep the findings it recorded, unparsed."""
    scan = scan or scan_corpus(root, max_file_bytes=settings.DOCSMCP_MAX_FILE_BYTES)
    results = validate_changed(scan, previous, workers=_workers(), progress=progress)
    return [*scan.findings, *(f for r in results for f in r.findings)], results


def active_index_path(corpus: Corpus | None) -> Location | None:
    """Where the corpus's active build lives, for reusing what it recorded; None without one."""
    build = corpus.active_build if corpus else None
    return storage.as_location(build.index_path) if build and build.index_path else None


def _finish(build: BuildRun) -> None:
    build.finished_at = timezone.now()
    build.save()


def _run_build(build: BuildRun, corpus: Corpus, writer: _ProgressWriter, strict: bool) -> None:
    from retrieval.ingest.build import BuildRequest, build_index  # Arrow and LanceDB: only a build loads them

    root = corpus_dir(corpus)
    out_dir = storage.join(root, "builds", build.build_id)
    previous = corpus.active_build or sibling_build(corpus)
    previous_dir = storage.as_location(previous.index_path) if previous and previous.index_path else None
    provider = provider_for(build.embedding_provider, corpus)
    snapshot = None
    if corpus.git_url:
        writer("fetch", 0, 1)
        built = (corpus.active_build.stats or {}).get("source_commit") or "" if corpus.active_build else ""
        snapshot = read_source(corpus, built)
        writer("fetch", 1, 1)
    source_dir = Path(corpus.source_dir) if snapshot else source_root(corpus)
    request = BuildRequest(
        source_dir=source_dir, out_dir=out_dir, build_id=build.build_id, corpus=corpus.name,
        provider=provider, description=corpus.description, previous_dir=previous_dir,
        full=build.kind == BuildRun.KIND_FULL, cache_dir=storage.join(corpus_dir(corpus.family), "embedding-cache"),
        workers=_workers(), scan=snapshot and snapshot.scan, revision=snapshot.revision if snapshot else "",
        version=corpus.version,
        changed=frozenset(c.path for c in snapshot.changes) if snapshot and snapshot.changes is not None else None,
        max_file_bytes=settings.DOCSMCP_MAX_FILE_BYTES, strict=strict,
    )
    result = build_index(request, progress=writer, cancelled=writer.cancelled)
    build.index_path = str(result.path)
    build.stats, build.timings = result.stats, result.timings
    if snapshot is not None and snapshot.changes is not None:
        build.stats["git_changed_files"] = len(snapshot.changes)
    build.findings = [f.as_dict() for f in result.findings]
    build.embedding = result.metadata.embedding
    build.status, build.finished_at = BuildRun.COMPLETE, timezone.now()
    with transaction.atomic():  # whoever sees "complete" also sees it active
        build.save()
        build_activate(build=build)
    builds_prune(corpus=corpus)


def sibling_build(corpus: Corpus) -> BuildRun | None:
    """For a version's first build: the active build of another version of the same corpus (the
    default first). Files byte-identical between versions then reuse its chunks and vectors, and
    its tables are hard-linked rather than copied."""
    family = corpus.family
    members = [family, *family.versions.all()]
    members.sort(key=lambda c: (c.version != (family.default_version or family.version), c.pk))
    for member in members:
        if member.pk != corpus.pk and member.active_build_id and member.active_build.index_path:
            return member.active_build
    return None


def _workers() -> int:
    """Parse in a process pool, except in a daemonic process (a Celery prefork child), which cannot have children."""
    return 1 if multiprocessing.current_process().daemon else (os.cpu_count() or 1)


def build_activate(*, build: BuildRun) -> BuildRun:
    """Flip the corpus's active pointer in one transaction; servers pick it up on their next request."""
    # metadata.json is written last: without it a build's files (an object store has no rename to hide
    # them behind) are not a complete build, whatever its row says.
    if (build.status != BuildRun.COMPLETE or not build.index_path
            or not storage.exists(storage.join(build.index_path, METADATA_FILE))):
        raise BuildStateConflict(f"build {build.build_id} is not a complete build with an index on disk; "
                            "only complete builds can be activated")
    metadata = read_metadata(storage.as_location(build.index_path))
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
    serving = sys.modules.get("corpus.serving")
    if serving is not None:  # a process that never served (build_index) has no active pointers cached to drop
        serving.forget_active(corpus.name)
    build.refresh_from_db()
    return build


def builds_prune(*, corpus: Corpus, keep: int | None = None) -> list[str]:
    """Free the disk of builds nobody will serve; returns the build IDs (or directory names) removed.

    Kept: the active build, any build in flight (its `.partial` too) and the newest `keep` complete
    builds. Removed: older complete builds, and directories no kept build owns: the `.partial` of a
    build whose worker died, a build finished on disk but never recorded complete.
    """
    keep = keep if keep is not None else int(corpus.settings.get("keep_builds", settings.DOCSMCP_KEEP_BUILDS))
    corpus.refresh_from_db()
    complete = list(corpus.builds.filter(status=BuildRun.COMPLETE).exclude(index_path="").order_by("-created_at"))
    removed = []
    for build in complete[keep:]:
        if build.pk == corpus.active_build_id:
            continue
        storage.delete_tree(build.index_path)
        build.index_path = ""
        build.save(update_fields=["index_path"])
        removed.append(build.build_id)
    kept = {storage.name_of(b.index_path) for b in corpus.builds.exclude(index_path="")}
    kept |= set(corpus.builds.filter(status__in=BuildRun.IN_FLIGHT).values_list("build_id", flat=True))
    builds_dir = storage.join(corpus_dir(corpus), "builds")
    for name in storage.list_children(builds_dir):
        if name.removesuffix(".partial") not in kept and name not in kept:
            storage.delete_tree(storage.join(builds_dir, name))
            removed.append(name)
    return removed
