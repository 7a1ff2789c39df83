"""Shared fixtures: the sample corpus built once per session, and corpora registered against it."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

# Keep the compiled modules and pytest's rewritten tests (in __pycache__/, ignored by git) even where the
# environment sets PYTHONDONTWRITEBYTECODE: without them every xdist worker compiles the project and
# rewrites every test module's asserts again on every run, 7-8 s of each worker's collection.
sys.dont_write_bytecode = False

from retrieval.boot import boot  # noqa: E402

pytest_plugins = ["tests.tiers"]  # the slow marker and the fast tier's check
boot()  # tests run the engine as the server and the build worker do
ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DOCS = ROOT / "corpus" / "sample_docs"
ARTIFACTS = ROOT / "test-artifacts"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n` without `--dist` shares the tests by work stealing rather than xdist's default `load`: `load` hands
    each worker its share in batches, and the worker left with a batch of slow tests at the end ran on alone
    for 7 to 30 s of the fast tier while the other core idled. Work stealing lets the idle worker take half
    of what the other has left, and keeps each worker's share in collection order, so a module's tests (and
    its module-scoped fixtures) mostly stay on one worker."""
    if config.getvalue("dist") == "load" and not any(arg.startswith("--dist") for arg in config.invocation_params.args):
        from xdist.scheduler import WorkStealingScheduling

        return WorkStealingScheduling(config, log)
    return None


@pytest.fixture(autouse=True)
def sources_under_tmp(settings, tmp_path_factory):
    """Corpora that tests register through the REST API and the admin live under pytest's temporary
    directory: allow it beside the default roots. Tests of the roots themselves set their own."""
    settings.DOCSMCP_SOURCE_ROOTS = [*settings.DOCSMCP_SOURCE_ROOTS, str(tmp_path_factory.getbasetemp())]


@pytest.fixture(scope="session")
def sample_build_dir(tmp_path_factory) -> Path:
    """The bundled sample corpus built once (hash embeddings, so the vector leg is exercised)."""
    from retrieval.embeddings import get_provider
    from retrieval.ingest.build import BuildRequest, build_index

    out = tmp_path_factory.mktemp("sample-index") / "sample-build"
    build_index(BuildRequest(SAMPLE_DOCS, out, "sample-build", "sample", provider=get_provider("hash"), workers=1))
    return out


@pytest.fixture
def index_root(tmp_path, settings) -> Path:
    root = tmp_path / "indexes"
    settings.DOCSMCP_INDEX_ROOT = root
    return root


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """An S3-compatible server on a loopback port for the session (tests/s3_server.py)."""
    pytest.importorskip("moto.server", reason="moto[server] (requirements-dev.txt) provides the S3-compatible "
                                              "server the object-store tests run against; pip install it")
    from tests import s3_server

    process, endpoint = s3_server.start(tmp_path_factory.mktemp("s3") / "moto.log")
    yield endpoint
    process.terminate()
    try:
        process.wait(10)
    except Exception:
        process.kill()


@pytest.fixture
def s3_index_root(s3_endpoint, settings, monkeypatch, tmp_path) -> str:
    """A fresh `s3://` index root on the test server; this host's build cache under tmp_path."""
    from retrieval.storage import uri
    from tests import s3_server

    for key, value in s3_server.environment(s3_endpoint).items():
        monkeypatch.setenv(key, value)  # for the processes a test starts
    monkeypatch.setattr(uri, "_configured", s3_server.environment(s3_endpoint))  # as settings hand it over
    root = s3_server.new_root()
    settings.DOCSMCP_INDEX_ROOT = root
    settings.DOCSMCP_INDEX_CACHE_DIR = tmp_path / "index-cache"
    from corpus.serving import STATE

    STATE.forget(process=True)
    yield root
    STATE.forget(process=True)


@pytest.fixture(params=["local", "s3"])
def any_index_root(request, tmp_path, settings):
    """The index root as a local path, then as an object store: the tests that take it run on both."""
    if request.param == "local":
        return request.getfixturevalue("index_root")
    return request.getfixturevalue("s3_index_root")


@pytest.fixture
def sample_corpus(db, sample_build_dir, settings):
    """A registered `sample` corpus whose active build is the session's prebuilt index."""
    from corpus.execution import build_activate
    from corpus.models import BuildRun, Corpus
    from corpus.serving import forget_active
    from retrieval.format.metadata import read_metadata

    metadata = read_metadata(sample_build_dir)
    corpus = Corpus.objects.create(name="sample", source_dir=str(SAMPLE_DOCS), description=metadata.corpus_description,
                                   version="3.2", settings={"embedding_provider": "hash"})
    build = BuildRun.objects.create(corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL,
                                    status=BuildRun.COMPLETE, index_path=str(sample_build_dir),
                                    embedding_provider="hash", embedding=metadata.embedding, stats=metadata.stats)
    build_activate(build=build)
    forget_active()
    corpus.refresh_from_db()
    yield corpus
    forget_active()


@pytest.fixture
def copy_sample_docs(tmp_path) -> Path:
    """A writable copy of the sample corpus for tests that edit files."""
    dest = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, dest)
    return dest


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def _chromium_path() -> str | None:
    """Chromium may still be being installed by apt when the suite starts: give it a moment."""
    for _ in range(10):
        if Path(CHROMIUM).exists() and shutil.which(CHROMIUM):
            return CHROMIUM
        time.sleep(2)
    return None


@pytest.fixture(scope="module")
def browser():
    """Debian's headless chromium driven by Playwright (no browser download at run time)."""
    executable = _chromium_path()
    if executable is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); browser tests need Debian's chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API keeps an event loop registered on this thread while it is open, so Django
    # would refuse the test's own (synchronous, non-concurrent) ORM calls without this switch.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def writer_client(db):
    """A test client whose every request carries an admin API key: anonymous callers may only read."""
    from django.test import Client

    from corpus.apikeys import create_api_key

    _row, key = create_api_key("test-writer", ["admin"])
    return Client(headers={"Authorization": f"Bearer {key}"})


@pytest.fixture
def held_clock():
    """The serving state's clock, held still unless a test moves it: a cached pointer's age is then what the
    test says, however long a call takes on a loaded machine."""
    from corpus.serving import STATE

    now = [1000.0]
    STATE.forget(process=True)
    STATE.clock = lambda: now[0]
    yield now
    STATE.clock = time.monotonic
    STATE.forget(process=True)


@pytest.fixture(scope="module")
def source_trees():
    """The project's syntax trees, parsed once for a module of tests that reads the code and dropped after it
    (tests/source_trees.py)."""
    from tests.source_trees import forget

    yield
    forget()
