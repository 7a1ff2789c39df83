"""The fast tier and the slow one: `pytest -m "not slow"` is the inner loop, `scripts/test.sh` runs both.

A test is slow when it starts a browser, a process or a live server, or embeds a corpus with the local
model or reads the shared benchmark corpus. Most say so through what they use, so they are marked at
collection (SLOW_FIXTURES, SLOW_MARKERS, the object-store half of ON_AN_OBJECT_STORE); any other carries
`@pytest.mark.slow` (or its module's `pytestmark`). A test left in the fast tier that
starts a process anyway fails with a message saying to mark it, so the fast tier stays fast as tests
are added rather than by someone's memory.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

# A test that uses one of these (directly or through another fixture) is slow: each starts a server
# (pytest-django's live server thread, which also needs the transactional database; the S3-compatible
# server process), or a browser.
SLOW_FIXTURES = frozenset({"live_server", "browser", "s3_endpoint"})
SLOW_MARKERS = ("browser", "worker")
# Fixtures parametrized "local" then "s3", whose "s3" half starts the S3-compatible server.
ON_AN_OBJECT_STORE = ("any_index_root", "cache_root")
# Programs the fast tier may start: git answers in milliseconds (git-sourced corpora and their fixes).
QUICK_PROGRAMS = frozenset({"git"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark slow what uses a slow fixture or marker, before `-m` selects."""
    for item in items:
        if _slow(item):
            item.add_marker(pytest.mark.slow)


def _slow(item: pytest.Item) -> bool:
    if set(getattr(item, "fixturenames", ())) & SLOW_FIXTURES:
        return True
    if any(item.get_closest_marker(name) for name in SLOW_MARKERS):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(params.get(name) == "s3" for name in ON_AN_OBJECT_STORE)  # these ask for s3_index_root as they run


def _program(args) -> str:
    if isinstance(args, (str, bytes, os.PathLike)):
        first = os.fsdecode(args).split()[0] if os.fsdecode(args).strip() else ""
    else:
        first = os.fsdecode(list(args)[0]) if args else ""
    return os.path.basename(first)


_running: list[pytest.Item] = []  # the test being set up, run or torn down


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    _running.append(item)
    try:
        yield
    finally:
        _running.pop()


def pytest_configure(config: pytest.Config) -> None:
    """Outside the slow tier, starting a program other than git is a mistake in the test's marking, whether
    the test or one of its fixtures (a module's server, say) starts it."""
    original = subprocess.Popen.__init__

    def checked(self, args, *rest, **kwargs):
        item = _running[-1] if _running else None
        program = _program(args)
        if item is not None and not item.get_closest_marker("slow") and program not in QUICK_PROGRAMS:
            raise AssertionError(f"{item.nodeid} starts {program!r}: a test that starts a process belongs to the "
                                 "slow tier; mark it @pytest.mark.slow (tests/tiers.py)")
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = checked
