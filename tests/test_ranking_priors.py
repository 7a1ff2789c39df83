"""Ranking priors: navigation sections, auto-included guides under a filter, page evidence."""

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

ROOT = Path(__file__).resolve().parent.parent
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


def test_rescored_scores_stay_in_unit_range_at_the_top():
    items = [(i, 1.0) for i in range(5)]
    signals = Signals(link_share=np.zeros(5), page=np.zeros(5, int), page_similarity=np.ones(5))
    scores = [s for _, s in rescore(items, signals)]
    assert max(scores) <= 1.0 and scores == sorted(scores, reverse=True)
    assert scores[0] > scores[1]  # no flattening to 1.0 at the top
    assert priors.max_score(page_similarity=True) > priors.max_score(page_similarity=False) == 1.0


@pytest.fixture(scope="module")
def local_sample_index(tmp_path_factory) -> Index:
    from retrieval.ingest.build import BuildRequest, build_index

    out = tmp_path_factory.mktemp("ranking-local") / "build"
    build_index(BuildRequest(ROOT / "corpus" / "sample_docs", out, "ranking-local", "sample",
                             provider=get_provider("local"), workers=1))
    return Index(out)


def test_with_a_language_filter_that_languages_page_outranks_the_global_guides(local_sample_index):
    result = search(local_sample_index, SearchRequest("how do I retry a failed request", {"language": "go"}),
                    embedder=get_provider("local"), cursor_secret=SECRET)
    ids = [h.chunk_id for h in result.hits]
    assert ids[0] == "sdks/go/client.md#configuring-the-go-client/retries"
    assert any(i.startswith("guides/retries.md") for i in ids)  # auto-include still brings the guide


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
