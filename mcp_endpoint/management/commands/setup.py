import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from common.home import is_checkout
from mcp_endpoint.client_files import (
    CLIENT_FILES,
    DEFAULT_KEY_ENV,
    PROJECT,
    USER,
    Server,
    SetupError,
    config_path,
    key_reference,
    merged_config,
    merged_rule,
    planned,
    read_text,
    rule_text,
    write,
)
from mcp_endpoint.clients import (
    SERVER_NAME,
    default_python,
    docsmcp_command,
    endpoint_url,
    installed_from,
    lasting_launcher,
)
from mcp_endpoint.management.commands.mcp_config import FORWARDED_ENV


class Command(BaseCommand):
    help = ("Write docsmcp into an MCP client's configuration file (merged with what is there; the old file "
            "is kept as a .bak), over HTTP with --url or as a command the client starts (stdio), and with "
            "--rules an instruction in the project's agent instructions telling the agent when to search "
            "these docs. --dry-run prints instead. See docs/clients.md.")
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("client", nargs="?", choices=sorted(CLIENT_FILES), metavar="CLIENT",
                            help=f"one of: {', '.join(sorted(CLIENT_FILES))}")
        parser.add_argument("--list", action="store_true", help="list the clients and the files each one reads")
        parser.add_argument("--url", help="a running server: its MCP endpoint, or its origin "
                                          "(e.g. http://127.0.0.1:8001; /mcp/c/<corpus>/ is added with --corpus)")
        parser.add_argument("--auth", choices=["none", "key", "oauth"], default="none",
                            help="with --url: none (default), key (an API key the client reads from the "
                                 "environment variable --key-env names) or oauth (the client signs the user in)")
        parser.add_argument("--key-env", default=DEFAULT_KEY_ENV, metavar="NAME",
                            help=f"the environment variable holding the API key (default {DEFAULT_KEY_ENV})")
        parser.add_argument("--folder", metavar="PATH",
                            help="stdio: the client starts `docsmcp stdio PATH`, which builds what changed first")
        parser.add_argument("--corpus", help="the corpus to serve (stdio --corpus, or /mcp/c/<corpus>/ over HTTP)")
        parser.add_argument("--scope", choices=[PROJECT, USER],
                            help="the project's file (default) or the user's (every project); Windsurf has "
                                 "the user's only")
        parser.add_argument("--project-dir", type=Path, default=None, metavar="DIR",
                            help="the project whose files are written (default: the current directory)")
        parser.add_argument("--name", default=SERVER_NAME, help=f"the server's name in the client (default {SERVER_NAME})")
        parser.add_argument("--rules", action="store_true",
                            help="also write a usage rule in the project's agent instructions (CLAUDE.md, "
                                 "AGENTS.md, GEMINI.md, a Cursor or Windsurf rule, Copilot's instructions)")
        parser.add_argument("--dry-run", action="store_true", help="print what would be written; change nothing")

    def handle(self, *args, **options):
        project_dir = (options["project_dir"] or Path.cwd()).resolve()
        if options["list"]:
            self._list(project_dir)
            return
        if not options["client"]:
            raise CommandError(f"name a client: docsmcp setup CLIENT, one of {', '.join(sorted(CLIENT_FILES))} "
                               "(docsmcp setup --list shows where each one keeps its configuration)")
        client = CLIENT_FILES[options["client"]]
        scope = options["scope"] or (PROJECT if client.project else USER)
        try:
            server = self._server(options, client, scope)
            path = config_path(client, scope, project_dir, Path.home())
            changes = [planned(path, merged_config(client, read_text(path), options["name"], server, path))]
            if options["rules"]:
                rule = project_dir / client.rule
                text = rule_text(client, options["name"], self._topic(options["corpus"]))
                changes.append(planned(rule, text if client.rule_whole_file else merged_rule(read_text(rule), text)))
        except SetupError as exc:
            raise CommandError(str(exc)) from exc
        for change in changes:
            if change is None:
                continue
            if options["dry_run"]:
                self.stdout.write(f"--- {change.path} (dry run: not written)\n{change.text}")
            else:
                done = write(change)
                kept = f" (the previous file is {done.backup})" if done.backup else ""
                self.stdout.write(f"wrote {done.path}{kept}")
        if all(change is None for change in changes):
            self.stdout.write(f"{path} already has this configuration; nothing to change")
        self._after(client, server, options)

    def _server(self, options, client, scope: str) -> Server:
        if options["url"]:
            if options["folder"]:
                raise SetupError("--url and --folder are two ways to reach docsmcp; give one")
            try:
                url = endpoint_url(options["url"], options["corpus"])
            except ValueError as exc:
                raise SetupError(str(exc).replace("--http", "--url")) from exc
            return Server(url=url, auth=options["auth"], key_env=options["key_env"])
        if options["auth"] != "none":
            raise SetupError("--auth applies to a server reached over HTTP: give its --url (a stdio server runs "
                             "as the local user and needs no key)")
        launcher = self._launcher()
        if options["folder"]:
            folder = Path(options["folder"]).expanduser()
            if not folder.is_dir():
                raise SetupError(f"{folder} is not a directory; give the folder that holds your markdown files")
            # manage.py knows the command by its own name only; the installed `docsmcp` also as `stdio`
            args = ["mcp_stdio" if launcher[-1].endswith("manage.py") else "stdio", str(folder.resolve())]
        else:
            args = ["mcp_stdio"] + (["--corpus", options["corpus"]] if options["corpus"] else [])
        env = []
        for name in FORWARDED_ENV:
            value = os.environ.get(name)
            if not value:
                continue
            if scope == PROJECT and _has_password(value):
                # A project's file is shared (committed): a password stays in the environment the client reads
                if client.name == "codex":
                    self.stderr.write(f"{name} holds a password and Codex's project file has no way to refer to "
                                      f"the environment: it is left out; set it in ~/.codex/config.toml "
                                      f"(--scope user) or where Codex starts")
                    continue
                value = key_reference(client.name, name)
            env.append((name, value))
        return Server(command=launcher[0], args=(*launcher[1:], *args), env=tuple(env))

    @staticmethod
    def _launcher() -> list[str]:
        """What the client runs: this checkout's python and manage.py, else the installed `docsmcp` (never a
        copy in uv's cache, which does not last)."""
        if is_checkout(settings.BASE_DIR):
            return [default_python(settings.BASE_DIR, sys.executable), str(settings.BASE_DIR / "manage.py")]
        return lasting_launcher(docsmcp_command(), settings.VERSION, installed_from())

    @staticmethod
    def _topic(corpus: str | None) -> str:
        """What the docs are about, in the rule's words: the corpus's description when it has one."""
        from corpus.models import Corpus

        try:
            found = Corpus.objects.filter(name=corpus).first() if corpus else None
        except DatabaseError:  # no database yet: the rule still reads well without the description
            found = None
        if found is not None and found.description.strip():
            return f"the {found.description.strip().rstrip('.')}"
        return f"the {corpus} documentation" if corpus else "this project's documentation"

    def _after(self, client, server: Server, options) -> None:
        notes = [client.note]
        if server.url and server.auth == "key":
            if client.name == "vscode":
                notes.append("VS Code asks for the API key the first time it starts the server.")
            else:
                notes.append(f"The client reads the API key from ${options['key_env']}: set it where the client "
                             f"starts (export {options['key_env']}=...; create one with `docsmcp mcp_apikey create NAME`).")
        if server.url and server.auth == "oauth":
            notes.append("The client signs you in on first use" + (
                f" (`codex mcp login {options['name']}`)" if client.name == "codex" else "") + ".")
        self.stderr.write("\n".join(note for note in notes if note))

    def _list(self, project_dir: Path) -> None:
        home = Path.home()
        for name in sorted(CLIENT_FILES):
            client = CLIENT_FILES[name]
            project = str(project_dir / client.project) if client.project else "(none: user scope only)"
            self.stdout.write(f"{name:12} {client.title}\n"
                              f"{'':12} project: {project}\n"
                              f"{'':12} user:    {home / client.user}\n"
                              f"{'':12} rule:    {project_dir / client.rule} (with --rules)")


def _has_password(value: str) -> bool:
    try:
        return bool(urlsplit(value).password)
    except ValueError:
        return False
