"""The process `serve` leaves running: it starts the web server and the Celery worker beside it, says
where the server is once the server answers (with progress until then), and stops the others when one
exits or it is told to stop.

It imports the standard library only: Django, the apps and their libraries live in the children that
use them, so the supervising process costs a few MiB instead of a full site's 138 (docs/BENCHMARKS.md).
`serve` execs `python -m common.supervise SPEC`, SPEC a Spec as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

# How much lower than the web server's the CPU priority of serve's Celery worker is: on a small host
# its start-up and its builds share the cores with searches, and a search should not wait for them.
WORKER_NICENESS = 10
POLL_SECONDS = 0.5
# Without a terminal to redraw one line on, a progress line is printed when the stage changes and
# at most this often while it lasts.
PLAIN_PROGRESS_SECONDS = 10.0


@dataclass
class Spec:
    """What serve hands over: the commands to run, and how to tell when the web server answers."""

    commands: list[list[str]]
    background: int | None = None  # index in `commands` of the one run at a lower CPU priority
    health_url: str = ""  # polled until it answers 200; empty: nothing is announced
    workers: int = 1
    warm_dir: str = ""  # where each warm worker leaves a file named by its pid (corpus/warming.py)
    warm_env: str = ""  # made here and handed to the first command as gunicorn's `--env WARM_ENV=<directory>`
    banner: str = ""  # printed once the server answers
    cleanup: list[str] = field(default_factory=list)  # directories removed at the end

    def to_argv(self, python: str) -> list[str]:
        return [python, "-m", "common.supervise", json.dumps(asdict(self))]


def main(argv: list[str]) -> int:
    spec = Spec(**json.loads(argv[1]))
    if spec.warm_env:
        spec.warm_dir = tempfile.mkdtemp(prefix="docsmcp-serve-")
        spec.commands[0] = [*spec.commands[0], "--env", f"{spec.warm_env}={spec.warm_dir}"]
        spec.cleanup.append(spec.warm_dir)
    try:
        return run_together(*spec.commands, background=spec.commands[spec.background]
                            if spec.background is not None else None,
                            watch=(lambda: announce(spec)) if spec.health_url else None)
    finally:
        for directory in spec.cleanup:
            shutil.rmtree(directory, ignore_errors=True)


def run_together(*commands: list[str], background: list[str] | None = None, watch=None) -> int:
    """Run the commands as children; when one exits or this process is told to stop, stop the others
(SIGHUP is passed on to them).

    The `background` command runs at a lower CPU priority (WORKER_NICENESS); `watch`, if given, runs
    in a thread once they have started. Returns the exit status of the first child that ended (0
    after a SIGTERM or Ctrl-C).
    """
    prctl = _prctl()
    children = [
        subprocess.Popen(command, preexec_fn=_child_setup(prctl, background=command is background))
        for command in commands
    ]
    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        stopping = True
        for child in children:
            if child.poll() is None:
                child.terminate()

    def forward(signum, frame):  # SIGHUP: gunicorn reloads its workers, as when it ran on its own
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, forward)
    if watch is not None:
        threading.Thread(target=watch, daemon=True, name="announce").start()
    try:
        first = os.waitstatus_to_exitcode(os.waitpid(-1, 0)[1])
        stop(None, None)
        for child in children:
            try:
                child.wait(timeout=40)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        return 0 if stopping else first
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _prctl():
    """Linux's prctl, to have the children stopped if this process is killed outright (SIGKILL leaves it no
    time to stop them, and a gunicorn left behind keeps the port); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


PR_SET_PDEATHSIG = 1


def _child_setup(prctl, *, background: bool):
    def setup() -> None:  # in the child, between fork and exec
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if background:
            os.nice(WORKER_NICENESS)

    return setup


def announce(spec: Spec, out=None) -> None:
    """Wait until /health/ answers 200, showing what the server is doing meanwhile, then print the banner.

    Until every worker is warm a worker does not accept, so a request would wait in the listening
    socket's queue: the stage is read from whether the port listens and from the warm workers' files,
    and /health/ asked only once they are all warm. A server that answers 503 once warm (no corpus it
    can serve) is announced too, with what is wrong.
    """
    out = out or sys.stdout
    progress = Progress(out)
    started = time.monotonic()
    address = urlsplit(spec.health_url)
    while True:
        warm = warm_workers(spec.warm_dir) if spec.warm_dir else spec.workers
        if not listening(address.hostname or "127.0.0.1", address.port or 80):
            stage = "starting the web server"
        elif warm < spec.workers:
            stage = f"warming the indexes: {warm} of {spec.workers} workers ready"
        else:
            status, body = probe(spec.health_url)
            if status == 200 or (status == 503 and body.get("health") == "unhealthy"):
                break
            stage = "warming the indexes"
        progress.show(f"{stage} ({time.monotonic() - started:.0f} s)", stage)
        time.sleep(POLL_SECONDS)
    progress.done(f"ready in {time.monotonic() - started:.1f} s")
    if status != 200:
        out.write(f"docsmcp: the server answers but can serve no corpus; see {spec.health_url}\n")
    out.write(spec.banner + "\n")
    out.flush()


def listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def probe(url: str) -> tuple[int | None, dict]:
    """(HTTP status, JSON body) of a GET; (None, {}) while nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, _json(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, _json(exc.read())
    except (OSError, ValueError):
        return None, {}


def _json(data: bytes) -> dict:
    try:
        found = json.loads(data)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def warm_workers(directory: str) -> int:
    """Workers that said they are warm and are still alive (as corpus.warming counts them)."""
    try:
        names = [name for name in os.listdir(directory) if name.isdigit()]
    except OSError:
        return 0
    alive = 0
    for name in names:
        try:
            os.kill(int(name), 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        alive += 1
    return alive


class Progress:
    """One line redrawn in place on a terminal; elsewhere (a log, a pipe) a line per stage change and
    one every PLAIN_PROGRESS_SECONDS while a stage lasts."""

    def __init__(self, out):
        self.out = out
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.stage = None
        self.printed = 0.0
        self.width = 0

    def show(self, text: str, stage: str) -> None:
        now = time.monotonic()
        if self.tty:
            self.out.write("\r" + text.ljust(self.width))
            self.width = len(text)
        elif stage != self.stage or now - self.printed >= PLAIN_PROGRESS_SECONDS:
            self.out.write(f"docsmcp: {text}\n")
            self.printed = now
        self.stage = stage
        self.out.flush()

    def done(self, text: str) -> None:
        if self.tty and self.width:
            self.out.write("\r" + text.ljust(self.width) + "\n")
        else:
            self.out.write(f"docsmcp: {text}\n")
        self.out.flush()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
