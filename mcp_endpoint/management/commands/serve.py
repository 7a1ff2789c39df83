import ipaddress
import os
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


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
        "(default 127.0.0.1:8001), each request received whole before a thread takes it; without CELERY_BROKER_URL also runs one Celery worker beside it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.MCP_SERVER_HOST)
        parser.add_argument("--port", type=int, default=settings.MCP_SERVER_PORT)
        parser.add_argument("--workers", type=int, default=default_workers(settings.WEB_CONCURRENCY))
        parser.add_argument("--threads", type=int, default=4, help="request threads per worker (default 4)")
        parser.add_argument("--no-worker", action="store_true",
                            help="do not start a Celery worker (you run `celery -A common worker` yourself)")

    def handle(self, *args, **options):
        host, port = options["host"], options["port"]
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
        self.stdout.write(f"serving on http://{host}:{port}/mcp/ ({options['workers']} workers"
                          f"{', and a Celery worker' if with_worker else ''})")
        sys.stdout.flush()
        if with_worker:
            worker = [sys.executable, "-m", "celery", "-A", "common", "worker", "--loglevel", "INFO",
                      "--without-gossip", "--without-mingle", "--without-heartbeat"]
            raise SystemExit(run_together(web, worker, background=worker))
        os.execv(sys.executable, web)


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


def run_together(*commands: list[str], background: list[str] | None = None) -> int:
    """Run the commands as children; when one exits or serve is told to stop, stop the others.

    The `background` command runs at a lower CPU priority (WORKER_NICENESS). Returns the exit status
    of the first child that ended (0 after a SIGTERM or Ctrl-C).
    """
    children = [
        subprocess.Popen(command, preexec_fn=_lower_priority if command is background else None)
        for command in commands
    ]
    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        stopping = True
        for child in children:
            if child.poll() is None:
                child.terminate()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        first = os.waitstatus_to_exitcode(os.waitpid(-1, 0)[1])
        stop(None, None)
        for child in children:
            try:
                child.wait(timeout=40)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        return 0 if stopping else first
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _lower_priority() -> None:
    os.nice(WORKER_NICENESS)
