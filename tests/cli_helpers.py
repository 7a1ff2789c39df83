"""Running management commands the way an operator does, capturing what they print."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from django.core.management import call_command

if TYPE_CHECKING:
    from corpus.models import BuildRun


def build_cmd(*args: str) -> tuple[int, str, str]:
    """`manage.py build_index ARGS --no-progress`: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("build_index", *args, "--no-progress", stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def build_corpus(name: str, source: Path, *args: str) -> BuildRun:
    """A hash-embedded build of `source` registered as `name`; its BuildRun."""
    from corpus.models import Corpus  # after Django is set up

    code, _out, err = build_cmd("--corpus", name, "--source", str(source), "--embedding-provider", "hash", *args)
    assert code == 0, err
    return Corpus.objects.get(name=name).builds.first()
