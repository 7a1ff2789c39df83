"""The wheel installs a `docsmcp` command that serves a folder of markdown with no checkout around.

The wheel is built from this checkout and installed into a fresh venv (no pip, no checkout on its path)
that borrows the already-installed dependencies through a .pth file, so nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import httpx
import pytest

from common.home import data_home, user_data_dir
from docsmcp_site import __version__

ROOT = Path(__file__).resolve().parents[2]
ACCEPT = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def _not_packaged(folder: str, names: list[str]) -> set[str]:
    top = Path(folder) == ROOT and {".git", ".venv", "node_modules", "var", "test-artifacts", "build", "dist", "tests",
                                     "bench", "conformance", ".ci", ".hypothesis", ".ruff_cache"}
    return {name for name in names if name == "__pycache__" or name.endswith(".egg-info") or (top and name in top)}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed; its bin/ directory."""
    tmp = tmp_path_factory.mktemp("package")
    # Built from a copy: pip builds in the source tree, and two test processes must not share one.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=_not_packaged)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(tmp / "dist")], check=True, capture_output=True)
    wheel = next((tmp / "dist").glob("docsmcp-*-py3-none-any.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_docsmcp_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True)
    return venv / "bin"


@pytest.fixture
def user_env(tmp_path) -> dict[str, str]:
    """A user's environment: no settings of this checkout or its tests, state under tmp_path/home."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("DOCSMCP_", "DJANGO_", "DATABASE_", "CELERY_", "MCP_", "PYTHON"))}
    env["DOCSMCP_HOME"] = str(tmp_path / "home")
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_url(process: subprocess.Popen) -> str:
    for line in process.stdout:
        if line.startswith("MCP endpoint:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"docsmcp serve exited ({process.wait()}) without printing the MCP endpoint")


@pytest.mark.slow
def test_docsmcp_serve_path_builds_and_serves_a_folder_from_an_empty_directory(installed, user_env, tmp_path):
    docs = tmp_path / "My Docs"
    shutil.copytree(ROOT / "corpus" / "sample_docs" / "guides", docs)
    cwd = tmp_path / "empty"
    cwd.mkdir()
    port = free_port()
    log = tmp_path / "serve.log"  # what the server said, kept for a failing run
    with open(log, "w") as stderr:
        process = subprocess.Popen([installed / "docsmcp", "serve", str(docs), "--port", str(port), "--workers", "1"],
                                   cwd=cwd, env=user_env, stdout=subprocess.PIPE, stderr=stderr,
                                   text=True, start_new_session=True)
    try:
        url = wait_for_url(process)
        assert url == f"http://127.0.0.1:{port}/mcp/c/my-docs/"
        # printed once the server answers, not before: no waiting from here on
        assert httpx.get(f"http://127.0.0.1:{port}/health/", timeout=10).status_code == 200
        init = httpx.post(url, headers=ACCEPT, timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert init.json()["result"]["serverInfo"]["name"] == "docsmcp"
        search = httpx.post(url, headers=ACCEPT, timeout=30, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": "authenticate with an API key"}}})
        hits = json.loads(search.json()["result"]["content"][0]["text"])["hits"]
        assert hits[0]["chunk_id"].startswith("authentication.md#")
        admin_css = httpx.get(f"http://127.0.0.1:{port}/static/admin/css/base.css", timeout=10)
        assert admin_css.status_code == 200
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)
    assert list(cwd.iterdir()) == []
    home = Path(user_env["DOCSMCP_HOME"])
    assert (home / "docsmcp.sqlite3").exists() and (home / "indexes" / "my-docs").is_dir()

    # A client that spawns the server: stdout carries JSON-RPC only, though the folder is checked again.
    stdio = subprocess.run([installed / "docsmcp", "stdio", str(docs)], cwd=cwd, env=user_env, text=True,
                           capture_output=True, timeout=120, input=json.dumps(
                               {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                                   "protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}}}) + "\n")
    assert [json.loads(line)["id"] for line in stdio.stdout.splitlines()] == [1], stdio.stderr
    assert "corpus my-docs: up to date, nothing to build" in stdio.stderr
    assert list(cwd.iterdir()) == []


@pytest.mark.slow
def test_every_management_command_is_a_docsmcp_command(installed, user_env, tmp_path):
    result = subprocess.run([installed / "docsmcp", "build_index", "--help"], cwd=tmp_path, env=user_env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: docsmcp build_index") and "--source" in result.stdout
    version = subprocess.run([installed / "docsmcp", "--version"], env=user_env, capture_output=True, text=True)
    assert version.stdout.strip() == f"docsmcp {__version__}"
    config = subprocess.run([installed / "docsmcp", "mcp_config", "--client", "cursor"], cwd=tmp_path,
                            env=user_env, capture_output=True, text=True, timeout=120)
    assert json.loads(config.stdout)["mcpServers"]["docsmcp"] == {
        "command": str(installed / "docsmcp"), "args": ["mcp_stdio"], "env": {"DOCSMCP_HOME": user_env["DOCSMCP_HOME"]}}


@pytest.mark.slow
def test_a_path_that_is_not_a_folder_is_one_clear_line(installed, user_env, tmp_path):
    result = subprocess.run([installed / "docsmcp", "serve", str(tmp_path / "nosuch")], cwd=tmp_path,
                            env=user_env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip() == f"docsmcp: {tmp_path / 'nosuch'} is not a directory; give the folder that holds your markdown files"


def test_state_goes_to_docsmcp_home_else_the_checkouts_var_else_the_user_data_directory(tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "manage.py").touch()
    (checkout / "pyproject.toml").touch()
    installed_base = tmp_path / "site-packages"
    installed_base.mkdir()
    home = {"HOME": "/home/ana"}
    assert data_home(checkout, home) == checkout / "var"
    assert data_home(checkout, {**home, "DOCSMCP_HOME": str(tmp_path / "h")}) == tmp_path / "h"
    assert data_home(installed_base, home, "linux") == Path("/home/ana/.local/share/docsmcp")
    assert data_home(installed_base, {**home, "XDG_DATA_HOME": "/data"}, "linux") == Path("/data/docsmcp")
    assert user_data_dir(home, "darwin") == Path("/home/ana/Library/Application Support/docsmcp")
    assert user_data_dir({**home, "LOCALAPPDATA": "C:/Users/ana/AppData/Local"}, "win32") == \
        Path("C:/Users/ana/AppData/Local/docsmcp")


@pytest.mark.slow
def test_setup_writes_the_installed_command_for_a_client_to_start(installed, user_env, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "corpus" / "sample_docs" / "guides", docs)
    project = tmp_path / "project"
    project.mkdir()
    result = subprocess.run([installed / "docsmcp", "setup", "cursor", "--folder", str(docs)], cwd=project,
                            env=user_env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    entry = json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]["docsmcp"]
    assert entry == {"command": str(installed / "docsmcp"), "args": ["stdio", str(docs)],
                     "env": {"DOCSMCP_HOME": user_env["DOCSMCP_HOME"]}}
    help_text = subprocess.run([installed / "docsmcp", "--help"], env=user_env, capture_output=True, text=True)
    assert "setup CLIENT" in help_text.stdout and "startproject" not in help_text.stdout
