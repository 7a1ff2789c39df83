"""serve's gunicorn hooks (docsmcp_site/gunicorn_conf.py) as a worker meets them when it stops."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from docsmcp_site import gunicorn_conf

ROOT = Path(__file__).resolve().parents[2]


class Left(Exception):
    """os._exit stands-in: the worker left at once, with this code."""


@pytest.fixture
def exits(monkeypatch):
    def fake_exit(code: int) -> None:
        raise Left(code)

    monkeypatch.setattr("os._exit", fake_exit)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: None)  # this process's own handlers stay for its exit


def stopping(code):
    """Call worker_exit as gunicorn does: from a `finally` while the worker's sys.exit(code) unwinds."""
    try:
        try:
            sys.exit(code)
        finally:
            gunicorn_conf.worker_exit(None, None)
    except SystemExit as exc:
        return exc.code


def test_a_worker_stopping_cleanly_leaves_without_native_destructors(exits):
    """The model runtime's threads belong to the master: joining them in a forked worker at
    interpreter exit aborted every worker on shutdown ("was sent SIGABRT!")."""
    with pytest.raises(Left) as left:
        stopping(0)
    assert left.value.args == (0,)


@pytest.mark.slow
def test_a_worker_stopping_cleanly_still_runs_its_exit_handlers(tmp_path):
    """Leaving with os._exit skips interpreter exit, where the query log's writer flushes its buffer
    (corpus/querylog.py registers that with atexit): the hook runs the exit handlers itself. In a
    child process, since running them here would run the test process's own."""
    mark = tmp_path / "flushed"
    child = textwrap.dedent(f"""
        import atexit, sys
        from docsmcp_site import gunicorn_conf
        atexit.register(lambda: open({str(mark)!r}, "w").write("written"))
        try:
            sys.exit(0)
        finally:
            gunicorn_conf.worker_exit(None, None)
    """)
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert mark.read_text() == "written"


@pytest.mark.parametrize("code", [3, 4, -1])
def test_a_worker_failing_to_boot_keeps_its_exit_code(exits, code):
    """gunicorn's master stops on a worker's boot (3) or import (4) error: the code must reach it."""
    assert stopping(code) == code
