import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Serve the site (MCP at /mcp/) with gunicorn on MCP_SERVER_HOST:MCP_SERVER_PORT "
        "(default 0.0.0.0:8001), several stateless workers."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.MCP_SERVER_HOST)
        parser.add_argument("--port", type=int, default=settings.MCP_SERVER_PORT)
        parser.add_argument(
            "--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", 2 * (os.cpu_count() or 1)))
        )
        parser.add_argument("--threads", type=int, default=4)

    def handle(self, *args, **options):
        argv = [
            sys.executable,
            "-m",
            "gunicorn",
            "docsmcp_site.wsgi:application",
            "--bind",
            f"{options['host']}:{options['port']}",
            "--workers",
            str(options["workers"]),
            "--threads",
            str(options["threads"]),
            "--access-logfile",
            "-",
            "--timeout",
            "60",
        ]
        self.stdout.write(
            f"serving on http://{options['host']}:{options['port']}/mcp/ ({options['workers']} workers)"
        )
        sys.stdout.flush()
        os.execv(sys.executable, argv)
