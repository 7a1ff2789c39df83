"""An S3-compatible server on a loopback port for the object-store tests: moto's standalone server.

Checked before choosing it: a PUT with `If-None-Match: *` on an existing key answers 412, which
is how Lance commits a new table version without overwriting a concurrent writer's; LanceDB
creates, appends to, deletes from and indexes tables on it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ACCESS = {"aws_access_key_id": "docsmcp-test", "aws_secret_access_key": "docsmcp-test-secret", "region": "us-east-1"}
BUCKET = "docsmcp-tests"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(log: Path) -> tuple[subprocess.Popen, str]:
    """Starts the server and creates the test bucket; returns the process and its endpoint URL."""
    port = free_port()
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(endpoint, timeout=2).close()
            break
        except urllib.error.HTTPError:
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the S3 test server did not start; see {log}") from None
            time.sleep(0.2)
    request = urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT")
    urllib.request.urlopen(request, timeout=10).close()
    return process, endpoint


def options(endpoint: str) -> dict[str, str]:
    return {"endpoint": endpoint, "allow_http": "true", **ACCESS}


def environment(endpoint: str) -> dict[str, str]:
    """The variables a web node or worker needs to reach the server."""
    return {"DOCSMCP_STORAGE_OPTIONS": json.dumps(options(endpoint))}


def new_root() -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
