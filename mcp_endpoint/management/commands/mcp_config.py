import json
import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from common.home import is_checkout
from corpus.errors import CorpusError
from corpus.selectors import corpus_get
from mcp_endpoint.clients import (
    CLIENTS,
    CONFIG_FILES,
    Launch,
    claude_mcp_add,
    client_config,
    default_python,
    docsmcp_command,
    endpoint_url,
)
from mcp_endpoint.profiles import registry

# Settings that decide which database and indexes a stdio server opens: passed on when set here.
FORWARDED_ENV = ("DOCSMCP_HOME", "DATABASE_URL", "DOCSMCP_INDEX_ROOT", "DOCSMCP_INDEX_CACHE_DIR", "DOCSMCP_DEFAULT_CORPUS",
                 "DOCSMCP_EMBEDDING_PROVIDER")


class Command(BaseCommand):
    help = (
        "Print the MCP client configuration for this checkout (absolute paths filled in): stdio through "
        "`manage.py mcp_stdio`, or HTTP with --http. See docs/clients.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("--client", default="claude-desktop", choices=CLIENTS)
        parser.add_argument("--corpus", help="serve this corpus (stdio --corpus, or /mcp/c/<corpus>/ over HTTP)")
        parser.add_argument("--profile", choices=registry.profile_names(), help="tool profile (default: docs); over HTTP, /mcp/<profile>/")
        parser.add_argument("--http", metavar="URL", help="the server's URL, e.g. http://127.0.0.1:8001")

    def handle(self, *args, **options):
        if options["corpus"]:
            self._check_corpus(options["corpus"])
        http_url = None
        if options["http"]:
            try:
                http_url = endpoint_url(options["http"], options["corpus"], options["profile"])
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        checkout = is_checkout(settings.BASE_DIR)
        launch = Launch(
            python=default_python(settings.BASE_DIR, sys.executable) if checkout else docsmcp_command(),
            manage=str(settings.BASE_DIR / "manage.py") if checkout else "",
            corpus=options["corpus"],
            profile=options["profile"],
            env={name: os.environ[name] for name in FORWARDED_ENV if os.environ.get(name)} or None,
            http_url=http_url,
            needs_key=settings.MCP_AUTH_REQUIRED,
        )
        self.stdout.write(json.dumps(client_config(options["client"], launch), indent=2))
        # Notes go to stderr so that `mcp_config ... > .mcp.json` writes the JSON alone.
        self.stderr.write(f"Put this in {CONFIG_FILES[options['client']]}.")
        if options["client"] == "claude-code":
            self.stderr.write(f"Or register it from a shell (add --scope project to write .mcp.json):\n"
                              f"  {claude_mcp_add(launch)}")

    def _check_corpus(self, name: str) -> None:
        """A configuration naming a corpus that does not exist connects, then fails on every call."""
        try:
            corpus_get(name)
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:
            self.stderr.write(f"could not check that corpus {name!r} exists ({exc}); printing it anyway")
