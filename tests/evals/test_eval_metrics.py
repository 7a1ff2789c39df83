"""evals/metrics.py against hand-computed values (worked in docs/evals.md) and the shared harness."""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path

import pytest

from evals import metrics as m

HARNESS = Path(__file__).resolve().parents[3] / "shared" / "bench" / "harness" / "mcp_eval.py"
LOG2_3 = math.log2(3)


def test_two_relevant_at_ranks_one_and_three():
    ranked, relevant = ["a", "x", "b", "y", "z"], {"a", "b"}
    # DCG@5 = 1/log2(2) + 1/log2(4) = 1.5; IDCG@5 = 1 + 1/log2(3) = 1.6309...
    assert m.ndcg_at(ranked, relevant, 5) == pytest.approx(1.5 / (1 + 1 / LOG2_3))
    assert m.ndcg_at(ranked, relevant, 5) == pytest.approx(0.919720, abs=1e-6)
    assert m.mrr_at(ranked, relevant) == 1.0
    assert m.recall_at(ranked, relevant, 5) == 1.0
    assert m.recall_at(ranked, relevant, 1) == 0.5
    assert m.hit_at(ranked, relevant, 1) == 1.0


def test_single_relevant_at_rank_three():
    ranked = ["x", "y", "a"]
    metrics = m.rank_metrics(ranked, {"a"})
    assert metrics == {
        "mrr@10": pytest.approx(1 / 3), "ndcg@5": 0.5, "ndcg@10": 0.5, "recall@5": 1.0, "recall@10": 1.0,
        "hit@1": 0.0, "hit@5": 1.0, "hit@10": 1.0, "first_rank": 3,
    }


def test_relevant_at_rank_seven_counts_only_at_ten():
    ranked = [f"x{i}" for i in range(6)] + ["a"] + ["y", "z", "w"]
    metrics = m.rank_metrics(ranked, {"a"})
    assert metrics["ndcg@5"] == 0.0
    assert metrics["ndcg@10"] == pytest.approx(1 / 3)  # 1/log2(8)
    assert metrics["recall@5"] == 0.0 and metrics["recall@10"] == 1.0
    assert metrics["mrr@10"] == pytest.approx(1 / 7)
    assert metrics["hit@5"] == 0.0 and metrics["hit@10"] == 1.0


def test_relevant_beyond_ten_scores_zero_but_has_a_rank():
    ranked = [f"x{i}" for i in range(12)] + ["a"]
    assert m.rank_metrics(ranked, {"a"})["mrr@10"] == 0.0
    assert m.rank_metrics(ranked, {"a"})["first_rank"] is None
    assert m.first_relevant_rank(ranked, {"a"}) == 13


def test_duplicate_hits_count_once_and_idcg_uses_all_relevant():
    ranked = ["a", "a", "b"]
    relevant = {"a", "b", "c"}
    # ranks 1 and 3 count; IDCG@5 over 3 relevant = 1 + 1/log2(3) + 1/2
    assert m.ndcg_at(ranked, relevant, 5) == pytest.approx(1.5 / (1.5 + 1 / LOG2_3))
    assert m.ndcg_at(ranked, relevant, 5) == pytest.approx(0.703918, abs=1e-6)
    assert m.recall_at(ranked, relevant, 5) == pytest.approx(2 / 3)


def test_no_hits_scores_zero():
    metrics = m.rank_metrics([], {"a"})
    assert all(metrics[k] == 0.0 for k in m.METRIC_KEYS)
    assert metrics["first_rank"] is None


def test_recall_without_relevant_items_is_an_error():
    with pytest.raises(ValueError, match="relevant"):
        m.recall_at(["a"], set(), 5)


def test_file_level_keeps_hit_ranks():
    files = ["f1.md", "f1.md", "f2.md"]
    ranked = m.file_ranking(files)
    assert ranked == ["f1.md", None, "f2.md"]
    # f2 is the second distinct file but the third hit: rank 3, not 2
    assert m.mrr_at(ranked, {"f2.md"}) == pytest.approx(1 / 3)
    assert m.ndcg_at(ranked, {"f1.md", "f2.md"}, 5) == pytest.approx(1.5 / (1 + 1 / LOG2_3))


