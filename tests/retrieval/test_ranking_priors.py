"""Ranking priors: navigation sections, auto-included guides under a filter, page evidence, page text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrieval.embeddings import get_provider
from retrieval.ingest.navigation import link_share
from retrieval.search import priors
from retrieval.search.engine import SearchRequest, search
from retrieval.search.index import Index
from retrieval.search.priors import Signals, rescore

ROOT = Path(__file__).resolve().parents[2]
K8S_CORPUS = ROOT.parent / "shared" / "bench" / "k8s" / "corpus"
K8S_QUESTIONS = ROOT / "evals" / "suites" / "k8s_questions.json"
SECRET = b"ranking-test"


def test_a_list_of_links_is_navigation_and_prose_is_not():
    whats_next = """## What's next

* Learn more about [environment variables](/docs/env/).
* Read [Secrets](/docs/secret/) and [ConfigMaps](/docs/configmap/).
* See the [API reference](https://example.org/api).
"""
    prose = """## Define an environment variable

Create a Pod whose container sets `DEMO_GREETING`. The [env](/docs/env/) field takes a list
of name and value pairs; each becomes a variable in the container's environment.

```yaml
env:
- name: DEMO_GREETING   # [not a link](in code)
```
"""
    assert link_share(whats_next) == 1.0
    assert link_share(prose) == 0.0
    assert link_share("# Only a heading\n") == 0.0


def test_navigation_ranks_below_an_answer_of_similar_relevance_but_stays_findable():
    items = [(0, 1.0), (1, 0.9), (2, 0.2)]
    signals = Signals(link_share=np.array([1.0, 0.0, 0.0]), page=np.array([0, 1, 2]))
    ranked = [p for p, _ in rescore(items, signals)]
    assert ranked == [1, 0, 2]


def test_under_a_filter_exact_chunks_rank_above_auto_included_ones_of_similar_relevance():
    items = [(0, 1.0), (1, 0.8), (2, 0.1)]
    signals = Signals(link_share=np.zeros(3), page=np.array([0, 1, 2]), exact=np.array([False, True, False]))
    ranked = rescore(items, signals)
    assert [p for p, _ in ranked] == [1, 0, 2]
    assert all(0.0 <= s <= 1.0 for _, s in ranked)


def test_page_similarity_lifts_the_page_that_is_about_the_question():
    items = [(0, 1.0), (1, 0.995)]
    signals = Signals(link_share=np.zeros(2), page=np.array([0, 1]), page_similarity=np.array([0.2, 0.7]))
    assert [p for p, _ in rescore(items, signals)] == [1, 0]


def test_page_similarity_ranks_pages_apart_rather_than_one_section_each():
    # The nearest page's best section passes a 5% better keyword match on the next page; a flat
    # rank (k = 60) gave the two pages nearly the same bonus and kept fusion's order.
    items = [(0, 1.0), (1, 0.95)]
    signals = Signals(link_share=np.zeros(2), page=np.array([0, 1]), page_similarity=np.array([0.5, 0.6]))
    assert [p for p, _ in rescore(items, signals)] == [1, 0]


def test_rescored_scores_stay_in_unit_range_at_the_top():
    items = [(i, 1.0) for i in range(5)]
    signals = Signals(link_share=np.zeros(5), page=np.zeros(5, int), page_similarity=np.ones(5))
    scores = [s for _, s in rescore(items, signals)]
    assert max(scores) <= 1.0 and scores == sorted(scores, reverse=True)
    assert scores[0] > scores[1]  # no flattening to 1.0 at the top
    assert priors.max_score(page_similarity=True) > priors.max_score(page_similarity=False) == 1.0


def test_page_text_lifts_every_chunk_of_the_page_about_the_question_and_keeps_their_order():
    # Page 0 matches one chunk well; page 1 is the page whose text is about the question.
    items = [(0, 1.0), (1, 0.97), (2, 0.95), (3, 0.2)]
    signals = Signals(link_share=np.zeros(4), page=np.array([0, 1, 1, 1]), page_text=np.array([0.3, 1.0, 1.0, 1.0]))
    assert [p for p, _ in rescore(items, signals)] == [1, 2, 0, 3]


def test_a_page_that_shares_little_text_with_the_question_gains_little():
    items = [(0, 1.0), (1, 0.5)]
    signals = Signals(link_share=np.zeros(2), page=np.array([0, 1]), page_text=np.array([0.1, 1.0]))
    assert [p for p, _ in rescore(items, signals)] == [0, 1]  # x1.05 against x1.5: a factor, not a bonus


def test_page_evidence_does_not_lift_an_auto_included_guide_above_the_filtered_page():
    # The guide (position 0) is the page most about the question; the filtered page comes close.
    items = [(0, 1.0), (1, 0.8)]
    signals = Signals(link_share=np.zeros(2), page=np.array([0, 1]), exact=np.array([False, True]),
                      page_similarity=np.array([0.9, 0.5]), page_text=np.array([1.0, 0.4]))
    assert [p for p, _ in rescore(items, signals)] == [1, 0]


def test_scores_stay_in_unit_range_with_page_text():
    items = [(i, 1.0) for i in range(3)]
    signals = Signals(link_share=np.zeros(3), page=np.zeros(3, int), page_similarity=np.ones(3),
                      page_text=np.ones(3))
    scores = [s for _, s in rescore(items, signals)]
    assert scores[0] == pytest.approx(1.0) and all(0.0 <= s <= 1.0 for s in scores)
    assert priors.max_score(page_similarity=True, page_text=True) > priors.max_score(page_similarity=True)


BACKUPS = """---
title: Backups
---

How the service keeps copies of your data, and how to get them back.

## Taking a snapshot

A snapshot copies every table at one point in time. Snapshots are the unit of backup.

## Restoring data

Pick the snapshot to restore, stop writes, then restore it; the restore replaces every table.

## Scheduling

Take a snapshot every night and keep the last seven.
"""


def _cli_reference() -> str:
    flags = "\n".join(f"## --{w}\n\nThe `--{w}` flag sets the {w} option of the command line tool, see the {w} "
                      "settings.\n" for w in ["verbose", "output", "format", "color", "timeout", "region", "profile"])
    return (f"---\ntitle: Command line\n---\n\nEvery flag of the command line tool.\n\n{flags}\n"
            "## --restore-snapshot\n\nRestore snapshot: `--restore-snapshot NAME` restores snapshot NAME.\n")


@pytest.fixture(scope="module")
def backups_index(tmp_path_factory) -> Index:
    """A guide about backups and a long command-line reference with one flag about snapshots;
    full text only, so the order comes from the text legs and the page-text prior alone."""
    from retrieval.ingest.build import BuildRequest, build_index

    root = tmp_path_factory.mktemp("backups")
    source = root / "docs"
    (source / "guides").mkdir(parents=True)
    (source / "reference").mkdir()
    (source / ".docs-mcp.json").write_text(json.dumps({"version": "1", "strategy": {"chunk_by": "h2"}}))
    (source / "guides" / "backups.md").write_text(BACKUPS)
    (source / "reference" / "cli.md").write_text(_cli_reference())
    build_index(BuildRequest(source, root / "build", "backups-1", "backups", provider=None, workers=1))
    return Index(root / "build")


def _ids(index: Index, query: str) -> list[str]:
    return [h.chunk_id for h in search(index, SearchRequest(query), cursor_secret=SECRET).hits]


def test_the_page_about_the_question_outranks_one_matching_section_of_another_page(backups_index, monkeypatch):
    assert backups_index.has_page_text
    assert _ids(backups_index, "how do I restore a snapshot")[0] == "guides/backups.md#restoring-data"
    monkeypatch.setattr(priors, "PAGE_TEXT_WEIGHT", 0.0)
    assert _ids(backups_index, "how do I restore a snapshot")[0] == "reference/cli.md#restore-snapshot"


def test_a_section_that_matches_the_question_exactly_still_leads(backups_index):
    assert _ids(backups_index, "restore snapshot")[0] == "reference/cli.md#restore-snapshot"


def test_a_filtered_search_goes_without_the_page_text_prior(backups_index, monkeypatch):
    from retrieval.search import legs, ranking
    from retrieval.search.filters import FilterPlan

    calls = []
    real = legs.page_text

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(legs, "page_text", counted)
    ranking.rank(backups_index, "how do I restore a snapshot", FilterPlan({}, None))
    assert len(calls) == 1
    filtered = ranking.rank(backups_index, "how do I restore a snapshot", FilterPlan({"area": "x"}, "filepath != ''"))
    assert len(calls) == 1 and filtered.items


def test_a_failing_page_text_search_leaves_the_search_answering(backups_index, monkeypatch, caplog):
    from retrieval.search import legs

    def broken(*args, **kwargs):
        raise RuntimeError("documents table unreadable")

    monkeypatch.setattr(legs, "page_text", broken)
    assert _ids(backups_index, "how do I restore a snapshot")[0] == "reference/cli.md#restore-snapshot"
    assert "page text search failed" in caplog.text


def test_a_build_without_the_page_text_index_answers_without_the_prior(backups_index, tmp_path):
    import shutil

    old = tmp_path / "old-build"
    shutil.copytree(backups_index.path, old)
    Index(old).documents.drop_index("content_idx")
    before = Index(old)
    assert not before.has_page_text
    assert _ids(before, "how do I restore a snapshot")[0] == "reference/cli.md#restore-snapshot"


@pytest.fixture(scope="module")
def local_sample_index(tmp_path_factory) -> Index:
    from retrieval.ingest.build import BuildRequest, build_index

    out = tmp_path_factory.mktemp("ranking-local") / "build"
    build_index(BuildRequest(ROOT / "corpus" / "sample_docs", out, "ranking-local", "sample",
                             provider=get_provider("local"), workers=1))
    return Index(out)


@pytest.mark.slow
def test_with_a_language_filter_that_languages_page_outranks_the_global_guides(local_sample_index):
    result = search(local_sample_index, SearchRequest("how do I retry a failed request", {"language": "go"}),
                    embedder=get_provider("local"), cursor_secret=SECRET)
    ids = [h.chunk_id for h in result.hits]
    assert ids[0] == "sdks/go/client.md#configuring-the-go-client/retries"
    assert any(i.startswith("guides/retries.md") for i in ids)  # auto-include still brings the guide


@pytest.mark.slow
def test_a_filtered_search_goes_without_page_similarity(local_sample_index, monkeypatch):
    calls = []
    real = Index.page_similarity

    def counted(self, *args):
        calls.append(args)
        return real(self, *args)

    monkeypatch.setattr(Index, "page_similarity", counted)
    embedder = get_provider("local")
    search(local_sample_index, SearchRequest("how do I retry a failed request"), embedder=embedder,
           cursor_secret=SECRET)
    assert len(calls) == 1
    filtered = search(local_sample_index, SearchRequest("how do I retry a failed request", {"language": "go"}),
                      embedder=embedder, cursor_secret=SECRET)
    assert len(calls) == 1 and filtered.hits


@pytest.mark.slow
def test_page_similarity_is_the_mean_of_the_pages_nearest_chunks_over_all_of_them(local_sample_index):
    from retrieval.search.index import PAGE_TOP

    index = local_sample_index
    query = get_provider("local").embed_query("how do I retry a failed request")
    catalog = index.catalog()
    positions = np.arange(len(catalog))
    pages = catalog.codes("filepath", positions)
    dots = index.vectors().dots(query)
    got = index.page_similarity(query, pages)
    for page in np.unique(pages):
        nearest = np.sort(dots[pages == page])[::-1][:PAGE_TOP]
        assert got[pages == page] == pytest.approx(nearest.mean(), abs=1e-5)
    assert max(np.bincount(pages)) > PAGE_TOP  # some page has more chunks than count towards it


@pytest.mark.slow
def test_the_local_models_floor_leaves_off_topic_questions_empty_and_finds_paraphrases(local_sample_index):
    embedder = get_provider("local")
    off_topic = search(local_sample_index, SearchRequest("ethereum blockchain wallet"), embedder=embedder,
                       cursor_secret=SECRET)
    assert off_topic.hits == [] and off_topic.hint
    # Shares few words with its answer: the vector leg finds it, and a floor set too high loses it.
    paraphrase = search(local_sample_index, SearchRequest("why does my endpoint receive the same notification "
                                                          "again hours later"), embedder=embedder, cursor_secret=SECRET)
    assert paraphrase.hits[0].chunk_id == "guides/webhooks.md#webhooks/delivery-and-retry-schedule"


@pytest.mark.slow
def test_the_navigation_section_is_no_longer_the_top_hit(local_sample_index):
    result = search(local_sample_index, SearchRequest("what to read next about webhooks"),
                    embedder=get_provider("local"), cursor_secret=SECRET)
    assert result.hits, "navigation stays findable when nothing else matches better"


@pytest.mark.skipif(not K8S_CORPUS.is_dir(), reason="the shared Kubernetes corpus is not beside this checkout")
def test_every_kubernetes_question_names_pages_that_exist():
    cases = json.loads(K8S_QUESTIONS.read_text())
    assert len(cases) >= 14 and len({c["name"] for c in cases}) == len(cases)
    for case in cases:
        for path in case["expectedFiles"]:
            assert (K8S_CORPUS / path).is_file(), f"{case['name']}: {path}"


def test_the_kubernetes_questions_load_as_an_eval_suite():
    from evals.cases import read_cases

    cases = read_cases(K8S_QUESTIONS)
    assert len(cases) == 14
    assert {c.name for c in cases} >= {"secret-as-env-var", "crashloopbackoff", "what-is-pdb"}
    assert all(c.expected_files and not c.expected_chunk_ids for c in cases)
