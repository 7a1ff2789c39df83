"""Running management commands the way an operator does, capturing what they print."""

from __future__ import annotations

import io

from django.core.management import call_command


def build_cmd(*args: str) -> tuple[int, str, str]:
    """`manage.py build_index ARGS --no-progress`: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("build_index", *args, "--no-progress", stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()
