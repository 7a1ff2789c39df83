"""Every page of a scan processed, in worker processes when there are many, and the findings summed up."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from .folder import scan_corpus
from .pages import FileResult, process_file
from .pool import exit_with
from .scan import DEFAULT_MAX_FILE_BYTES, CorpusScan, Finding


def process_corpus(scan: CorpusScan, *, progress: Callable[[int, int], None] | None = None,
                   workers: int = 1) -> list[FileResult]:
    """Parse and chunk every file, in path order."""
    paths = sorted(scan.files)
    results = []
    for result in process_files(scan, [(p, scan.file_key(p)) for p in paths], workers=workers):
        results.append(result)
        if progress:
            progress(len(results), len(paths))
    return results


def process_files(scan: CorpusScan, todo: list[tuple[str, str]], *, workers: int = 1) -> Iterator[FileResult]:
    """Results of `(relpath, file_key)` pairs, in the order given, parsed in `workers` processes."""
    taxonomy = scan.taxonomy_config()
    if workers <= 1 or len(todo) < 200:
        for relpath, key in todo:
            yield _without_default_under_invalid(
                scan, process_file(relpath, scan.files[relpath], key, scan.manifests, taxonomy, scan.generator,
                                   scan.included(relpath)))
        return
    from concurrent.futures import ProcessPoolExecutor

    args = ((relpath, scan.files[relpath], key, scan.manifests, taxonomy, scan.generator, scan.included(relpath))
            for relpath, key in todo)
    global _pools
    with _pools_lock:
        _pools += 1
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("forkserver"),
                                 initializer=exit_with, initargs=(os.getpid(),)) as pool:
            for result in pool.map(_process_args, args, chunksize=32):
                yield _without_default_under_invalid(scan, result)
    finally:
        with _pools_lock:
            _pools -= 1
            if _pools == 0:
                _stop_forkserver()


def left_out_stats(scan: CorpusScan, left_out: list[FileResult], findings: list[Finding]) -> dict:
    """How many pages a build left out and why (by the code of each page's first error), and its
    warnings counted by code: what a summary tells once instead of once per page."""
    reasons: dict[str, int] = {}
    for result in left_out:
        code = next((f.code for f in result.findings if f.severity == "error"), "manifest-invalid")
        reasons[code] = reasons.get(code, 0) + 1
    warnings: dict[str, int] = {}
    for finding in findings:
        if finding.severity == "warning":
            warnings[finding.code] = warnings.get(finding.code, 0) + 1
    return {"left_out_files": len(left_out), "left_out": dict(sorted(reasons.items())),
            "warnings_by_code": dict(sorted(warnings.items())),
            "excluded_files": len(scan.excluded), "generator": scan.generator}


def _without_default_under_invalid(scan: CorpusScan, result: FileResult) -> FileResult:
    """A file whose governing manifest failed to parse is not missing a strategy: the manifest's own
    `manifest-invalid` error says what to fix, and a `strategy-default` warning per file would bury it."""
    parts = PurePosixPath(result.relpath).parts[:-1]
    for depth in range(len(parts), -1, -1):
        directory = "/".join(parts[:depth])
        if directory in scan.manifest_texts:
            if directory not in scan.manifests:
                result.findings = [f for f in result.findings if f.code != "strategy-default"]
            break
    return result


_pools = 0  # parse pools running in this process; the forkserver stops when the last one ends
_pools_lock = threading.Lock()


def _stop_forkserver() -> None:
    """Stops the forkserver and the resource tracker the pool started, and waits for them, so no
    process outlives the command and the workers' CPU counts in the command's own (`time -v`): the
    forkserver reaps the workers, and this process reaps the forkserver. Python keeps both running
    until the process exits otherwise; the next pool starts them again."""
    import multiprocessing.forkserver
    import multiprocessing.resource_tracker

    for helper in (getattr(multiprocessing.forkserver, "_forkserver", None),
                   getattr(multiprocessing.resource_tracker, "_resource_tracker", None)):
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            stop()


def _process_args(args: tuple) -> FileResult:
    return process_file(*args)


def validate_corpus(root: Path, progress: Callable[[int, int], None] | None = None,
                    workers: int | None = None, scan: CorpusScan | None = None,
                    max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
                    ) -> tuple[CorpusScan, list[FileResult], list[Finding]]:
    """`workers` defaults to a process per core, or 1 inside a daemonic process, which cannot have children.
    `scan` is a tree already read (a git commit); otherwise `root` is scanned."""
    if workers is None:
        workers = 1 if multiprocessing.current_process().daemon else (os.cpu_count() or 1)
    scan = scan or scan_corpus(root, max_file_bytes=max_file_bytes)
    results = process_corpus(scan, progress=progress, workers=workers)
    findings = list(scan.findings)
    for result in results:
        findings.extend(result.findings)
    return scan, results, findings
