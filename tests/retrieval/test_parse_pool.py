"""The parse pool of a build: a build process killed outright leaves no process of its pool behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Parses with a pool of two processes, then stops in its progress callback with the pool still up,
# as a build does between batches, and waits there to be killed.
BUILD = """
import sys, time
from pathlib import Path
from retrieval.ingest.validate import validate_corpus

def progress(done, total):
    if done == total:
        print("pool up", flush=True)
        time.sleep(600)

if __name__ == "__main__":
    validate_corpus(Path(sys.argv[1]), progress=progress, workers=2)
"""

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table in /proc")


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def running(pid: int) -> bool:
    """True while the process exists and has not exited (a zombie waiting to be reaped has)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow
def test_killing_a_build_process_ends_its_parse_pool_forkserver_and_resource_tracker(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for number in range(240):  # a pool starts from 200 files
        (docs / f"page{number}.md").write_text(f"# Page {number}\n\n## Usage\n\nStep {number} of the guide.\n")
    script = tmp_path / "build.py"
    script.write_text(BUILD)
    build = subprocess.Popen([sys.executable, str(script), str(docs)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert build.stdout.readline().strip() == "pool up"
        pool = descendants(build.pid)
        assert len(pool) >= 4  # forkserver, resource tracker, two workers
        build.send_signal(signal.SIGKILL)
        build.wait(timeout=30)
        deadline = time.monotonic() + 15
        while any(running(pid) for pid in pool) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = sorted(pid for pid in pool if running(pid))
        assert not left, [(Path("/proc") / str(pid) / "cmdline").read_bytes()[:120] for pid in left]
    finally:
        build.kill()
        build.wait(timeout=30)
        for pid in descendants(build.pid) | locals().get("pool", set()):
            if running(pid):
                os.kill(pid, signal.SIGKILL)
