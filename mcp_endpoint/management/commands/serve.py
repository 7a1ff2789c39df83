import ipaddress
import os
import shlex
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from common.home import is_checkout
from common.supervise import Spec
from mcp_endpoint.clients import SERVER_NAME, default_python
from mcp_endpoint.folder import FolderError, checked_folder, prepare_folder

# gunicorn's --env for the directory where warm workers say so (docsmcp_site/gunicorn_conf.py), which
# serve's supervising process counts to show progress.
WARM_DIR_ENV = "DOCSMCP_SERVE_WARM_DIR"


def default_workers(configured: int = 0) -> int:
    """`configured` (the WEB_CONCURRENCY setting), else one per core plus one: each worker holds its
    own copy of the active indexes, which is what bounds how many a host can run; threads within a
    worker share that copy."""
    return configured or (os.cpu_count() or 1) + 1


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str) -> str:
    return (f"WARNING: serving on {host}, which other machines can reach, with MCP_AUTH_REQUIRED off: "
            "anyone who can reach this port can search and read every corpus over /mcp/ and /api/v1/ "
            "without a key. Set MCP_AUTH_REQUIRED=true (and create keys with `manage.py mcp_apikey`), "
            "or bind 127.0.0.1 behind a reverse proxy; see docs/deploy.md.")


class Command(BaseCommand):
    help = (
        "Serve the site (MCP at /mcp/) with gunicorn threaded workers on MCP_SERVER_HOST:MCP_SERVER_PORT "
        "(default 127.0.0.1:8001), each request received whole before a thread takes it; without CELERY_BROKER_URL "
        "also runs one Celery worker beside it. Given PATH, a folder of markdown, first registers it as a corpus "
        "named after the folder and builds what changed since the last run. Prints the MCP endpoint once the "
        "server answers."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", metavar="PATH",
                            help="a folder of markdown to build and serve (at /mcp/c/<folder name>/); "
                                 "without it, every registered corpus is served")
        parser.add_argument("--host", default=settings.MCP_SERVER_HOST,
                            help=f"address to listen on (MCP_SERVER_HOST, default {settings.MCP_SERVER_HOST})")
        parser.add_argument("--port", type=int, default=settings.MCP_SERVER_PORT,
                            help=f"port to listen on (MCP_SERVER_PORT, default {settings.MCP_SERVER_PORT})")
        parser.add_argument("--workers", type=int, default=default_workers(settings.WEB_CONCURRENCY),
                            help="web worker processes (WEB_CONCURRENCY, default one per core plus one)")
        parser.add_argument("--threads", type=int, default=4, help="request threads per worker (default 4)")
        parser.add_argument("--strict", action="store_true",
                            help="with PATH: any error in the folder fails the build (for CI); by default pages "
                                 "with errors are left out and the rest is served")
        parser.add_argument("--no-worker", action="store_true",
                            help="do not start a Celery worker (you run `celery -A common worker` yourself)")

    def handle(self, *args, **options):
        host, port = options["host"], options["port"]
        corpus = None
        if options["path"]:
            try:
                folder = checked_folder(options["path"])
                corpus = prepare_folder(folder, self.stdout, "serve", strict=options["strict"])
            except FolderError as exc:
                raise CommandError(str(exc)) from exc
        if not is_loopback(host) and not settings.MCP_AUTH_REQUIRED:
            self.stderr.write(exposure_warning(host))
        if not (settings.STATIC_ROOT / "admin" / "css" / "base.css").exists():
            call_command("collectstatic", interactive=False, verbosity=0)
        # Threaded WSGI workers (against uvicorn's ASGI workers they add 4 ms less to each call and serve
        # 60% more calls per second at 8 clients), whose event loop receives each request whole before a
        # thread takes it, so slow clients cost a socket, not a thread (docsmcp_site/front.py,
        # docs/BENCHMARKS.md).
        web = [sys.executable, "-m", "gunicorn", "docsmcp_site.wsgi:application",
               "--worker-class", "docsmcp_site.front.BufferingThreadWorker", "--threads", str(options["threads"]), "--bind", f"{host}:{port}",
               "--workers", str(options["workers"]), "--access-logfile", "-", "--timeout", "60",
               "--graceful-timeout", "30", "--no-control-socket",
               "--config", "python:docsmcp_site.gunicorn_conf", *access_log_arguments()]
        if not is_loopback(host) and settings.OAUTH2_PROVIDER["DCR_ENABLED"] and not settings.DOCSMCP_OAUTH_EXPLICIT:
            # Registration is on by default only on loopback: --host decides here, not MCP_SERVER_HOST.
            web += ["--env", "DOCSMCP_OAUTH_REGISTRATION=false"]
            self.stderr.write("OAuth dynamic client registration is off on a non-loopback address "
                              "(DOCSMCP_OAUTH_REGISTRATION=true turns it on)\n")
        with_worker = (settings.CELERY_BROKER_URL == "filesystem://" and not settings.CELERY_TASK_ALWAYS_EAGER
                       and not options["no_worker"])
        self.stdout.write(f"starting the server on {host}:{port} ({options['workers']} workers"
                          f"{', and a Celery worker' if with_worker else ''}); its URL follows once it answers")
        commands = [web]
        if with_worker:
            commands.append([sys.executable, "-m", "celery", "-A", "common", "worker", "--loglevel", "INFO",
                             "--without-gossip", "--without-mingle", "--without-heartbeat"])
        base = f"http://{reachable(host)}:{port}"
        url = f"{base}/mcp/c/{corpus}/" if corpus else f"{base}/mcp/"
        spec = Spec(commands=commands, background=1 if with_worker else None, health_url=f"{base}/health/",
                    workers=options["workers"], warm_env=WARM_DIR_ENV, banner=banner(url))
        sys.stdout.flush()
        sys.stderr.flush()
        # The build's and the site's memory and threads end here: what stays is the standard library.
        os.execv(sys.executable, spec.to_argv(sys.executable))


def reachable(host: str) -> str:
    """The address a client on this machine uses for a server bound to `host`."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


# gunicorn's access log line without the query string (%(U)s is the path alone) nor the referrer (whose
# URL may carry one): what DOCSMCP_QUERY_LOG=no-text writes, since a REST search's query is free text.
PATH_ONLY_ACCESS_LOG = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'


def access_log_arguments() -> list[str]:
    """gunicorn's access-log options: its default line, or in no-text mode one without query strings."""
    from corpus import querylog

    if querylog.mode() == querylog.FULL:
        return []
    return ["--access-logformat", PATH_ONLY_ACCESS_LOG]


# How much lower than the web server's the CPU priority of serve's Celery worker is: on a small host
# its start-up and its builds share the cores with searches, and a search should not wait for them.
WORKER_NICENESS = 10


def banner(url: str) -> str:
    """What serve prints once the server answers: the endpoint, and how to point an agent at it."""
    key = " --auth key" if settings.MCP_AUTH_REQUIRED else ""
    setup = (f"{default_python(settings.BASE_DIR, sys.executable)} {settings.BASE_DIR / 'manage.py'} setup"
             if is_checkout(settings.BASE_DIR) else "docsmcp setup")
    words = ["claude", "mcp", "add", "--transport", "http", SERVER_NAME, url]
    if settings.MCP_AUTH_REQUIRED:
        words += ["--header", "Authorization: Bearer YOUR_API_KEY"]
    return (f"\nMCP endpoint:  {url}\n"
            f"Set up agents: {setup} CLIENT --url {url}{key}   (clients: {setup} --list)\n"
            f"Claude Code:   {shlex.join(words)}\n")
