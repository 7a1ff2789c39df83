"""A serving host's local copies of the builds it serves from an object store.

A build never changes once metadata.json is written, so a copy fetched once stays right for as
long as the build is served. `BuildCache.resolve` maps a build's location to what to open: the
local copy when it is complete, otherwise the object-store URI itself, while one background
thread per build fetches the copy. So a cold host answers at once (each query then pays the
store's latency) and is served from local disk as soon as the copy is in.

A copy is fetched into a temporary directory, every file checked against the size listed in
the build's contents.json, and renamed into place, so a copy that exists is complete. Copies of
a corpus's other builds are evicted once they have not been asked for during `evict_after`
seconds: another process on the host may still be finishing requests on the build it served a
moment ago.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

from .contents import CONTENTS_FILE, read_contents
from .objectstore import download_file, list_tree
from .uri import Location, is_remote, join

log = logging.getLogger("retrieval.storage")

EVICT_AFTER = 300.0  # seconds a copy of a build nobody asks for is kept
TOUCH_EVERY = 30.0  # seconds between marks of "still served" on a copy
STALE_FETCH = 3600.0
FETCH_THREADS = 8  # a fetch directory this old belongs to a process that died


class CopyIncomplete(Exception):
    """A fetched file is missing or its size differs from contents.json."""


class BuildCache:
    def __init__(self, directory: Path, evict_after: float = EVICT_AFTER):
        self.directory = Path(directory)
        self.evict_after = evict_after
        self._lock = threading.Lock()
        self._fetching: dict[str, threading.Thread] = {}
        self._touched: dict[str, float] = {}
        self.failures: dict[str, str] = {}  # location -> last fetch error, for logs and health

    def local_path(self, location: str) -> Path:
        """`<cache dir>/<bucket>/<prefix>/.../<build id>`: one copy per build, shared by the host's processes."""
        parsed = urlparse(location)
        return self.directory / parsed.netloc / parsed.path.strip("/")

    def resolve(self, location: Location, *, fetch: bool = True) -> Location:
        """What to open for the build at `location`: its local copy when complete, else `location`.

        A local location is returned unchanged. With `fetch`, a missing copy is fetched in the background."""
        if not is_remote(location):
            return location
        location = str(location)
        local = self.local_path(location)
        if local.is_dir():
            self._touch(location, local)
            return local
        if fetch:
            self.fetch_in_background(location)
        return location

    def fetch_in_background(self, location: str) -> threading.Thread | None:
        with self._lock:
            running = self._fetching.get(location)
            if running is not None and running.is_alive():
                return running
            thread = threading.Thread(target=self._fetch_logged, args=(location,), daemon=True,
                                      name=f"build-cache-{location.rsplit('/', 1)[-1]}")
            self._fetching[location] = thread
        thread.start()
        return thread

    def _fetch_logged(self, location: str) -> None:
        try:
            self.fetch(location)
            self.failures.pop(location, None)
        except Exception as exc:  # the host keeps serving from the object store; the next request retries
            self.failures[location] = f"{type(exc).__name__}: {exc}"
            log.warning("could not copy build %s into the local cache: %s", location, exc)

    def fetch(self, location: str) -> Path:
        """Copies the build into the cache (once per host: other processes wait on a lock file) and
        evicts the corpus's copies nobody asked for lately."""
        local = self.local_path(location)
        local.parent.mkdir(parents=True, exist_ok=True)
        with open(local.parent / f".{local.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not local.is_dir():
                self._copy(location, local)
        self._touch(location, local, force=True)
        self.evict(local.parent, keep=local.name)
        return local

    def _copy(self, location: str, local: Path) -> None:
        started = time.perf_counter()
        try:
            files = read_contents(location)
        except FileNotFoundError:  # a build made before contents.json: list it (it is complete, being active)
            files = {path: size for path, size in list_tree(location).items() if path != CONTENTS_FILE}
        files.setdefault("metadata.json", -1)
        temp = local.with_name(f".{local.name}.fetch-{uuid.uuid4().hex[:8]}")
        def fetch_one(relpath: str) -> None:
            target = temp / relpath
            download_file(join(location, relpath), target)
            size = files[relpath]
            if size >= 0 and target.stat().st_size != size:
                raise CopyIncomplete(f"{relpath}: {target.stat().st_size} bytes fetched, {size} listed")

        try:
            with ThreadPoolExecutor(FETCH_THREADS) as pool:  # many small objects: latency, not bandwidth
                list(pool.map(fetch_one, sorted(files)))
            os.rename(temp, local)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
        log.info("copied build %s into %s (%d files, %.1fs)", location, local, len(files),
                 time.perf_counter() - started)

    def _touch(self, location: str, local: Path, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._touched.get(location, 0.0) < TOUCH_EVERY:
            return
        self._touched[location] = now
        with contextlib.suppress(FileNotFoundError):
            os.utime(local)

    def evict(self, corpus_dir: Path, keep: str) -> list[str]:
        """Removes the copies (and dead fetches) under a corpus's build directory that were not
        asked for during `evict_after` seconds, except `keep`."""
        removed = []
        cutoff = time.time() - self.evict_after
        for path in corpus_dir.iterdir() if corpus_dir.is_dir() else []:
            if path.name == keep or path.name.endswith(".lock"):
                continue
            fetching = ".fetch-" in path.name
            try:
                age_limit = time.time() - STALE_FETCH if fetching else cutoff
                if path.stat().st_mtime >= age_limit:
                    continue
            except FileNotFoundError:
                continue
            if fetching:
                shutil.rmtree(path, ignore_errors=True)
                continue
            # rename first, so no process of this host finds a half-deleted copy
            doomed = path.with_name(f".{path.name}.evicted-{uuid.uuid4().hex[:8]}")
            try:
                os.rename(path, doomed)
            except FileNotFoundError:
                continue
            shutil.rmtree(doomed, ignore_errors=True)
            (corpus_dir / f".{path.name}.lock").unlink(missing_ok=True)
            removed.append(path.name)
        return removed

    def wait(self, timeout: float | None = None) -> None:
        """Waits for the fetches in flight (tests, benchmarks and warm-up on activation)."""
        for thread in list(self._fetching.values()):
            thread.join(timeout)
