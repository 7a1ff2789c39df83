"""Fast from the first request: commands start without loading what they do not use, and a server
warms what it serves before it answers, and a new build before it replaces the old one."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from corpus import serving, warming
from corpus.execution import build_activate
from corpus.models import BuildRun
from corpus.serving import active_index
from retrieval.embeddings import get_provider
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.search.index_cache import IndexCache
from tests.conftest import ROOT, SAMPLE_DOCS
from tests.corpus.test_celery_worker import _database_url
from tests.docsmcp_site.test_deploy_e2e import free_port, stop
from tests.serve_helpers import serve_subprocess

HEAVY = ("lancedb", "lance", "pyarrow", "openai", "onnxruntime", "tokenizers",
         "lance_namespace_urllib3_client.api",
         "celery", "kombu", "corpus.admin", "evals.admin")  # loaded with the first queued task, the site's URLs


def _fresh_python(code: str, **env: str) -> str:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings", **env}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.slow
def test_a_bare_django_setup_loads_no_index_library_model_runtime_api_client_task_queue_or_admin():
    out = _fresh_python("import django, json, sys; django.setup(); "
                        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert json.loads(out) == []


def _python_choosing_no_allocator(code: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX")}
    environment["DJANGO_SETTINGS_MODULE"] = "docsmcp_site.settings"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.slow
def test_importing_the_engine_changes_nothing_in_the_process():
    out = _python_choosing_no_allocator(
        "import json, os, sys, retrieval, retrieval.search.engine, retrieval.ingest.build\n"
        "print(json.dumps(['lance_namespace_urllib3_client' in sys.modules, 'ARROW_DEFAULT_MEMORY_POOL' in os.environ]))")
    assert json.loads(out) == [False, False]


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["docsmcp_site.wsgi", "docsmcp_site.asgi", "common.celery"])
def test_the_entry_points_set_up_the_process(entry):
    out = _python_choosing_no_allocator(
        f"import json, os, sys, {entry}\n"
        "print(json.dumps([type(sys.modules['lance_namespace_urllib3_client']).__name__,"
        " os.environ.get('ARROW_DEFAULT_MEMORY_POOL')]))")
    assert json.loads(out) == ["_DeferredPackage", "system"]


@pytest.mark.slow
def test_lancedb_loads_without_its_remote_namespace_client_which_still_loads_when_used():
    out = _fresh_python(
        "import json, sys\nfrom retrieval.boot import boot\nboot()\nimport lancedb\n"
        "before = sorted(m for m in sys.modules if m.startswith('lance_namespace_urllib3_client.api'))\n"
        "from lance_namespace_urllib3_client import ApiClient, TableApi\n"
        "print(json.dumps([before, ApiClient.__name__, TableApi.__name__]))")
    assert json.loads(out) == [[], "ApiClient", "TableApi"]


def _build(out: Path, build_id: str) -> Path:
    build_index(BuildRequest(SAMPLE_DOCS, out, build_id, "sample", provider=get_provider("hash"), workers=1))
    return out


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("two-builds")
    return _build(root / "old", "old"), _build(root / "new", "new")


def test_a_new_build_replaces_the_old_one_only_once_warm(two_builds):
    old, new = two_builds
    release, warmed = threading.Event(), []

    def warmer(index):
        release.wait(30)
        warmed.append(index.build_id)

    cache = IndexCache()
    assert cache.get(old, slot="sample").build_id == "old"
    cache.warmer = warmer
    assert cache.get(new, slot="sample").build_id == "old"  # warming in the background: the old build answers
    assert cache.get(new, slot="sample").build_id == "old"
    release.set()
    deadline = time.monotonic() + 30
    while cache.get(new, slot="sample").build_id != "new":
        assert time.monotonic() < deadline, "the warmed build never replaced the old one"
        time.sleep(0.05)
    assert warmed == ["new"]  # warmed once, before it answered


def test_a_build_that_fails_to_warm_is_opened_by_the_next_request(two_builds):
    old, new = two_builds
    failed = threading.Event()

    def warmer(index):
        failed.set()
        raise RuntimeError("disk trouble")

    cache = IndexCache()
    cache.get(old, slot="sample")
    cache.warmer = warmer
    cache.get(new, slot="sample")
    assert failed.wait(30)
    deadline = time.monotonic() + 30
    while cache.get(new, slot="sample").build_id != "new":
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.fixture
def cold_process():
    serving.STATE.forget(process=True)
    yield
    serving.STATE.forget(process=True)
    gc.unfreeze()


def test_a_serving_process_loads_every_corpus_before_its_first_request(sample_corpus, cold_process):
    state = serving.serve_warm(watch=False)
    assert state["state"] == warming.READY
    assert state["corpora"]["sample"]["state"] == "ok"
    index = active_index("sample")
    assert index._catalog is not None and index._vectors is not None  # loaded: no request pays for it
    # ...and frozen: the collector's full passes, which stall every request thread, skip all of it.
    assert gc.get_freeze_count() > 10 * len(gc.get_objects())


@pytest.mark.django_db(transaction=True)  # serve_warm closes the thread's connection
def test_a_worker_that_has_not_served_the_default_corpus_answers_from_it_during_an_outage(
        sample_corpus, cold_process, settings, monkeypatch):
    from django.db import connection

    settings.DOCSMCP_PINNED_CORPORA = "another"  # nothing pinned: the worker opens the sample on first use
    serving.serve_warm(watch=False)
    assert not serving.STATE.indexes.loaded("sample")
    # The database goes away (its port refuses connections) before the worker's first request.
    monkeypatch.setattr(serving.STATE, "ttl", 0.0)  # every lookup asks the database again
    connection.close()
    monkeypatch.setitem(connection.settings_dict, "PORT", str(free_port()))
    try:
        index = active_index(None)
    finally:
        connection.close()
    assert index.build_id and serving.STATE.indexes.loaded("sample")  # opened from disk, its build known without the database


def test_a_worker_of_serve_is_ready_only_when_it_sees_every_worker_warm(tmp_path, monkeypatch):
    """A worker that cannot read the directory where its siblings say they are warm reports warming: a
    load balancer then keeps its burst off the server instead of sending it to the one warm worker."""
    monkeypatch.setitem(serving.STATE.warming, "state", warming.READY)
    directory = tmp_path / "warm"
    directory.mkdir()
    monkeypatch.setattr(warming, "_server", {"directory": str(directory), "workers": 2})
    (directory / str(os.getpid())).touch()
    assert warming.warm_state()["state"] == warming.WARMING  # one of two
    (directory / str(os.getppid())).touch()
    assert warming.warm_state()["state"] == warming.READY
    monkeypatch.setattr(warming, "_server", {"directory": str(tmp_path / "gone"), "workers": 2})
    assert warming.warm_state()["state"] == warming.WARMING


def test_health_is_503_starting_while_the_process_warms(sample_corpus, cold_process, client):
    serving.STATE.warming["state"] = warming.WARMING
    response = client.get("/health/")
    assert response.status_code == 503
    body = response.json()
    assert (body["health"], body["ready"], body["checks"]["warm"]) == ("starting", False, "warming")
    serving.STATE.warming["state"] = warming.READY
    body = client.get("/health/").json()
    assert (body["health"], body["ready"], body["checks"]["warm"]) == ("ok", True, "ready")


def _search(base: str, query: str) -> dict:
    response = httpx.post(f"{base}/mcp/", timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_docs", "arguments": {"query": query, "limit": 3}}},
        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_serve_answers_health_ready_and_searches_after_warming_and_switches_builds_warm(sample_corpus, tmp_path):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the server subprocess needs PostgreSQL (set DATABASE_URL) to share the test database")
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "MCP_"))}
    environment.update(DJANGO_SETTINGS_MODULE="docsmcp_site.settings", DATABASE_URL=_database_url(),
                       DOCSMCP_SECRET_KEY_FILE=str(tmp_path / "secret_key"), DOCSMCP_INDEX_ROOT=str(tmp_path / "idx"),
                       MCP_RATE_LIMIT_REDIS_URL="", DOCSMCP_DEFAULT_CORPUS="sample")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "manage.py", "serve", "--no-worker", "--port", str(port),
                                   "--workers", "1"], cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                health = httpx.get(f"{base}/health/", timeout=30)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.25)
        body = health.json()
        assert health.status_code == 200 and body["ready"] is True and body["checks"]["warm"] == "ready", body
        assert _search(base, "refund a payment")["structuredContent"]["hits"]

        new = _build(tmp_path / "new-build", "new-build")
        build = BuildRun.objects.create(corpus=sample_corpus, build_id="new-build", kind=BuildRun.KIND_FULL,
                                        status=BuildRun.COMPLETE, index_path=str(new), embedding_provider="hash")
        build_activate(build=build)
        until = time.monotonic() + 4  # the watcher notices within a second and warms in the background
        while time.monotonic() < until:  # every call answers while the server switches builds
            assert _search(base, "refund a payment")["structuredContent"]["hits"]
    finally:
        stop(server)


@pytest.mark.slow
def test_a_parallel_parse_leaves_no_process_behind_and_its_workers_cpu_is_counted(tmp_path):
    docs = tmp_path / "many"
    docs.mkdir()
    for n in range(240):  # enough files for the parse to use worker processes
        (docs / f"page{n:03}.md").write_text(f"# Page {n}\n\n## Section\n\nText number {n}.\n")
    out = _fresh_python(
        "import json, os, resource, sys\n"
        "from pathlib import Path\n"
        "from retrieval.ingest.folder import scan_corpus\nfrom retrieval.ingest.validate import process_corpus\n"
        f"results = process_corpus(scan_corpus(Path({str(docs)!r})), workers=2)\n"
        "children = [c for t in os.listdir('/proc/self/task')\n"
        "            for c in open(f'/proc/self/task/{t}/children').read().split()]\n"
        "used = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([len(results), children, used.ru_utime + used.ru_stime > 0]))")
    assert json.loads(out) == [240, [], True]


@pytest.mark.slow
def test_what_the_server_preloads_before_forking_workers_opens_no_index_thread_or_connection():
    out = _fresh_python(
        "import json, sys, threading, django\n"
        "django.setup()\n"
        "from django.core.wsgi import get_wsgi_application\n"
        "from django.db import connections\n"
        "from mcp_endpoint.startup import import_views\n"
        "get_wsgi_application(); import_views()\n"
        "print(json.dumps([[m for m in ('lancedb', 'lance', 'onnxruntime', 'openai') if m in sys.modules],\n"
        "                  threading.active_count(), [c.connection is None for c in connections.all()]]))")
    assert json.loads(out) == [[], 1, [True]]


@pytest.mark.slow
def test_serve_master_imports_the_index_libraries_unopened_and_its_forked_workers_search_with_them(tmp_path):
    """The gunicorn master imports Lance and Arrow before it forks (their pages are then shared by the
    workers) with no thread of its own and its objects frozen out of the collector; a forked child then
    runs a search, evaluates a filter, and reads a chunk, a page and the page listing, all through Lance's
    datasets with its runtime started afresh in the child, and never imports LanceDB (whose library only
    builds use)."""
    build = _build(tmp_path / "build", "forked")
    out = _fresh_python(textwrap.dedent(f"""
        import gc, json, os, signal, sys, threading, django
        from retrieval.boot import boot
        boot()
        django.setup()
        from django.core.wsgi import get_wsgi_application
        from django.db import connections
        from mcp_endpoint.startup import freeze_for_fork, import_views, preload_index_libraries
        get_wsgi_application(); import_views(); preload_index_libraries(); freeze_for_fork()
        master = [[m for m in ("lance", "lancedb", "pyarrow") if m in sys.modules], threading.active_count(),
                  [c.connection is None for c in connections.all()], gc.get_freeze_count() > 0]
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            signal.alarm(60)  # a deadlocked runtime fails the test instead of hanging it
            from retrieval.search.documents import get_chunk, get_document, list_documents
            from retrieval.search.engine import SearchRequest, search
            from retrieval.search.index import Index
            index = Index({str(build)!r})
            hits = search(index, SearchRequest(query="refund a payment", limit=3), cursor_secret=b"t").hits
            page = hits[0].chunk_id.split("#")[0]
            catalog, mask = index.catalog(), index.filter_mask(f"filepath = '{{page}}'")
            scoped = set(catalog.values("filepath").take(catalog.codes("filepath", mask.nonzero()[0])).to_pylist())
            chunk = get_chunk(index, hits[0].chunk_id, context=1)
            document = get_document(index, page)
            listed = list_documents(index).total
            os.write(write, json.dumps([len(hits), scoped == {{page}},
                                        bool(chunk.chunks), bool(document.content), listed > 0,
                                        "lancedb" in sys.modules]).encode())
            os._exit(0)
        os.close(write)
        answer = os.read(read, 1000).decode()
        _, status = os.waitpid(child, 0)
        print(json.dumps([master, json.loads(answer or "null"), status]))
    """))
    master, child, status = json.loads(out.splitlines()[-1])
    assert master == [["lance", "pyarrow"], 1, [True], True]
    assert status == 0 and child[0] > 0 and child[1:] == [True, True, True, True, False], child


def _memory_kb(pid: int) -> dict[str, int]:
    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    return {key: int(value) for key, value in re.findall(r"^(\w+):\s+(\d+) kB", text, re.M)}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_workers_of_serve_share_the_embedding_model_their_master_loaded(tmp_path):
    """With a local-model build active, the gunicorn master loads the model before it forks, so its
    pages are shared by the workers instead of copied into each; every worker still embeds queries
    with it (one thread per run: onnxruntime has no thread pool for the fork to lose)."""
    from django.db import connection

    from corpus.models import Corpus
    from retrieval.format.metadata import read_metadata

    if connection.vendor != "postgresql" or not Path("/proc/self/smaps_rollup").exists():
        pytest.skip("needs PostgreSQL (DATABASE_URL) shared with the server, and Linux's /proc")
    out = tmp_path / "local-build"
    build_index(BuildRequest(SAMPLE_DOCS, out, "local-build", "sample", provider=get_provider("local"), workers=1))
    metadata = read_metadata(out)
    corpus = Corpus.objects.create(name="sample", source_dir=str(SAMPLE_DOCS), settings={"embedding_provider": "local"})
    build_activate(build=BuildRun.objects.create(
        corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL, status=BuildRun.COMPLETE,
        index_path=str(out), embedding_provider="local", embedding=metadata.embedding, stats=metadata.stats))
    with serve_subprocess(tmp_path, workers=2, DOCSMCP_LOCAL_THREADS="1") as served:
        base, server = served.base, served.server
        for _ in range(8):  # fresh connections: both workers answer some
            assert _search(base, "refund a payment")["structuredContent"]["hits"]
        # serve supervises gunicorn: its one child is the gunicorn master, whose children are the workers
        (master,) = [int(p) for p in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()]
        workers = [int(p) for p in Path(f"/proc/{master}/task/{master}/children").read_text().split()]
        assert len(workers) == 2
        assert "onnxruntime" in Path(f"/proc/{master}/maps").read_text(), "the master did not load the model"
        memory = [_memory_kb(pid) for pid in workers]
        # Pages a worker inherited from the master and never wrote count in its Shared_* and only half in its Pss.
        assert sum(m["Pss"] for m in memory) < 0.75 * sum(m["Rss"] for m in memory), memory
