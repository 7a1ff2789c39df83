"""A build's catalog, vectors and chunk text as files that every serving process maps, so a host
holds them once however many workers serve them (retrieval/format/mapped.py)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from corpus.execution import build_activate
from corpus.models import BuildRun, Corpus
from retrieval.corpus_summary import CorpusProfile, rank_corpora
from retrieval.embeddings import get_provider
from retrieval.format.lexicon import CHUNKS_FILE, PAGES_FILE, TERMS_FILE, query_terms, read_lexicon
from retrieval.format.mapped import (
    DOCUMENT_PAGES_FILE,
    DOCUMENT_ROWIDS_FILE,
    LINK_STARTS_FILE,
    LINK_TARGETS_FILE,
    MAPPED_DIR,
)
from retrieval.format.metadata import read_metadata
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.search.engine import SearchRequest, search
from retrieval.search.index import Index
from tests.conftest import SAMPLE_DOCS
from tests.corpus.test_warming import _search
from tests.serve_helpers import serve_subprocess

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's /proc/<pid>/maps")

QUERIES = ("refund a payment", "webhook signature", "rate limits retry", "pagination cursor")


def _build(out: Path, build_id: str) -> Path:
    build_index(BuildRequest(SAMPLE_DOCS, out, build_id, "sample", provider=get_provider("hash"), workers=1))
    return out


def _mapped_files(pid: int | str, under: Path) -> set[str]:
    """Files under `under` that process `pid` has mapped."""
    prefix = str(under.resolve())
    return {line.split(None, 5)[5] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
            if len(line.split(None, 5)) == 6 and line.split(None, 5)[5].startswith(prefix)}


def _hits(index: Index) -> list[list[tuple[str, str]]]:
    provider = get_provider("hash")
    return [[(hit.chunk_id, hit.content) for hit in search(index, SearchRequest(query, limit=10), embedder=provider,
                                                                cursor_secret=b"test").hits]
            for query in QUERIES]


@pytest.fixture(scope="module")
def sample_build(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("mapped") / "build", "mapped-1")


def test_a_build_writes_the_files_a_server_maps_and_searches_from_them(sample_build):
    index = Index(sample_build)
    hits = _hits(index)
    assert all(hits)
    assert index.mapped
    mapped = {Path(name).name for name in _mapped_files("self", sample_build / MAPPED_DIR)}
    assert {"catalog.arrow", "vectors.npy", "texts.arrow"} <= mapped


def test_a_build_made_before_the_mapped_files_serves_the_same_hits_from_memory(sample_build, tmp_path):
    old = tmp_path / "old-build"
    shutil.copytree(sample_build, old, ignore=shutil.ignore_patterns(MAPPED_DIR))
    index = Index(old)
    assert _hits(index) == _hits(Index(sample_build))
    assert not index.mapped and not _mapped_files("self", old)


def test_the_build_resolves_page_links_once_and_a_build_without_them_resolves_them_on_first_use(sample_build,
                                                                                               tmp_path):
    """A first search's page-text and link priors read the build's files; a build made before them (its other
    mapped files kept) makes them from the tables on first use, and ranks the same."""
    earlier = tmp_path / "earlier-build"
    shutil.copytree(sample_build, earlier)
    for name in (DOCUMENT_ROWIDS_FILE, DOCUMENT_PAGES_FILE, LINK_STARTS_FILE, LINK_TARGETS_FILE):
        (earlier / MAPPED_DIR / name).unlink()
    new, old = Index(sample_build), Index(earlier)
    assert new.page_links() is not None and new.mapped and not new._datasets  # nothing read from a table
    assert _hits(old) == _hits(new)
    assert "documents" in old._datasets  # read from the documents table
    links_new, links_old = new.page_links(), old.page_links()
    assert links_new.targets.tolist() == links_old.targets.tolist() and len(links_new.targets)
    assert links_new.starts.tolist() == links_old.starts.tolist()


def test_a_build_made_before_lexicons_still_serves_and_is_ranked_by_its_profile_alone(sample_build, tmp_path):
    earlier = tmp_path / "earlier-build"
    shutil.copytree(sample_build, earlier)
    for name in (TERMS_FILE, PAGES_FILE, CHUNKS_FILE):
        (earlier / MAPPED_DIR / name).unlink()
    assert _hits(Index(earlier)) == _hits(Index(sample_build))
    lexicon = read_lexicon(sample_build / MAPPED_DIR)
    assert read_lexicon(earlier / MAPPED_DIR) is None
    assert (lexicon.total, lexicon.chunk_total) == (42, len(Index(sample_build).catalog().id_order))
    query = "X-RateLimit-Remaining"  # in the sample's page text only
    ranked = rank_corpora(query, [CorpusProfile("earlier", titles=("Rate limits",)),
                                  CorpusProfile("sample", titles=("Rate limits",), lexicon=lexicon)], query_terms(query))
    assert ranked == [("sample", 1.0), ("earlier", 0.0)]


def test_a_build_made_before_chunk_counts_is_ranked_by_its_pages(sample_build, tmp_path):
    earlier = tmp_path / "earlier-build"
    shutil.copytree(sample_build, earlier)
    (earlier / MAPPED_DIR / CHUNKS_FILE).unlink()
    lexicon, pages_only = read_lexicon(sample_build / MAPPED_DIR), read_lexicon(earlier / MAPPED_DIR)
    assert pages_only.chunks is None and pages_only.total == lexicon.total
    terms = query_terms("webhook signature")
    (pages, chunks), (same_pages, no_chunks) = lexicon.frequencies(terms), pages_only.frequencies(terms)
    assert same_pages.tolist() == pages.tolist() and no_chunks is None
    assert (chunks > pages).all()  # more chunks than pages hold each word: a page has several sections on webhooks
    ranked = dict(rank_corpora("webhook signature", [CorpusProfile("earlier", lexicon=pages_only),
                                                     CorpusProfile("sample", lexicon=lexicon)], terms))
    assert ranked["earlier"] > 0 and ranked["sample"] > 0
    # chunk counts that do not fit the terms (a copy cut short) are set aside the same way, and said so
    (earlier / MAPPED_DIR / CHUNKS_FILE).write_bytes((sample_build / MAPPED_DIR / PAGES_FILE).read_bytes()[:-64])
    assert read_lexicon(earlier / MAPPED_DIR).chunks is None


def _workers(server: subprocess.Popen) -> list[int]:
    """The gunicorn workers: serve supervises gunicorn, so they are its child's children."""
    workers = []
    for master in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split():
        workers += [int(p) for p in Path(f"/proc/{master}/task/{master}/children").read_text().split()]
    return workers