def test_leaf_matching():
    hits = ["a.md#_preamble/x/y", "a.md#z", "b.md#x/y", "a.md"]
    expected = {"a.md#x/y", "a.md#_preamble"}
    assert m.match_chunks(hits, expected, "exact") == hits
    assert m.match_chunks(hits, expected, "leaf") == ["a.md#x/y", "a.md#z", "b.md#x/y", "a.md#_preamble"]
    assert m.leaf("a.md#x/y-2") == ("a.md", "y-2")
    assert m.leaf("a.md") == ("a.md", "_preamble")
    with pytest.raises(ValueError, match="exact, leaf"):
        m.match_chunks(hits, expected, "fuzzy")


def test_rounds_to_the_right_chunk():
    pages = [["x", "y"], ["z", "a"], ["b"]]
    assert m.first_relevant_round(pages, {"a", "b"}) == 2
    assert m.first_relevant_round(pages, {"q"}) is None
    assert m.rounds_summary([1, None, 2, 1]) == {"found": 0.75, "mean_rounds": pytest.approx(1.3333, abs=1e-4)}
    assert m.rounds_summary([None]) == {"found": 0.0, "mean_rounds": None}
    assert m.rounds_summary([]) is None


def test_percentiles_interpolate_linearly():
    values = [40, 10, 30, 20]
    assert m.percentile(values, 50) == 25
    assert m.percentile(values, 95) == pytest.approx(38.5)
    assert m.percentile(values, 99) == pytest.approx(39.7)
    assert m.percentile([7.0], 99) == 7.0
    assert m.percentile([], 50) is None
    assert m.latency_summary([10, 20, 30, 40]) == {"p50": 25, "p95": 38.5, "p99": 39.7, "mean": 25, "max": 40,
                                                  "n": 4}
    assert m.latency_summary([]) is None


def test_aggregate_leaves_out_rows_without_the_level():
    rows = [m.rank_metrics(["a"], {"a"}), None, m.rank_metrics(["x", "a"], {"a"})]
    agg = m.aggregate(rows)
    assert agg["n"] == 2
    assert agg["mrr@10"] == 0.75
    assert agg["hit@1"] == 0.5
    assert m.aggregate([None]) is None


def test_case_score_and_comparison():
    assert m.case_score(zero_result=False, passed=True, rank=4) == 0.25
    assert m.case_score(zero_result=False, passed=False, rank=None) == 0.0
    assert m.case_score(zero_result=True, passed=True, rank=None) == 1.0
    assert m.compare_scores(0.5, 1.0) == "better"
    assert m.compare_scores(0.5, 0.25) == "worse"
    assert m.compare_scores(0.5, 0.5) == "same"
    assert m.compare_scores(None, 0.5) == "new"
    assert m.compare_scores(0.5, None) == "removed"


@pytest.mark.skipif(not HARNESS.exists(), reason=f"shared harness not found at {HARNESS}")
def test_same_numbers_as_the_shared_harness():
    spec = importlib.util.spec_from_file_location("mcp_eval", HARNESS)
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    rng = random.Random(7)
    pool = [f"f{i % 4}.md#s{i}" for i in range(20)]
    for _ in range(300):
        ranked = rng.sample(pool, rng.randint(0, 12)) + rng.sample(pool, rng.randint(0, 3))
        relevant = set(rng.sample(pool, rng.randint(1, 4)))
        ours, theirs = m.rank_metrics(ranked, relevant), harness.rank_metrics(ranked, relevant)
        for key in m.METRIC_KEYS:
            assert ours[key] == pytest.approx(theirs[key]), (key, ranked, relevant)
        assert ours["first_rank"] == theirs["first_rank"]
        files = [c.split("#")[0] for c in ranked]
        rel_files = {c.split("#")[0] for c in relevant}
        seen, harness_files = set(), []
        for f in files:
            harness_files.append(None if f in seen else f)
            seen.add(f)
        assert m.file_ranking(files) == harness_files
        assert m.rank_metrics(m.file_ranking(files), rel_files) == pytest.approx(
            harness.rank_metrics(harness_files, rel_files))
        assert m.match_chunks(ranked, relevant, "leaf") == harness.match_chunks(ranked, relevant, "leaf")
    values = [rng.random() * 100 for _ in range(57)]
    for p in (50, 95, 99):
        assert m.percentile(values, p) == pytest.approx(harness.percentile(sorted(values), p))
