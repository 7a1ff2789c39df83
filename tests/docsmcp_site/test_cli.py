"""The `docsmcp` command as a user meets it: its own commands listed by task, each one's arguments in its
help, an answer to --help and --version without the site's start-up, and `serve` saying where the
server is only once the server answers."""

from __future__ import annotations

import http.server
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

from common.supervise import Spec, announce
from docsmcp_site import __version__
from docsmcp_site.commands import command_names

ROOT = Path(__file__).resolve().parents[2]
OWN_APPS = {"corpus", "mcp_endpoint", "evals", "insights", "common", "docsmcp_site"}
# What the site's start-up imports and --help / --version must not: seconds of it on a loaded machine.
HEAVY = ("django", "ninja", "oauth2_provider", "jwcrypto", "lancedb", "pyarrow", "numpy")


def docsmcp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "docsmcp_site", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_help_lists_docsmcps_commands_by_task_and_hides_djangos_development_ones():
    result = docsmcp("--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    for task in ("Serve a docs folder:", "Connect an agent:", "Build and check docs:", "Keys and sign-in:",
                 "Evals and insights:"):
        assert task in text
    for shown in ("serve [PATH]", "stdio [PATH]", "setup CLIENT", "build_index", "validate_docs", "mcp_apikey",
                  "mcp_oauth_client", "run_eval"):
        assert f"  {shown} " in text
    for hidden in ("startproject", "squashmigrations", "makemessages", "startapp"):
        assert hidden not in text
    assert "docsmcp django-help" in text
    assert docsmcp().stdout == text and docsmcp("help").stdout == text


