"""Configuration snippets that connect MCP clients to this checkout, by stdio or by HTTP.

`manage.py mcp_config` prints them filled in; docs/clients.md shows the same shapes with
placeholders. Each client names its servers under its own key (`mcpServers`, or `servers`
in VS Code) and spells the transport its own way, which is all that differs here.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")
SERVER_NAME = "docsmcp"
KEY_PLACEHOLDER = "Bearer <API key from `manage.py mcp_apikey create NAME`>"


@dataclass(frozen=True)
class Launch:
    """How to reach the server: the stdio command line, or the HTTP URL (and whether it needs a key)."""

    python: str
    manage: str
    corpus: str | None = None
    profile: str | None = None
    env: dict[str, str] | None = None
    http_url: str | None = None
    needs_key: bool = False

    @property
    def args(self) -> list[str]:
        # An installed package has no manage.py: `python` is then the `docsmcp` command itself.
        args = [self.manage, "mcp_stdio"] if self.manage else ["mcp_stdio"]
        if self.profile:
            args += ["--profile", self.profile]
        if self.corpus:
            args += ["--corpus", self.corpus]
        return args


def endpoint_url(base: str, corpus: str | None = None, profile: str | None = None) -> str:
    """`base` as the MCP endpoint: a bare origin gets /mcp/c/<corpus>/, /mcp/<profile>/ or /mcp/;
    a URL that already names a path is kept."""
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--http needs an http(s) URL such as http://127.0.0.1:8001, got {base!r}")
    path = parts.path
    if path in ("", "/"):
        path = f"/mcp/c/{corpus}/" if corpus else f"/mcp/{profile}/" if profile else "/mcp/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def default_python(base_dir: Path, running: str) -> str:
    """The checkout's venv python (what a client should spawn), else the interpreter running now."""
    venv = base_dir / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else running


# Where each client reads the printed JSON from.
CONFIG_FILES = {
    "claude-desktop": "claude_desktop_config.json (Claude Desktop: Settings > Developer > Edit Config), "
                      "then restart Claude Desktop",
    "claude-code": ".mcp.json at the project root (or run the `claude mcp add` line instead)",
    "cursor": "~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project)",
    "vscode": ".vscode/mcp.json in the workspace",
}


def claude_mcp_add(launch: Launch) -> str:
    """The `claude mcp add` command line that registers the same server with Claude Code."""
    if launch.http_url:
        words = ["claude", "mcp", "add", "--transport", "http", SERVER_NAME, launch.http_url]
        if launch.needs_key:
            words += ["--header", "Authorization: Bearer YOUR_API_KEY"]
    else:
        words = ["claude", "mcp", "add", SERVER_NAME]
        for name, value in (launch.env or {}).items():
            words += ["-e", f"{name}={value}"]
        words += ["--", launch.python, *launch.args]
    return shlex.join(words)


def client_config(client: str, launch: Launch) -> dict[str, Any]:
    """The JSON a client reads to reach docsmcp (claude-code: its project `.mcp.json`)."""
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; choose from {', '.join(CLIENTS)}")
    server = _http(client, launch) if launch.http_url else _stdio(client, launch)
    key = "servers" if client == "vscode" else "mcpServers"
    return {key: {SERVER_NAME: server}}


def _stdio(client: str, launch: Launch) -> dict[str, Any]:
    server: dict[str, Any] = {"command": launch.python, "args": launch.args}
    if client in ("vscode", "claude-code"):
        server = {"type": "stdio", **server}
    if launch.env:
        server["env"] = dict(launch.env)
    return server


def _http(client: str, launch: Launch) -> dict[str, Any]:
    url = launch.http_url or ""
    headers = {"Authorization": KEY_PLACEHOLDER} if launch.needs_key else {}
    if client == "claude-desktop":
        # Claude Desktop's config file starts local processes only; mcp-remote bridges to HTTP.
        args = ["-y", "mcp-remote", url]
        for name, value in headers.items():
            args += ["--header", f"{name}: {value}"]
        return {"command": "npx", "args": args}
    server: dict[str, Any] = {"url": url}
    if client in ("vscode", "claude-code"):
        server = {"type": "http", **server}
    if headers:
        server["headers"] = headers
    return server


def docsmcp_command() -> str:
    """The absolute path of this installation's `docsmcp` command: what a client's configuration spawns."""
    running = Path(sys.argv[0])
    if running.name == "docsmcp" and running.exists():
        return os.path.abspath(running)
    beside = Path(sys.executable).with_name("docsmcp")
    return str(beside) if beside.exists() else shutil.which("docsmcp") or "docsmcp"


def in_uv_cache(path: str | Path, cache_dirs: list[Path] | None = None) -> bool:
    """Whether `path` lies in uv's cache, where `uvx` keeps the environments it runs from: uv may remove
    one at any time (`uv cache clean`, `uv cache prune`, a new version), so a client must not spawn it."""
    resolved = Path(path).expanduser()
    if any(part in ("archive-v0", "builds-v0", "environments-v1", "environments-v2") for part in resolved.parts):
        return True
    for cache in cache_dirs if cache_dirs is not None else uv_cache_dirs():
        try:
            resolved.relative_to(cache)
            return True
        except ValueError:
            continue
    return False


def uv_cache_dirs() -> list[Path]:
    found = [Path(os.environ["UV_CACHE_DIR"])] if os.environ.get("UV_CACHE_DIR") else []
    home = Path.home()
    return found + [home / ".cache" / "uv", home / "Library" / "Caches" / "uv", home / "AppData" / "Local" / "uv" / "cache"]


def installed_from() -> str | None:
    """The wheel or source this installation came from, as pip and uv record it (PEP 610's direct_url.json):
    a local file path, another URL, or None for a package index (then `docsmcp==VERSION` names it)."""
    import json
    from importlib import metadata
    from urllib.parse import unquote

    try:
        text = metadata.distribution("docsmcp").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    url = json.loads(text).get("url", "")
    if url.startswith("file://"):
        return unquote(urlsplit(url).path)
    return url or None


def lasting_launcher(command: str, version: str, source: str | None) -> list[str]:
    """The command line a client's configuration spawns docsmcp with, that works as long as docsmcp stays
    installed: `command` (an installed `docsmcp`) unless it runs from uv's cache, then `uvx --from SOURCE docsmcp`,
    SOURCE the wheel it came from, else this version on the package index."""
    if not in_uv_cache(command):
        return [command]
    return ["uvx", "--from", source or f"docsmcp=={version}", "docsmcp"]
