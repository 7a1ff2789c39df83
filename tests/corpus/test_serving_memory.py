"""A serving worker of many corpora: corpora open on first use, the least recently used close beyond
DOCSMCP_SERVING_MEMORY_MB, pinned corpora load at start and stay, and a small server warms everything
as it always did. Real indexes (the session's sample build, served under several corpus names)."""

from __future__ import annotations

import gc

import pytest

from corpus import serving, warming
from corpus.execution import build_activate
from corpus.models import BuildRun, Corpus
from corpus.serving import corpus_search, forget_active
from retrieval.search.engine import SearchRequest
from retrieval.search.index import Index
from retrieval.search.index_cache import INDEXES, IndexCache, estimated_bytes


@pytest.fixture
def corpora(sample_corpus, sample_build_dir):
    """`sample`, `alpha` and `beta`, each an active build of the sample docs."""
    for name in ("alpha", "beta"):
        corpus = Corpus.objects.create(name=name, description=f"{name} docs", settings={"embedding_provider": "hash"})
        build = BuildRun.objects.create(corpus=corpus, build_id=f"{name}-build", kind=BuildRun.KIND_FULL,
                                        status=BuildRun.COMPLETE, index_path=str(sample_build_dir),
                                        embedding_provider="hash", embedding=sample_corpus.active_build.embedding,
                                        stats=sample_corpus.active_build.stats)
        build_activate(build=build)
    forget_active()
    return ["alpha", "beta", "sample"]


@pytest.fixture
def cold_process():
    serving.STATE.forget(process=True)
    yield
    serving.STATE.forget(process=True)
    gc.unfreeze()


def test_the_least_recently_used_index_closes_when_over_budget_and_pinned_ones_stay(sample_build_dir):
    size = estimated_bytes(Index(sample_build_dir))
    cache = IndexCache()
    cache.configure(budget_bytes=int(2.5 * size))
    cache.get(sample_build_dir, slot="a")
    cache.get(sample_build_dir, slot="b")
    cache.get(sample_build_dir, slot="a")  # a is now the more recently used
    cache.get(sample_build_dir, slot="c")
    assert [cache.loaded(s) for s in "abc"] == [True, False, True]
    assert cache.held_bytes() <= 2.5 * size

    cache.configure(budget_bytes=int(1.5 * size), pinned=frozenset({"a"}))  # a shrunk budget closes c at once
    assert [cache.loaded(s) for s in "abc"] == [True, False, False]
    cache.get(sample_build_dir, slot="b")  # over budget with a pinned: the index just opened still serves
    assert [cache.loaded(s) for s in "abc"] == [True, True, False]
    cache.get(sample_build_dir, slot="c")
    assert [cache.loaded(s) for s in "abc"] == [True, False, True]


@pytest.mark.django_db(transaction=True)  # serve_warm closes the thread's connection
def test_a_server_of_many_corpora_starts_with_none_loaded_and_opens_each_on_first_use(
        corpora, cold_process, settings):
    settings.DOCSMCP_PIN_ALL_MAX = 2  # three corpora: more than a small server
    state = serving.serve_warm(watch=False)
    assert state["state"] == warming.READY and state["corpora"] == {}
    assert not any(INDEXES.loaded(name) for name in corpora)
    serving.watch_once()  # the activation watcher opens nothing that is not loaded
    assert not any(INDEXES.loaded(name) for name in corpora)

    hits = corpus_search("beta", SearchRequest(query="retries")).result.hits
    assert hits and INDEXES.loaded("beta") and not INDEXES.loaded("alpha")
    serving.watch_once()
    assert INDEXES.loaded("beta")


@pytest.mark.django_db(transaction=True)  # serve_warm closes the thread's connection
def test_pinned_corpora_load_at_start_and_the_budget_closes_the_others(corpora, cold_process, settings):
    size = estimated_bytes(Index(corpus_search("sample", SearchRequest(query="x")).index.path))
    serving.STATE.forget(process=True)
    settings.DOCSMCP_PINNED_CORPORA = "alpha"
    settings.DOCSMCP_SERVING_MEMORY_MB = 1
    assert 2 * size > 1024 * 1024 >= size, size  # the budget holds one sample index, not two
    state = serving.serve_warm(watch=False)
    assert set(state["corpora"]) == {"alpha"} and INDEXES.loaded("alpha")

    for name in ("beta", "sample", "beta"):
        assert corpus_search(name, SearchRequest(query="retries")).result.hits
        assert INDEXES.loaded("alpha") and INDEXES.loaded(name)
        assert sum(INDEXES.loaded(n) for n in corpora) == 2  # pinned alpha and the corpus just used