@pytest.mark.slow
def test_djangos_commands_are_still_listed_by_django_help_and_still_run():
    listed = docsmcp("django-help")
    assert listed.returncode == 0 and "startproject" in listed.stdout and "squashmigrations" in listed.stdout
    assert docsmcp("showmigrations", "--help").stdout.startswith("usage: docsmcp showmigrations")


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_answer_without_setting_up_django(flag):
    probe = ("import sys, contextlib, io\n"
             "from docsmcp_site.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()) as out: main(['docsmcp', sys.argv[1]])\n"
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in sys.argv[2].split(','))\n"
             "print(out.getvalue().splitlines()[0]); print(heavy)")
    result = subprocess.run([sys.executable, "-c", probe, flag, ",".join(HEAVY)], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    first, imported = result.stdout.splitlines()
    assert imported == "[]"
    assert first.startswith(f"docsmcp {__version__}")


def test_every_listed_command_exists_and_every_own_command_is_listed():
    commands = get_commands()
    named = command_names()
    assert [name for name in named if name not in commands] == []
    own = {name for name, app in commands.items() if app.split(".")[0] in OWN_APPS}
    assert sorted(own - set(named)) == []


@pytest.mark.parametrize("name", command_names())
def test_every_listed_commands_help_shows_its_arguments(name):
    command = load_command_class(get_commands()[name], name)
    text = command.create_parser("docsmcp", name).format_help()
    assert text.startswith(f"usage: docsmcp {name}")
    parser_positionals = [a for a in command.create_parser("docsmcp", name)._actions if not a.option_strings
                          and a.dest != "help"]
    shown = text.split("positional arguments:")[1] if parser_positionals else ""
    for action in parser_positionals:  # a folder, a name, a sub-command: each shown with what it is
        names = list(action.choices) if action.choices else [action.metavar or action.dest]
        assert all(name in shown for name in names), (name, names)


@pytest.mark.slow
def test_serve_and_stdio_help_show_the_folder_argument():
    for name in ("serve", "stdio"):
        result = docsmcp(name, "--help")
        assert result.returncode == 0, result.stderr
        usage, _, rest = result.stdout.partition("positional arguments:")
        assert "[PATH]" in usage and "folder of markdown" in rest


class _Health(http.server.BaseHTTPRequestHandler):
    """/health/ as a warming server answers it: 503 `starting` for the first requests, then 200."""

    answers: list[int] = []
    warm_after = 3

    def do_GET(self):  # noqa: N802 (http.server's name)
        warm = len(self.answers) >= self.warm_after
        status = 200 if warm else 503
        self.answers.append(status)
        body = json.dumps({"health": "ok" if warm else "starting", "checks": {"warm": "ready" if warm else "warming"}})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


def test_serve_prints_the_endpoint_only_once_the_server_answers_with_progress_before(monkeypatch):
    monkeypatch.setattr("common.supervise.POLL_SECONDS", 0.05)
    _Health.answers = []
    _Health.warm_after = 3
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = io.StringIO()
    try:
        announce(Spec(commands=[], health_url=f"http://127.0.0.1:{server.server_port}/health/", workers=1,
                      banner="MCP endpoint:  http://x/mcp/"), out)
    finally:
        server.shutdown()
        server.server_close()
    lines = out.getvalue().splitlines()
    assert _Health.answers == [503, 503, 503, 200]
    assert lines == ["docsmcp: warming the indexes (0 s)", lines[1], "MCP endpoint:  http://x/mcp/"]
    assert lines[1].startswith("docsmcp: ready in ")


@pytest.mark.slow
def test_progress_before_the_web_server_listens_says_it_is_starting_and_asks_health_once_all_are_warm(
        tmp_path, monkeypatch):
    """Nothing listens yet, then the workers warm one by one: the supervisor says so, and asks /health/
    only once they all are (a worker that is not warm yet leaves a request waiting in the queue)."""
    monkeypatch.setattr("common.supervise.POLL_SECONDS", 0.05)
    _Health.answers = []
    _Health.warm_after = 0
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # the port the server will listen on, not listening yet
    port = sock.getsockname()[1]
    warm = tmp_path / "warm"
    warm.mkdir()
    out = io.StringIO()
    done = threading.Thread(target=announce, args=(Spec(commands=[], health_url=f"http://127.0.0.1:{port}/health/",
                                                        workers=2, warm_dir=str(warm), banner="B"), out))
    done.start()
    time.sleep(0.3)
    sock.close()
    server = http.server.HTTPServer(("127.0.0.1", port), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        time.sleep(0.3)
        (warm / str(os.getpid())).touch()
        time.sleep(0.3)
        assert _Health.answers == []
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        (warm / str(child.pid)).touch()
        done.join(10)
        child.kill()
        child.wait()
    finally:
        server.shutdown()
        server.server_close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "docsmcp: starting the web server (0 s)"
    assert [line.rsplit(" (", 1)[0] for line in lines if "workers ready" in line][:2] == [
        "docsmcp: warming the indexes: 0 of 2 workers ready", "docsmcp: warming the indexes: 1 of 2 workers ready"]
    assert _Health.answers == [200] and lines[-1] == "B"


def test_a_build_without_a_terminal_says_how_far_it_is_when_a_stage_lasts(capsys, monkeypatch):
    from corpus import progress

    quick = progress.StageBars(True)  # capsys: stderr is not a terminal
    quick("embed", 1, 2)
    quick("embed", 2, 2)
    quick.close()
    assert capsys.readouterr().err == ""  # a stage that ends at once says nothing
    monkeypatch.setattr(progress, "PLAIN_AFTER", 0.0)
    slow = progress.StageBars(True)
    slow("embed", 10, 300)
    slow("embed", 20, 300)  # within PLAIN_EVERY of the last line: not repeated
    slow("write", 1, 1)
    slow.close()
    lines = capsys.readouterr().err.splitlines()
    assert [line.rsplit(" (", 1)[0].rsplit(" done in", 1)[0] for line in lines] == [
        "   embed: 10/300", "   embed: 20/300", "   write: 1/1", "   write: 1/1"]
    assert progress.StageBars(False).plain is False


@pytest.mark.parametrize("auth", [False, True])
def test_the_banner_suggests_a_setup_command_that_runs(settings, auth):
    from mcp_endpoint.management.commands.serve import banner

    settings.MCP_AUTH_REQUIRED = auth
    text = banner("http://127.0.0.1:8001/mcp/c/docs/")
    assert "MCP endpoint:  http://127.0.0.1:8001/mcp/c/docs/" in text
    line = next(line for line in text.splitlines() if line.startswith("Set up agents:"))
    words = line.split("setup ", 1)[1].split("   (")[0].replace("CLIENT", "cursor").split()
    parsed = load_command_class(get_commands()["setup"], "setup").create_parser("docsmcp", "setup").parse_args(words)
    assert parsed.url == "http://127.0.0.1:8001/mcp/c/docs/" and parsed.auth == ("key" if auth else "none")


@pytest.mark.slow
def test_the_supervisor_hands_the_web_server_a_warm_directory_and_removes_it(tmp_path):
    seen = tmp_path / "seen"
    web = [sys.executable, "-c", "import os, sys, pathlib\n"
           f"d = sys.argv[-1].split('=', 1)[1]; pathlib.Path({str(seen)!r}).write_text(sys.argv[-2] + ' ' + d + "
           "' ' + str(os.path.isdir(d)))"]
    from common.supervise import main

    assert main(["supervise", json.dumps({"commands": [web], "warm_env": "DOCSMCP_SERVE_WARM_DIR"})]) == 0
    flag, directory, existed = seen.read_text().split(" ")
    assert flag == "--env" and existed == "True" and not os.path.exists(directory)
