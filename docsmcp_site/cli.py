"""The `docsmcp` command an installed package puts on the PATH: every management command, with no checkout.

`docsmcp <command> ...` is `manage.py <command> ...`. On top: `docsmcp --help` lists docsmcp's own
commands by task (docsmcp_site/commands.py) and, like `--version`, answers before Django is set up;
`docsmcp django-help` lists every command. `docsmcp serve PATH` and `docsmcp stdio PATH` register the
markdown folder PATH as a corpus (named after the folder), build what changed since the last run and
serve it (mcp_endpoint/folder.py); and the embedded SQLite database in the data directory
(common/home.py) is created or migrated before the first command that needs it, so a fresh install
works with no setup step.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

# Commands that must not touch the database first (they inspect or change migrations, or only print).
NO_AUTO_MIGRATE = {"migrate", "makemigrations", "squashmigrations", "showmigrations", "sqlmigrate", "help",
                   "version", "collectstatic", "check", "shell", "dbshell", "setup"}


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    argv[0] = "docsmcp"  # what usage lines name, also under `python -m docsmcp_site`
    first = argv[1] if len(argv) > 1 else None
    # Answered before Django is set up: its apps import OAuth, ninja and LanceDB, seconds of start-up.
    if first in (None, "-h", "--help") or (first == "help" and len(argv) == 2):
        from docsmcp_site import __version__
        from docsmcp_site.commands import overview

        print(overview(__version__))
        return
    if first in ("--version", "-V"):  # Django's `version` would print Django's version
        from docsmcp_site import __version__

        print(f"docsmcp {__version__}")
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
    from retrieval.boot import boot

    boot()
    from docsmcp_site.commands import ALIASES

    if first == "django-help":  # every command, Django's development ones too
        argv[1:] = ["help", *argv[2:]]
    elif first == "help":  # `docsmcp help stdio` is `docsmcp mcp_stdio --help`
        argv[1:] = [ALIASES.get(argv[2], argv[2]), "--help"]
    command = ALIASES.get(argv[1], argv[1])
    argv[1] = command
    folder = argv[2] if command in ("serve", "mcp_stdio") and len(argv) > 2 and not argv[2].startswith("-") else None
    if folder is not None:
        from mcp_endpoint.folder import FolderError, checked_folder

        try:
            path = checked_folder(folder)
        except FolderError as exc:
            print(f"docsmcp: {exc}", file=sys.stderr)
            raise SystemExit(2) from exc
        if command == "mcp_stdio":
            _stdio_folder(path, argv[3:])
            return
    from django.core.management import execute_from_command_line

    if command not in NO_AUTO_MIGRATE and not {"-h", "--help"} & set(argv[2:]):
        _ensure_database(quiet_stdout=command == "mcp_stdio")
    execute_from_command_line(argv)


def _ensure_database(*, quiet_stdout: bool) -> None:
    """Apply pending migrations to the embedded SQLite database; a DATABASE_URL server is the
    operator's to migrate (`docsmcp migrate`), as several nodes may share it."""
    import django
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    if not settings.DATABASE_EMBEDDED:
        return
    django.setup()
    executor = MigrationExecutor(connection)
    if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    print(f"docsmcp: setting up the database in {settings.DATABASES['default']['NAME']}", file=sys.stderr)
    call_command("migrate", interactive=False, verbosity=0, stdout=sys.stderr if quiet_stdout else sys.stdout)


def _stdio_folder(folder: Path, rest: list[str]) -> None:
    """Build `folder`, then become `docsmcp stdio --corpus NAME`: the protocol starts without the build's
    memory and threads. Until then everything said goes to stderr, as stdout is the protocol's."""
    import django

    from mcp_endpoint.folder import FolderError, prepare_folder, stdout_to_stderr

    django.setup()
    with stdout_to_stderr():
        _ensure_database(quiet_stdout=True)
        try:
            strict = "--strict" in rest  # any error fails the build (for CI)
            rest = [arg for arg in rest if arg != "--strict"]
            name = prepare_folder(folder, sys.stderr, "stdio", strict=strict)
        except FolderError as exc:
            print(f"docsmcp: {exc}", file=sys.stderr)
            raise SystemExit(2) from exc
    print(f"docsmcp: serving corpus {name!r} over stdio; a client spawns it with: "
          f"{json.dumps(stdio_config(folder))}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "docsmcp_site", "mcp_stdio", "--corpus", name, *rest])


def stdio_config(folder: Path) -> dict:
    """The configuration that makes a client spawn this installation's `docsmcp stdio FOLDER`."""
    from mcp_endpoint.clients import docsmcp_command

    server: dict = {"command": docsmcp_command(), "args": ["stdio", str(folder)]}
    with contextlib.suppress(KeyError):
        server["env"] = {"DOCSMCP_HOME": os.environ["DOCSMCP_HOME"]}
    return {"mcpServers": {"docsmcp": server}}

