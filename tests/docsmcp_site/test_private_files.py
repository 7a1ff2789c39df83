"""What an installation writes for itself (SQLite database, secret key, task queue, var/) is private to
its account, whatever the umask it was started with."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")}
    environment.update(env)
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=environment, umask=0o022,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_a_new_sqlite_database_secret_key_and_task_queue_are_created_private(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    manage("migrate", "--noinput", env={
        "DATABASE_URL": f"sqlite:///{data / 'docsmcp.sqlite3'}",
        "DOCSMCP_SECRET_KEY_FILE": str(tmp_path / "keys" / "secret_key"),
        "DOCSMCP_CELERY_DIR": str(tmp_path / "celery"),
    })
    assert mode(data / "docsmcp.sqlite3") == 0o600
    assert mode(tmp_path / "keys" / "secret_key") == 0o600
    assert mode(tmp_path / "keys") == 0o700
    for folder in (tmp_path / "celery", tmp_path / "celery" / "queue"):
        assert mode(folder) == 0o700


@pytest.mark.slow
def test_a_var_directory_and_database_left_readable_by_an_earlier_version_are_tightened(tmp_path):
    database = tmp_path / "old.sqlite3"
    database.touch()
    database.chmod(0o644)
    var = ROOT / "var"
    var.chmod(0o755)
    manage("check", env={"DATABASE_URL": f"sqlite:///{database}", "DOCSMCP_CELERY_DIR": str(tmp_path / "celery")})
    assert mode(database) == 0o600
    assert mode(var) == 0o700
