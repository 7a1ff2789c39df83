import contextlib
import os
import sys

from django.core.management.base import BaseCommand, CommandError

from mcp_endpoint import profiles
from mcp_endpoint.folder import FolderError, checked_folder, prepare_folder, stdout_to_stderr
from mcp_endpoint.profiles import registry
from mcp_endpoint.stdio import StdioSession, serve


class Command(BaseCommand):
    # `manage.py check` is the place for system checks: here they would import every URL's views
    # (the REST API's schemas) before the first line of work
    requires_system_checks = []
    help = (
        "Speak MCP over stdin/stdout (newline-delimited JSON-RPC) for a local client that spawns "
        "the server; logs go to stderr. Runs as the local operator (every scope)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", metavar="PATH",
                            help="a folder of markdown to build (what changed since the last run) and serve as "
                                 "the corpus named after it")
        parser.add_argument("--profile", default=profiles.DEFAULT_PROFILE, choices=registry.profile_names())
        parser.add_argument("--corpus", default=None, help="Serve this corpus (default: the default corpus).")
        parser.add_argument("--strict", action="store_true",
                            help="with PATH: any error in the folder fails the build (for CI); by default pages "
                                 "with errors are left out and the rest is served")

    def handle(self, *args, **options):
        if options["path"]:
            with stdout_to_stderr():
                try:
                    options["corpus"] = prepare_folder(checked_folder(options["path"]), sys.stderr, "stdio",
                                                       strict=options["strict"])
                except FolderError as exc:
                    raise CommandError(str(exc)) from exc
        # The protocol owns stdout: keep a private handle on it, then point fd 1 (print, C
        # libraries, Django's own output) at stderr so nothing else can corrupt the stream.
        protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", newline="\n")
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        sys.stdout = sys.stderr
        session = StdioSession(options["profile"], options["corpus"])
        try:
            session.check_corpus()
        except profiles.UnknownCorpus as exc:
            raise CommandError(str(exc)) from exc
        with contextlib.suppress(KeyboardInterrupt):
            serve(session, sys.stdin.buffer, protocol_out)
