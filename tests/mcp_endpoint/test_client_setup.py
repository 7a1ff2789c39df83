"""`docsmcp setup CLIENT` merges docsmcp into each client's own configuration file, in the format that
client documents (tests/fixtures/clients/: a file as the client's documentation shows one, with other
servers and settings), keeps the old file, and writes a usage rule the agent reads."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mcp_endpoint.client_files import CLIENT_FILES, RULE_BEGIN, RULE_END
from mcp_endpoint.clients import in_uv_cache, lasting_launcher
from tests.conftest import ROOT

FIXTURES = Path(__file__).parent.parent / "fixtures" / "clients"
URL = "http://127.0.0.1:8001/mcp/c/sample/"
# Per client, as its documentation spells it: the key its servers sit under, the key of an HTTP server's URL,
# the fields it wants beside it, and how a header takes the key from the environment variable.
DOCUMENTED = {
    "claude-code": ("mcpServers", "url", {"type": "http"}, "Bearer ${DOCSMCP_API_KEY}"),
    "cursor": ("mcpServers", "url", {}, "Bearer ${env:DOCSMCP_API_KEY}"),
    "vscode": ("servers", "url", {"type": "http"}, "Bearer ${input:docsmcp-api-key}"),
    "codex": ("mcp_servers", "url", {}, None),  # bearer_token_env_var: Codex refuses a token in the file
    "gemini": ("mcpServers", "httpUrl", {}, "Bearer $DOCSMCP_API_KEY"),
    "windsurf": ("mcpServers", "serverUrl", {}, "Bearer ${env:DOCSMCP_API_KEY}"),
}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    found = tmp_path / "home"
    found.mkdir()
    monkeypatch.setenv("HOME", str(found))
    return found


@pytest.fixture
def project(tmp_path) -> Path:
    found = tmp_path / "project"
    found.mkdir()
    return found


def setup(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("setup", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _fixture(client: str) -> Path:
    return FIXTURES / (f"{client}.toml" if client == "codex" else f"{client}.json")


def _where(client: str, project: Path, home: Path) -> Path:
    spec = CLIENT_FILES[client]
    return project / spec.project if spec.project else home / spec.user


def _load(path: Path) -> dict:
    return tomllib.loads(path.read_text()) if path.suffix == ".toml" else json.loads(path.read_text())


@pytest.mark.parametrize("client", sorted(DOCUMENTED))
def test_setup_merges_an_http_server_with_a_key_into_the_clients_documented_file(client, project, home):
    servers_key, url_key, beside, header = DOCUMENTED[client]
    path = _where(client, project, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(_fixture(client), path)
    before = _load(path)

    out, err = setup(client, "--url", "http://127.0.0.1:8001", "--corpus", "sample", "--auth", "key",
                     "--project-dir", str(project))

    after = _load(path)
    entry = after[servers_key].pop("docsmcp")
    before[servers_key].pop("docsmcp", None)  # Codex's fixture had an old entry: replaced, not kept
    if client == "vscode":  # the input that asks for the key (test_vscode_asks_for_the_key_once...)
        assert after["inputs"].pop()["id"] == "docsmcp-api-key"
    assert after == before  # every other server and setting as it was
    assert entry[url_key] == URL and all(entry[k] == v for k, v in beside.items())
    if header is None:
        assert entry["bearer_token_env_var"] == "DOCSMCP_API_KEY" and "headers" not in entry
    else:
        assert entry["headers"] == {"Authorization": header}
    assert "DOCSMCP_API_KEY" in err or client == "vscode"
    (backup,) = path.parent.glob(f"{path.name}.*.bak")
    assert backup.read_text() == _fixture(client).read_text()
    assert f"wrote {path}" in out

    again, _ = setup(client, "--url", "http://127.0.0.1:8001", "--corpus", "sample", "--auth", "key",
                     "--project-dir", str(project))
    assert "nothing to change" in again and len(list(path.parent.glob(f"{path.name}.*.bak"))) == 1


def test_vscode_asks_for_the_key_once_through_an_input_it_declares(project, home):
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    shutil.copy(_fixture("vscode"), path)
    setup("vscode", "--url", "http://127.0.0.1:8001", "--auth", "key", "--project-dir", str(project))
    inputs = json.loads(path.read_text())["inputs"]
    assert [i["id"] for i in inputs] == ["tracker-token", "docsmcp-api-key"]
    assert inputs[1]["password"] is True
    setup("vscode", "--url", "http://127.0.0.1:9001", "--auth", "key", "--project-dir", str(project))
    assert [i["id"] for i in json.loads(path.read_text())["inputs"]] == ["tracker-token", "docsmcp-api-key"]


def test_codex_keeps_the_files_comments_and_other_tables_and_drops_the_old_entrys_env(project, home):
    path = project / ".codex" / "config.toml"
    path.parent.mkdir()
    shutil.copy(_fixture("codex"), path)
    setup("codex", "--url", "http://127.0.0.1:8001", "--auth", "oauth", "--project-dir", str(project))
    text = path.read_text()
    assert "# Codex CLI configuration" in text and "[profiles.fast]" in text and "/old/home" not in text
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["docsmcp"] == {"url": "http://127.0.0.1:8001/mcp/"}
    assert parsed["mcp_servers"]["files"]["env"] == {"FILES_ROOT": "/srv/files"}


def test_oauth_writes_the_url_alone_for_the_client_to_sign_in(project, home):
    setup("cursor", "--url", "http://127.0.0.1:8001/mcp/", "--auth", "oauth", "--project-dir", str(project))
    assert json.loads((project / ".cursor" / "mcp.json").read_text()) == {
        "mcpServers": {"docsmcp": {"url": "http://127.0.0.1:8001/mcp/"}}}


def test_user_scope_writes_the_users_file_and_a_new_file_needs_no_backup(project, home):
    out, _ = setup("gemini", "--scope", "user", "--url", "http://127.0.0.1:8001", "--project-dir", str(project))
    path = home / ".gemini" / "settings.json"
    assert json.loads(path.read_text()) == {"mcpServers": {"docsmcp": {"httpUrl": "http://127.0.0.1:8001/mcp/"}}}
    assert "previous file" not in out and not list(project.iterdir())


def test_windsurf_has_no_project_file_and_says_so(project, home):
    with pytest.raises(CommandError, match="user only.*--scope user"):
        setup("windsurf", "--scope", "project", "--url", "http://127.0.0.1:8001", "--project-dir", str(project))


def test_dry_run_prints_the_file_and_writes_nothing(project, home):
    out, _ = setup("claude-code", "--url", "http://127.0.0.1:8001", "--dry-run", "--project-dir", str(project))
    assert f"--- {project / '.mcp.json'} (dry run: not written)" in out
    assert json.loads(out.split("\n", 1)[1])["mcpServers"]["docsmcp"]["url"] == "http://127.0.0.1:8001/mcp/"
    assert not list(project.iterdir())


def test_a_file_that_is_not_valid_json_is_refused_and_left_alone(project, home):
    path = project / ".mcp.json"
    path.write_text('{"mcpServers": {"a": {},}}\n')  # a trailing comma
    with pytest.raises(CommandError, match=r"\.mcp\.json is not valid JSON \(line 1"):
        setup("claude-code", "--url", "http://127.0.0.1:8001", "--project-dir", str(project))
    assert path.read_text() == '{"mcpServers": {"a": {},}}\n' and len(list(project.iterdir())) == 1


def test_stdio_runs_a_command_that_lasts_with_the_folder(project, home, settings):
    docs = project / "docs"
    docs.mkdir()
    setup("claude-code", "--folder", str(docs), "--project-dir", str(project))
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["docsmcp"]
    assert entry["type"] == "stdio"
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    assert entry["args"] == [str(settings.BASE_DIR / "manage.py"), "mcp_stdio", str(docs)]  # this checkout
    with pytest.raises(CommandError, match="not a directory"):
        setup("cursor", "--folder", str(project / "nosuch"), "--project-dir", str(project))
    with pytest.raises(CommandError, match="--auth applies to a server reached over HTTP"):
        setup("cursor", "--auth", "key", "--project-dir", str(project))


def test_a_database_password_never_goes_into_a_projects_file(project, home, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://docs:s3cret@db.example.com/docs")
    monkeypatch.setenv("DOCSMCP_HOME", "/srv/docsmcp")
    setup("claude-code", "--corpus", "sample", "--project-dir", str(project))
    env = json.loads((project / ".mcp.json").read_text())["mcpServers"]["docsmcp"]["env"]
    assert env == {"DOCSMCP_HOME": "/srv/docsmcp", "DATABASE_URL": "${DATABASE_URL}"}
    _, err = setup("codex", "--corpus", "sample", "--project-dir", str(project))
    assert "s3cret" not in (project / ".codex" / "config.toml").read_text() and "left out" in err
    setup("cursor", "--corpus", "sample", "--scope", "user", "--project-dir", str(project))  # the user's own file
    assert json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["docsmcp"]["env"]["DATABASE_URL"] == (
        "postgres://docs:s3cret@db.example.com/docs")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_written_stdio_server_starts_and_lists_its_tools(sample_corpus, settings, project, home, monkeypatch):
    from django.db import connection

    from tests.corpus.test_celery_worker import _database_url

    if connection.vendor != "postgresql":
        pytest.skip("the stdio subprocess needs PostgreSQL (set DATABASE_URL) to share the test database")
    monkeypatch.setenv("DATABASE_URL", _database_url())
    monkeypatch.setenv("DOCSMCP_INDEX_ROOT", str(settings.DOCSMCP_INDEX_ROOT))
    setup("gemini", "--corpus", "sample", "--project-dir", str(project))
    entry = json.loads((project / ".gemini" / "settings.json").read_text())["mcpServers"]["docsmcp"]
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    done = subprocess.run([entry["command"], *entry["args"]], input=json.dumps(request) + "\n", capture_output=True,
                          text=True, timeout=120, cwd="/", env={**os.environ, **entry["env"]})
    assert [t["name"] for t in json.loads(done.stdout)["result"]["tools"]] == ["search_docs", "get_doc", "docs_feedback"]


def test_an_entry_point_in_uvs_cache_is_replaced_by_uvx_from_the_wheel(tmp_path):
    cached = "/home/ana/.cache/uv/archive-v0/Xy12/bin/docsmcp"
    assert in_uv_cache(cached, [])
    assert in_uv_cache(tmp_path / "cache" / "x" / "bin" / "docsmcp", [tmp_path / "cache"])
    assert lasting_launcher(cached, "0.1.0", "/home/ana/dist/docsmcp-0.1.0-py3-none-any.whl") == [
        "uvx", "--from", "/home/ana/dist/docsmcp-0.1.0-py3-none-any.whl", "docsmcp"]
    assert lasting_launcher(cached, "0.1.0", None) == ["uvx", "--from", "docsmcp==0.1.0", "docsmcp"]
    assert lasting_launcher("/home/ana/.local/bin/docsmcp", "0.1.0", None) == ["/home/ana/.local/bin/docsmcp"]
    assert not in_uv_cache("/home/ana/.local/bin/docsmcp", [])


@pytest.mark.django_db
@pytest.mark.parametrize("client", sorted(CLIENT_FILES))
def test_rules_tell_the_agent_when_to_search_and_are_replaced_not_repeated(client, project, home, sample_corpus):
    rule = project / CLIENT_FILES[client].rule
    rule.parent.mkdir(parents=True, exist_ok=True)
    if not CLIENT_FILES[client].rule_whole_file:
        rule.write_text("# Project notes\n\nRun the tests with make test.\n")
    for _ in range(2):
        setup(client, "--url", "http://127.0.0.1:8001", "--corpus", "sample", "--rules", "--scope", "user",
              "--project-dir", str(project))
    text = rule.read_text()
    assert "search_docs" in text and "get_doc" in text and sample_corpus.description.strip().rstrip(".") in text
    if CLIENT_FILES[client].rule_whole_file:
        assert text.startswith("---\n")
    else:
        assert text.startswith("# Project notes\n\nRun the tests with make test.\n\n" + RULE_BEGIN)
        assert text.count(RULE_BEGIN) == 1 and text.rstrip().endswith(RULE_END)


def test_list_names_every_client_and_its_files(project, home):
    out, _ = setup("--list", "--project-dir", str(project))
    for name, client in CLIENT_FILES.items():
        assert name in out and str(home / client.user) in out and str(project / client.rule) in out


def test_clients_md_lists_what_setup_writes_where_for_every_client():
    text = ROOT.joinpath("docs", "clients.md").read_text()
    table = text.split("## `docsmcp setup`: what it writes where", 1)[1].split("\n## ", 1)[0]
    for name, client in CLIENT_FILES.items():
        (row,) = [line for line in table.splitlines() if line.startswith("| ") and f"| `{name}` |" in line]
        for path in filter(None, (client.project, client.rule)):
            assert f"`{path}`" in row, (name, path)
        assert f"~/{client.user}" in row, (name, client.user)
        assert (FIXTURES / _fixture(name).name).exists()
