"""The parse pool's worker processes end with the process that started them.

A pool worker is a child of multiprocessing's forkserver, not of the build, and it holds both ends
of its task pipe, so when the build process is killed (SIGKILL, the OOM killer) nothing tells it
to stop: it waits for work forever, and keeps the forkserver and the resource tracker alive with
it. Each worker therefore watches the build process itself and exits when it is gone; the
forkserver and the resource tracker then see their last client leave and exit on their own.
"""

from __future__ import annotations

import os
import select
import threading
import time


def exit_with(pid: int) -> None:
    """Pool initializer: end this worker as soon as process `pid` (the one that made the pool) ends.

    On Linux a pidfd says so at once, and cannot be fooled by the pid being reused; elsewhere the
    pid is checked twice a second.
    """
    try:
        handle: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        handle = None
        if not _alive(pid):
            os._exit(1)
    threading.Thread(target=_exit_when_gone, args=(pid, handle), name=f"exit-with-{pid}", daemon=True).start()


def _exit_when_gone(pid: int, handle: int | None) -> None:
    if handle is not None:
        select.select([handle], [], [])  # a pidfd turns readable when its process has ended
    else:
        while _alive(pid):
            time.sleep(0.5)
    os._exit(1)  # from this thread, so a worker busy parsing a page stops too


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
