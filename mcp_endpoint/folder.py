"""`docsmcp serve PATH` and `docsmcp stdio PATH`: a markdown folder registered as a corpus, named after
the folder, and built (what changed since the last run) before it is served."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

from mcp_endpoint.errors import FolderError


def checked_folder(folder: str | Path) -> Path:
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise FolderError(f"{path} is not a directory; give the folder that holds your markdown files")
    return path.resolve()


def prepare_folder(folder: Path, say: TextIO, command: str, *, strict: bool = False) -> str:
    """Register `folder` (once) and build what changed; the corpus name. `command` (serve or stdio) is
    what the user runs again after fixing the files; `strict`: any error fails the build (for CI), where
    otherwise pages with errors are left out and the rest is served."""
    name = corpus_for(folder)
    _build(name, folder, say, command, strict=strict)
    return name


def corpus_for(folder: Path) -> str:
    """The corpus already reading `folder`, else a new name from the folder's: its slug, then -2, -3..."""
    from django.utils.text import slugify

    from corpus.models import Corpus

    existing = Corpus.objects.filter(source_dir=str(folder), version_of__isnull=True).order_by("created_at").first()
    if existing is not None:
        return existing.name
    base = slugify(folder.name).replace("_", "-")[:90].strip("-") or "docs"
    name, n = base, 1
    while Corpus.objects.filter(name=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def _build(name: str, folder: Path, say: TextIO, command: str, *, strict: bool = False) -> None:
    """build_index --if-stale: the first run builds, later runs build only what changed (or nothing)."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from corpus.models import Corpus

    failed = None
    try:
        call_command("build_index", "--corpus", name, "--source", str(folder), "--if-stale",
                     *(["--strict"] if strict else []), stdout=say, stderr=sys.stderr)
    except CommandError as exc:
        raise FolderError(str(exc)) from exc
    except SystemExit as exc:
        failed = exc
    corpus = Corpus.objects.get(name=name)
    if corpus.active_build_id is None:
        raise FolderError(f"corpus {name!r} has no build to serve (see the errors above); fix the files and run "
                          f"`docsmcp {command} {folder}` again") from failed
    if failed is not None:
        print(f"docsmcp: the new build of {name!r} failed; serving its previous build", file=sys.stderr)


@contextlib.contextmanager
def stdout_to_stderr():
    """Point file descriptor 1 at stderr for a while, so no library's print reaches a stdio client
    before the protocol starts."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
