"""Where an installation keeps its state: the database, indexes, caches, the task queue, its secret key.

An installed package must not write into site-packages or into whatever directory it was started
from, so its state goes to the platform's user data directory. A checkout keeps its own `var/` so
development, the test suite and `scripts/demo.sh` stay self-contained. `DOCSMCP_HOME` overrides both.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

APP_NAME = "docsmcp"


def is_checkout(base_dir: Path) -> bool:
    """True when the code runs from a source tree (manage.py beside pyproject.toml), not an installed wheel."""
    return (base_dir / "manage.py").is_file() and (base_dir / "pyproject.toml").is_file()


def user_data_dir(environ: Mapping[str, str] = os.environ, platform: str = sys.platform) -> Path:
    """The per-user data directory the platform's conventions name (what `platformdirs` would answer)."""
    home = Path(environ.get("HOME") or Path.home())
    if platform.startswith("win"):
        base = environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / APP_NAME
    if platform == "darwin":
        return home / "Library" / "Application Support" / APP_NAME
    xdg = environ.get("XDG_DATA_HOME", "")
    # The XDG spec ignores a relative XDG_DATA_HOME.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share"
    return base / APP_NAME


def data_home(base_dir: Path, environ: Mapping[str, str] = os.environ, platform: str = sys.platform) -> Path:
    """DOCSMCP_HOME when set; else `var/` of a checkout; else the user data directory."""
    explicit = environ.get("DOCSMCP_HOME", "").strip()
    if explicit:
        return Path(explicit).expanduser().resolve()
    if is_checkout(base_dir):
        return base_dir / "var"
    return user_data_dir(environ, platform)
