"""Running as a service: the secret key, the bind address warning, and a broker that is down."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from common.supervise import WORKER_NICENESS, Spec, run_together
from corpus.apikeys import create_api_key
from corpus.models import BuildRun
from docsmcp_site.secret import installation_secret_key
from mcp_endpoint.management.commands.serve import exposure_warning
from tests.api_helpers import assert_error, call

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY_KEY = "docsmcp-dev-secret-only-for-debug-0123456789"


def settings_secret_key(tmp_path: Path, **env: str) -> str:
    """SECRET_KEY as a fresh process sees it, without DJANGO_SECRET_KEY and with the key file under tmp_path."""
    environment = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SECRET_KEY", "DJANGO_DEBUG"}}
    environment.update(DJANGO_SETTINGS_MODULE="docsmcp_site.settings",
                       DOCSMCP_SECRET_KEY_FILE=str(tmp_path / "var" / "secret_key"), **env)
    return subprocess.run([sys.executable, "-c", "from django.conf import settings; print(settings.SECRET_KEY)"],
                          cwd=ROOT, env=environment, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow
def test_without_a_secret_key_each_installation_generates_its_own_once(tmp_path):
    first = settings_secret_key(tmp_path)
    key_file = tmp_path / "var" / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first) >= 50 and first != REPOSITORY_KEY
    assert settings_secret_key(tmp_path) == first  # kept, so sessions and cursors survive restarts
    assert settings_secret_key(tmp_path / "elsewhere") != first
    assert [p.name for p in key_file.parent.iterdir()] == ["secret_key"]  # no temporary file left behind


@pytest.mark.slow
def test_debug_may_use_the_development_key_and_writes_nothing(tmp_path):
    assert settings_secret_key(tmp_path, DJANGO_DEBUG="true") == REPOSITORY_KEY
    assert not (tmp_path / "var").exists()


@pytest.mark.slow
def test_an_explicit_secret_key_wins(tmp_path):
    assert settings_secret_key(tmp_path, DJANGO_SECRET_KEY="from-the-environment") == "from-the-environment"


def test_an_empty_key_file_is_a_clear_error_not_an_empty_key(tmp_path):
    (tmp_path / "secret_key").write_text("")
    with pytest.raises(RuntimeError, match="delete it to generate a new secret key"):
        installation_secret_key(tmp_path / "secret_key")


@pytest.fixture
def launched(monkeypatch):
    """The web server's command line serve hands its supervising process, without starting anything."""
    seen: list[list[str]] = []

    def execv(path: str, argv: list[str]) -> None:
        assert argv[1:3] == ["-m", "common.supervise"]
        seen.append(Spec(**json.loads(argv[3])).commands[0])

    monkeypatch.setattr(os, "execv", execv)
    return seen


