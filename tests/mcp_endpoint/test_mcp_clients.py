"""Client setup: docs/clients.md snippets parse and point at things that exist; `manage.py mcp_config`
prints working configurations for this checkout."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command, get_commands
from django.urls import Resolver404, resolve

from docsmcp_site.commands import ALIASES
from mcp_endpoint.clients import CLIENTS
from tests.conftest import ROOT

CLIENTS_MD = ROOT / "docs" / "clients.md"


def _json_blocks(text: str) -> list[str]:
    return re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)


def _servers(config: dict) -> list[dict]:
    (key,) = config
    assert key in ("mcpServers", "servers")
    return list(config[key].values())


def _check_server(server: dict) -> str:
    """What the server entry reaches, checked to exist: 'stdio' or 'http'."""
    urls = [v for v in [server.get("url"), *server.get("args", [])] if isinstance(v, str) and v.startswith("http")]
    if urls:
        for url in urls:
            try:
                resolve(urlsplit(url).path)
            except Resolver404:
                pytest.fail(f"{url} names no route in the urlconf")
        return "http"
    args = server["args"]
    if Path(server["command"]).name == "docsmcp":  # the installed package's command (docsmcp_site/cli.py)
        assert ALIASES.get(args[0], args[0]) in get_commands(), args
        return "stdio"
    assert Path(server["command"]).name.startswith("python")
    assert Path(args[0]).name == "manage.py"
    assert args[1] in get_commands(), args
    return "stdio"


def test_every_json_snippet_in_clients_md_parses_and_names_what_exists():
    blocks = _json_blocks(CLIENTS_MD.read_text())
    assert len(blocks) >= 10
    kinds = []
    for block in blocks:
        config = json.loads(block)
        kinds += [_check_server(server) for server in _servers(config)]
    assert kinds.count("stdio") >= 5 and kinds.count("http") >= 5
    for command in re.findall(r"manage\.py (\w+)", CLIENTS_MD.read_text()):
        assert command in get_commands(), command


def _config(*args: str, stderr: io.StringIO | None = None) -> dict:
    out = io.StringIO()
    call_command("mcp_config", *args, stdout=out, stderr=stderr or io.StringIO())
    return json.loads(out.getvalue())


@pytest.fixture
def registered_sample(db):
    from corpus.models import Corpus

    return Corpus.objects.create(name="sample", source_dir="/nonexistent")


@pytest.mark.parametrize("client", CLIENTS)
def test_mcp_config_stdio_names_this_checkout(client, registered_sample):
    (server,) = _servers(_config("--client", client, "--corpus", "sample", "--profile", "documents"))
    assert _check_server(server) == "stdio"
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()
    assert server["args"] == [str(ROOT / "manage.py"), "mcp_stdio", "--profile", "documents", "--corpus", "sample"]
    assert server.get("type", "stdio") == "stdio"


@pytest.mark.parametrize("client", CLIENTS)
def test_mcp_config_http_fills_in_the_endpoint_and_the_key_when_auth_is_on(client, settings, registered_sample):
    settings.MCP_AUTH_REQUIRED = True
    (server,) = _servers(_config("--client", client, "--http", "http://127.0.0.1:8001", "--corpus", "sample"))
    assert _check_server(server) == "http"
    text = json.dumps(server)
    assert "http://127.0.0.1:8001/mcp/c/sample/" in text and "Authorization" in text and "Bearer " in text
    settings.MCP_AUTH_REQUIRED = False
    (server,) = _servers(_config("--client", client, "--http", "http://127.0.0.1:8001"))
    assert "http://127.0.0.1:8001/mcp/" in json.dumps(server) and "Authorization" not in json.dumps(server)


def test_mcp_config_refuses_an_unknown_corpus_and_lists_the_corpora(registered_sample):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="corpus 'nosuch' not found; available: sample"):
        _config("--corpus", "nosuch")


@pytest.mark.parametrize("client, where", [
    ("claude-desktop", "claude_desktop_config.json"), ("claude-code", ".mcp.json"),
    ("cursor", ".cursor/mcp.json"), ("vscode", ".vscode/mcp.json"),
])
def test_mcp_config_says_which_file_the_configuration_goes_in(client, where, registered_sample):
    notes = io.StringIO()
    _config("--client", client, "--corpus", "sample", stderr=notes)
    assert notes.getvalue().startswith("Put this in ") and where in notes.getvalue().splitlines()[0]


def test_mcp_config_prints_the_claude_mcp_add_line_for_claude_code(registered_sample, settings):
    import shlex

    notes = io.StringIO()
    (server,) = _servers(_config("--client", "claude-code", "--corpus", "sample", stderr=notes))
    (line,) = [s.strip() for s in notes.getvalue().splitlines() if s.strip().startswith("claude mcp add")]
    words = shlex.split(line)
    assert words[:4] == ["claude", "mcp", "add", "docsmcp"]
    assert words[words.index("--") + 1:] == [server["command"], *server["args"]]
    settings.MCP_AUTH_REQUIRED = True
    notes = io.StringIO()
    _config("--client", "claude-code", "--http", "http://127.0.0.1:8001", stderr=notes)
    (line,) = [s.strip() for s in notes.getvalue().splitlines() if s.strip().startswith("claude mcp add")]
    assert shlex.split(line) == ["claude", "mcp", "add", "--transport", "http", "docsmcp",
                                 "http://127.0.0.1:8001/mcp/", "--header", "Authorization: Bearer YOUR_API_KEY"]


def test_mcp_config_refuses_a_url_that_is_not_http():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="http"):
        _config("--http", "127.0.0.1:8001")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_printed_stdio_configuration_starts_a_server_that_answers(sample_corpus, settings, monkeypatch):
    from django.db import connection

    from tests.corpus.test_celery_worker import _database_url

    if connection.vendor != "postgresql":
        pytest.skip("the stdio subprocess needs PostgreSQL (set DATABASE_URL) to share the test database")
    monkeypatch.setenv("DATABASE_URL", _database_url())
    monkeypatch.setenv("DOCSMCP_INDEX_ROOT", str(settings.DOCSMCP_INDEX_ROOT))
    (server,) = _servers(_config("--client", "cursor"))
    assert server["env"]["DATABASE_URL"] == _database_url()
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    done = subprocess.run([server["command"], *server["args"]], input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=120, cwd="/",
                          env={**os.environ, **server["env"]})
    reply = json.loads(done.stdout)
    assert [t["name"] for t in reply["result"]["tools"]] == ["search_docs", "get_doc", "docs_feedback"]
