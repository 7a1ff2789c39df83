"""serve's gunicorn hooks (docsmcp_site/gunicorn_conf.py) as a worker meets them when it stops."""

from __future__ import annotations

import sys

import pytest

from docsmcp_site import gunicorn_conf


class Left(Exception):
    """os._exit stands-in: the worker left at once, with this code."""


@pytest.fixture
def exits(monkeypatch):
    def fake_exit(code: int) -> None:
        raise Left(code)

    monkeypatch.setattr("os._exit", fake_exit)


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


@pytest.mark.parametrize("code", [3, 4, -1])
def test_a_worker_failing_to_boot_keeps_its_exit_code(exits, code):
    """gunicorn's master stops on a worker's boot (3) or import (4) error: the code must reach it."""
    assert stopping(code) == code
