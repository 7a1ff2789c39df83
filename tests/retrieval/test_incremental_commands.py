"""What a command after a one-page change does in proportion to the change: validation parses only the
changed pages (the others keep the findings their build recorded), and `build_index` and `validate_docs`
load neither the HTTP stack nor the OAuth checks, nor LanceDB for a patch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.embeddings import get_provider
from retrieval.ingest import reuse
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.ingest.folder import scan_corpus
from retrieval.ingest.validate import validate_corpus
from tests.conftest import ROOT

PAYMENTS = "sdks/python/payments.md"
HTTP_AND_OAUTH = ("ninja", "pydantic", "corpus.oauth", "corpus.apikeys", "jwt", "oauth2_provider", "oauthlib",
                  "jwcrypto", "cryptography")


def test_validation_after_a_change_parses_only_the_changed_pages_and_finds_what_a_full_validation_finds(
        copy_sample_docs, tmp_path, monkeypatch):
    built = build_index(BuildRequest(copy_sample_docs, tmp_path / "b1", "b1", "skyline", provider=get_provider("hash"),
                                     workers=1)).path
    payments = copy_sample_docs / PAYMENTS
    payments.write_text(payments.read_text() + "\n<!-- mcp_chunking_hint: {chunk_by: h3} -->\n## Later\n\nText.\n")
    (copy_sample_docs / "guides" / "fx.md").write_text("# FX\n\nQuotes refresh hourly.\n")
    parsed: list[str] = []
    real = reuse.process_files

    def spy(scan, todo, **kwargs):
        parsed.extend(relpath for relpath, _key in todo)
        return real(scan, todo, **kwargs)

    monkeypatch.setattr(reuse, "process_files", spy)
    results = reuse.validate_changed(scan_corpus(copy_sample_docs), built, workers=1)

    assert sorted(parsed) == ["guides/fx.md", PAYMENTS]
    _scan, whole, findings = validate_corpus(copy_sample_docs, workers=1)
    assert [f.as_dict() for r in results for f in r.findings] == [f.as_dict() for r in whole for f in r.findings]
    assert ("hint-malformed", "error") in {(f.code, f.severity) for f in findings if f.file == PAYMENTS}
    assert [(r.relpath, r.chunk_count) for r in results] == [(r.relpath, len(r.chunks)) for r in whole]


def _command(home: Path, *args: str) -> list[str]:
    """`manage.py ARGS` in a fresh process with its own data directory; the watched modules it loaded."""
    watched = (*HTTP_AND_OAUTH, "lancedb", "lance")
    code = ("import json, sys\n"
            f"sys.argv = ['manage.py', *{list(args)!r}]\n"  # what the settings choose the apps by
            "from retrieval.boot import boot\n"
            "boot()\n"
            "from django.core.management import execute_from_command_line\n"
            "execute_from_command_line(sys.argv)\n"
            f"print(json.dumps([m for m in {watched!r} if m in sys.modules]))\n")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DJANGO_SETTINGS_MODULE="docsmcp_site.settings", DOCSMCP_HOME=str(home), DOCSMCP_SOURCE_ROOTS=str(home))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_build_and_validate_commands_load_no_http_stack_no_oauth_and_a_patch_no_lancedb(tmp_path, copy_sample_docs):
    home = tmp_path / "home"
    home.mkdir()
    docs = home / "docs"
    copy_sample_docs.rename(docs)
    _command(home, "migrate", "--noinput", "-v0")
    first = _command(home, "build_index", "--corpus", "skyline", "--source", str(docs), "--no-progress")
    assert "lancedb" in first and not set(first) & set(HTTP_AND_OAUTH) - {"pydantic"}  # LanceDB brings pydantic
    payments = docs / PAYMENTS
    payments.write_text(payments.read_text() + "\n## Capture later\n\nHold the funds first.\n")

    assert _command(home, "build_index", "--corpus", "skyline", "--no-progress") == ["lance"]
    assert _command(home, "validate_docs", "--corpus", "skyline", "--no-progress") == []


@pytest.mark.slow
def test_a_fresh_installations_first_build_leaves_sign_in_to_work_for_the_next_command(tmp_path, copy_sample_docs):
    """`docsmcp build_index` runs without the OAuth server's app, and migrates the embedded database
    without its tables: the next command that signs in gets them, the build's corpus still there."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DOCSMCP_HOME=str(home), DOCSMCP_SOURCE_ROOTS=str(copy_sample_docs.parent))

    def docsmcp(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "docsmcp_site", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    docsmcp("build_index", "--corpus", "skyline", "--source", str(copy_sample_docs), "--embedding-provider", "hash",
            "--no-progress")
    created = docsmcp("mcp_oauth_client", "create", "Editor", "--redirect-uri", "http://127.0.0.1:7777/cb")
    client_id = created.split("client_id: ")[1].split()[0]
    assert client_id in docsmcp("mcp_oauth_client", "list")
    assert "[ ]" not in docsmcp("showmigrations", "oauth2_provider", "corpus")
    assert "Payments" in docsmcp("chunks", "--corpus", "skyline", "--file", PAYMENTS)


@pytest.mark.slow
def test_an_idle_celery_worker_imports_neither_the_site_nor_the_build(tmp_path):
    """A worker waits for builds far longer than it runs them: what it holds while idle is the price of
    every host running one. Celery's Django fix-up used to run the URL checks at start, importing the whole
    site, the task modules imported the build, and so did the reaper every worker starts once ready."""
    watched = (*HTTP_AND_OAUTH, "pyarrow", "markdown_it", "numpy", "lancedb", "docsmcp_site.urls")
    code = ("import json, sys\n"
            "from celery import signals\n"
            "from common.celery import app\n"
            "app.loader.init_worker()\n"  # the task modules, as `celery worker` imports them
            "signals.worker_init.send(sender=None)\n"  # the Django fix-up's start-up
            "signals.worker_ready.send(sender=None)\n"  # starts the dead-build reaper (corpus/tasks.py)
            "from corpus import reaping\n"
            "reaping.stop_reaper()\n"
            "try:\n"  # one round for sure (the thread may not have begun one); no tables in this database
            "    reaping.reap_once()\n"
            "except Exception:\n"
            "    pass\n"
            f"print(json.dumps([m for m in {watched!r} if m in sys.modules]))\n")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings", "DOCSMCP_HOME": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert loaded <= {"oauth2_provider", "oauthlib", "jwcrypto", "cryptography"}  # an installed app's models