def test_serve_binds_loopback_by_default_without_a_warning(settings, launched, capsys, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("serve", "--port", "8123")
    assert "127.0.0.1:8123" in launched[0]
    assert "docsmcp_site.wsgi:application" in launched[0] and "docsmcp_site.front.BufferingThreadWorker" in launched[0]
    assert "WARNING" not in capsys.readouterr().err
    assert (tmp_path / "static" / "admin" / "css" / "base.css").exists()  # collected because it was missing


def test_serve_runs_as_many_workers_as_the_web_concurrency_setting_says(settings, launched, tmp_path, monkeypatch):
    settings.STATIC_ROOT = tmp_path / "static"
    monkeypatch.setenv("WEB_CONCURRENCY", "7")  # read by the settings at start, not by the command
    settings.WEB_CONCURRENCY = 3
    call_command("serve", "--port", "8123", "--no-worker")
    argv = launched[0]
    assert argv[argv.index("--workers") + 1] == "3"


@pytest.mark.slow
def test_the_worker_serve_starts_beside_the_web_server_yields_the_cpu_to_it(tmp_path):
    """On a small host the Celery worker's start-up and builds must not slow searches down."""
    seen = tmp_path / "niceness"
    web = [sys.executable, "-c", "import pathlib, time\n"
           f"while not pathlib.Path({str(seen)!r}).exists(): time.sleep(0.05)"]
    worker = [sys.executable, "-c", "import os, pathlib, time\n"
              f"pathlib.Path({str(seen) + '.part'!r}).write_text(str(os.nice(0)))\n"
              f"os.rename({str(seen) + '.part'!r}, {str(seen)!r})\n"
              "time.sleep(60)"]
    assert run_together(web, worker, background=worker) == 0
    assert int(seen.read_text()) == min(19, os.nice(0) + WORKER_NICENESS)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::"])
def test_serve_on_a_reachable_address_without_auth_says_what_is_exposed(settings, launched, capsys, host):
    settings.MCP_AUTH_REQUIRED = False
    call_command("serve", "--host", host, "--port", "8123")
    err = capsys.readouterr().err
    assert exposure_warning(host) in err
    assert "read every corpus" in err and "without a key" in err and "MCP_AUTH_REQUIRED=true" in err


def test_serve_on_a_reachable_address_with_auth_required_does_not_warn(settings, launched, capsys):
    settings.MCP_AUTH_REQUIRED = True
    call_command("serve", "--host", "0.0.0.0", "--port", "8123")
    assert "WARNING" not in capsys.readouterr().err


def _publishing_to(url: str):
    """This process publishes to the Redis broker at `url`, with the transport options a Redis deployment gets."""
    from common.celery import app
    from docsmcp_site.settings.celery import redis_transport_options

    keys = ("task_always_eager", "broker_url", "broker_transport_options")
    saved = {key: app.conf[key] for key in keys}

    def reset() -> None:
        import kombu.pools

        if app._pool is not None:
            app._pool.force_close_all()
        app._pool = None
        app.amqp._producer_pool = None
        kombu.pools.reset()  # its producer pools are shared by connection URL and hold the pool closed above

    reset()
    app.conf.update(task_always_eager=False, broker_url=url, broker_transport_options=redis_transport_options)
    yield
    reset()
    app.conf.update(saved)


@pytest.fixture
def broker_down():
    """This process publishes to a Redis port nothing listens on."""
    yield from _publishing_to("redis://127.0.0.1:1/0")


@pytest.fixture
def broker_mute():
    """This process publishes to a server that accepts connections and reads commands, answering nothing."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])  # never read, never answered

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield from _publishing_to(f"redis://127.0.0.1:{listener.getsockname()[1]}/0")
    finally:
        listener.close()
        for conn in held:
            conn.close()


@pytest.mark.django_db(transaction=True)
def test_a_build_the_broker_cannot_take_is_503_with_the_reason_and_does_not_block_the_corpus(
        client, sample_corpus, index_root, broker_down):
    _, key = create_api_key("builder", ["build"])
    response = call(client, "POST", "/corpora/sample/builds", {"kind": "validate"}, key=key)
    assert_error(response, 503, "task_queue_unavailable", "task queue is unreachable")
    assert "CELERY_BROKER_URL" in response.json()["error"]["message"]
    build = BuildRun.objects.filter(corpus=sample_corpus).exclude(pk=sample_corpus.active_build_id).get()
    assert build.status == BuildRun.FAILED and "could not start the build" in build.error


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_never_answers_is_503_too_and_leaves_no_queued_build(
        client, sample_corpus, index_root, broker_mute):
    """Without a read timeout the publish waited as long as the connection lived (40 s and more)."""
    _, key = create_api_key("builder", ["build"])
    answered = []

    def build() -> None:
        try:
            answered.append(call(client, "POST", "/corpora/sample/builds", {"kind": "validate"}, key=key))
        finally:
            connection.close()

    request = threading.Thread(target=build, daemon=True)
    request.start()
    request.join(60)
    assert answered, "the build request was still waiting on the broker after 60 s"
    assert_error(answered[0], 503, "task_queue_unavailable", "task queue is unreachable")
    assert not BuildRun.objects.filter(corpus=sample_corpus, status=BuildRun.QUEUED).exists()


def test_serve_on_a_reachable_address_turns_oauth_registration_off_unless_chosen(settings, launched, capsys):
    settings.MCP_AUTH_REQUIRED = True
    settings.DOCSMCP_OAUTH_EXPLICIT = False
    call_command("serve", "--host", "0.0.0.0", "--port", "8123", "--no-worker")
    assert "DOCSMCP_OAUTH_REGISTRATION=false" in launched[0]
    assert "registration is off" in capsys.readouterr().err
    call_command("serve", "--port", "8124", "--no-worker")
    assert "DOCSMCP_OAUTH_REGISTRATION=false" not in launched[1]
    settings.DOCSMCP_OAUTH_EXPLICIT = True
    call_command("serve", "--host", "0.0.0.0", "--port", "8125", "--no-worker")
    assert "DOCSMCP_OAUTH_REGISTRATION=false" not in launched[2]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_supervisor_killed_outright_leaves_no_server_behind(tmp_path):
    """SIGKILL gives serve's supervising process no time to stop its children: they stop on their own."""
    pid_file = tmp_path / "child.pid"
    child = [sys.executable, "-c", f"import os, time, pathlib; pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
             "time.sleep(60)"]
    supervisor = subprocess.Popen(Spec(commands=[child]).to_argv(sys.executable), cwd=ROOT)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    supervisor.kill()
    supervisor.wait()
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    raise AssertionError("the child outlived its supervisor")


def _access_line(arguments: list[str], tmp_path) -> str:
    """The line gunicorn's own access logger writes for a REST search, under serve's access-log options."""
    from datetime import timedelta
    from types import SimpleNamespace

    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    config = Config()
    log_file = tmp_path / f"access-{len(arguments)}.log"
    config.set("accesslog", str(log_file))
    if arguments:
        config.set("access_log_format", arguments[arguments.index("--access-logformat") + 1])
    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/api/v1/corpora/sample/search?query=my+card+4111",
               "PATH_INFO": "/api/v1/corpora/sample/search", "QUERY_STRING": "query=my+card+4111",
               "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
               "HTTP_REFERER": "https://portal.example/help?q=my+card+4111", "HTTP_USER_AGENT": "agent/1.0"}
    request = SimpleNamespace(headers=[("REFERER", environ["HTTP_REFERER"])])
    Logger(config).access(SimpleNamespace(status="200 OK", headers=[], sent=120), request, environ,
                          timedelta(milliseconds=12))
    return log_file.read_text()


def test_no_text_access_log_lines_carry_no_query_string(settings, tmp_path):
    """#47: in no-text mode serve's access log writes the path without what an agent typed."""
    from corpus import querylog
    from mcp_endpoint.management.commands.serve import access_log_arguments

    settings.DOCSMCP_QUERY_LOG = querylog.FULL
    assert "4111" in _access_line(access_log_arguments(), tmp_path)  # gunicorn's default line keeps it
    for mode in (querylog.NO_TEXT, querylog.OFF):
        settings.DOCSMCP_QUERY_LOG = mode
        line = _access_line(access_log_arguments(), tmp_path)
        assert '"GET /api/v1/corpora/sample/search HTTP/1.1" 200 120' in line and "4111" not in line, line
