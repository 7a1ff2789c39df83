"""`manage.py serve` in a subprocess on the test database, for tests of what only a real server shows
(its worker processes, their memory, their warming)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.corpus.test_celery_worker import _database_url
from tests.docsmcp_site.test_deploy_e2e import free_port, stop

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Served:
    base: str
    server: subprocess.Popen
    log: Path


@contextmanager
def serve_subprocess(tmp_path: Path, *, workers: int, **env: str) -> Iterator[Served]:
    """serve (no Celery worker) until /health/ answers 200, the `sample` corpus the default; stopped after."""
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "MCP_"))}
    environment.update(DJANGO_SETTINGS_MODULE="docsmcp_site.settings", DATABASE_URL=_database_url(),
                       DOCSMCP_SECRET_KEY_FILE=str(tmp_path / "secret_key"), DOCSMCP_INDEX_ROOT=str(tmp_path / "idx"),
                       MCP_RATE_LIMIT_REDIS_URL="", DOCSMCP_DEFAULT_CORPUS="sample", **env)
    log = tmp_path / "serve.log"
    with log.open("wb") as output:
        server = subprocess.Popen([sys.executable, "manage.py", "serve", "--no-worker", "--port", str(port),
                                   "--workers", str(workers)], cwd=ROOT, env=environment, stdout=output,
                                  stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{base}/health/", timeout=30).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.25)
        yield Served(base, server, log)
    finally:
        stop(server)