def _until_every_worker_maps(base: str, server: subprocess.Popen, build: Path, log: Path) -> list[set[str]]:
    """Searches from fresh connections until each worker has mapped `build`'s files (at most 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        for query in QUERIES:
            assert _search(base, query)["structuredContent"]["hits"]
        found = [_mapped_files(pid, build / MAPPED_DIR) for pid in _workers(server)]
        if len(found) == 2 and all(len(files) >= 3 for files in found):
            return found
        assert time.monotonic() < deadline, (found, log.read_text(errors="replace"))
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_workers_of_serve_map_the_same_build_files_and_a_newly_activated_build_too(tmp_path):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the server subprocess needs PostgreSQL (set DATABASE_URL) to share the test database")
    corpus = Corpus.objects.create(name="sample", source_dir=str(SAMPLE_DOCS), settings={"embedding_provider": "hash"})

    def activate(out: Path) -> None:
        metadata = read_metadata(out)
        build_activate(build=BuildRun.objects.create(
            corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL, status=BuildRun.COMPLETE,
            index_path=str(out), embedding_provider="hash", embedding=metadata.embedding, stats=metadata.stats))

    first = _build(tmp_path / "first", "first")
    activate(first)
    with serve_subprocess(tmp_path, workers=2) as served:
        base, server, log = served.base, served.server, served.log
        one, other = _until_every_worker_maps(base, server, first, log)
        assert one == other  # the same files, so the page cache holds them once for both

        second = _build(tmp_path / "second", "second")
        activate(second)
        one, other = _until_every_worker_maps(base, server, second, log)
        assert one == other
