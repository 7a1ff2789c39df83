"""The `docsmcp` command an installed package puts on the PATH: every management command, with no checkout.

`docsmcp <command> ...` is `manage.py <command> ...`. Two conveniences on top: `docsmcp serve PATH`
and `docsmcp stdio PATH` register the markdown folder PATH as a corpus (named after the folder),
build what changed since the last run and serve it; and the embedded SQLite database in the data
directory (common/home.py) is created or migrated before the first command that needs it,
so a fresh install works with no setup step.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

# Commands that must not touch the database first (they inspect or change migrations, or only print).
NO_AUTO_MIGRATE = {"migrate", "makemigrations", "squashmigrations", "showmigrations", "sqlmigrate", "help",
                   "version", "--version", "--help", "-h", "collectstatic", "check", "shell", "dbshell"}
# `docsmcp stdio` is `manage.py mcp_stdio`: the name a client configuration spells.
ALIASES = {"stdio": "mcp_stdio"}


class CliError(Exception):
    """A PATH that cannot be served; printed as one line, exit status 2."""


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
    from retrieval.boot import boot

    boot()
    command = argv[1] if len(argv) > 1 else "help"
    command = ALIASES.get(command, command)
    if command == "--version":  # Django's own would print Django's version
        from docsmcp_site import __version__

        print(f"docsmcp {__version__}")
        return
    argv[1:2] = [command] if len(argv) > 1 else []
    if command in ("serve", "mcp_stdio") and len(argv) > 2 and not argv[2].startswith("-"):
        try:
            _serve_folder(command, Path(argv[2]), argv[3:])
        except CliError as exc:
            print(f"docsmcp: {exc}", file=sys.stderr)
            raise SystemExit(2) from exc
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


def _serve_folder(command: str, folder: Path, rest: list[str]) -> None:
    stdio = command == "mcp_stdio"
    # Under stdio the protocol owns stdout: everything said before it starts goes to stderr.
    say = sys.stderr if stdio else sys.stdout
    folder = folder.expanduser()
    if not folder.is_dir():
        raise CliError(f"{folder} is not a directory; give the folder that holds your markdown files")
    folder = folder.resolve()
    import django

    django.setup()
    with _stdout_to_stderr() if stdio else contextlib.nullcontext():
        _ensure_database(quiet_stdout=stdio)
        name = _corpus_for(folder)
        strict = "--strict" in rest  # build_index's option: any error fails the build (for CI)
        rest = [arg for arg in rest if arg != "--strict"]
        _build(name, folder, say, strict=strict)
    if stdio:
        print(f"docsmcp: serving corpus {name!r} over stdio; a client spawns it with: "
              f"{json.dumps(stdio_config(folder))}", file=sys.stderr, flush=True)
        _restart("mcp_stdio", "--corpus", name, *rest)
    url = _http_url(name, rest)
    print(f"\nMCP endpoint:  {url}\n"
          f"Claude Code:   claude mcp add --transport http docsmcp {url}\n"
          f"Client config: {json.dumps(http_config(url))}\n", file=say, flush=True)
    _restart("serve", *rest)


def _restart(*args: str) -> None:
    """Replace this process with `docsmcp ARGS`: the server starts without the build's memory and
    threads (LanceDB's runtime must not be forked into serve's children)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "docsmcp_site", *args])


@contextlib.contextmanager
def _stdout_to_stderr():
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


def _corpus_for(folder: Path) -> str:
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


def _build(name: str, folder: Path, say, *, strict: bool = False) -> None:
    """build_index --if-stale: the first run builds, later runs build only what changed (or nothing)."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from corpus.models import Corpus

    failed = None
    try:
        call_command("build_index", "--corpus", name, "--source", str(folder), "--if-stale",
                     *(["--strict"] if strict else []), stdout=say, stderr=sys.stderr)
    except CommandError as exc:
        raise CliError(str(exc)) from exc
    except SystemExit as exc:
        failed = exc
    corpus = Corpus.objects.get(name=name)
    if corpus.active_build_id is None:
        raise CliError(f"corpus {name!r} has no build to serve (see the errors above); fix the files and run "
                       f"`docsmcp {'stdio' if say is sys.stderr else 'serve'} {folder}` again") from failed
    if failed is not None:
        print(f"docsmcp: the new build of {name!r} failed; serving its previous build", file=sys.stderr)


def _http_url(name: str, rest: list[str]) -> str:
    from django.conf import settings

    host, port = settings.MCP_SERVER_HOST, str(settings.MCP_SERVER_PORT)
    for i, arg in enumerate(rest):
        for flag in ("--host", "--port"):
            value = None
            if arg == flag and i + 1 < len(rest):
                value = rest[i + 1]
            elif arg.startswith(flag + "="):
                value = arg.split("=", 1)[1]
            if value is not None:
                host, port = (value, port) if flag == "--host" else (host, value)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/mcp/c/{name}/"


def http_config(url: str) -> dict:
    from mcp_endpoint.clients import Launch, client_config

    return client_config("cursor", Launch(python="", manage="", http_url=url))


def stdio_config(folder: Path) -> dict:
    """The configuration that makes a client spawn this installation's `docsmcp stdio FOLDER`."""
    from mcp_endpoint.clients import docsmcp_command

    server: dict = {"command": docsmcp_command(), "args": ["stdio", str(folder)]}
    with contextlib.suppress(KeyError):
        server["env"] = {"DOCSMCP_HOME": os.environ["DOCSMCP_HOME"]}
    return {"mcpServers": {"docsmcp": server}}

