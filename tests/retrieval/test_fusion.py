"""Reciprocal rank fusion as pure functions: exact scores, normalisation and tie-breaks."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.search.fusion import RRF_K, fuse, fuse_positions, rrf_max, rrf_scores


def test_rrf_scores_sum_reciprocal_ranks_with_k_60():
    scores = rrf_scores([["a", "b", "c"], ["c", "a"]])
    assert RRF_K == 60
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)


def test_rrf_counts_an_item_listed_twice_in_one_ranking_once_at_its_best_rank():
    assert rrf_scores([["a", "b", "a"]]) == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 62)}


def test_rrf_weights_scale_each_leg():
    scores = rrf_scores([["a"], ["b"]], weights=[2.0, 1.0])
    assert scores["a"] == pytest.approx(2 / 61)
    assert scores["b"] == pytest.approx(1 / 61)


def test_rrf_rejects_bad_arguments():
    with pytest.raises(ValueError, match="positive"):
        rrf_scores([["a"]], k=0)
    with pytest.raises(ValueError, match="weights"):
        rrf_scores([["a"], ["b"]], weights=[1.0])


def test_rrf_max_is_rank_one_in_every_leg():
    assert rrf_max([1.0, 1.0, 1.0]) == pytest.approx(3 / 61)


def test_fuse_normalises_to_one_for_an_item_first_in_every_leg():
    fused = fuse([["a", "b"], ["a", "c"]], {"a": "a", "b": "b", "c": "c"})
    assert fused[0] == ("a", 1.0)
    assert all(0.0 < score <= 1.0 for _, score in fused)


def test_fuse_orders_by_score_then_by_tie_break_key():
    # b and c have the same ranks in mirrored legs: equal scores, ordered by their tie-break key.
    fused = fuse([["c", "b"], ["b", "c"]], {"b": "id-b", "c": "id-c"})
    assert [item for item, _ in fused] == ["b", "c"]
    assert fused[0][1] == fused[1][1]


def test_fuse_tie_break_works_with_positions_and_a_list_of_ids():
    ids = ["z.md", "a.md", "m.md"]
    # 0 and 2 tie at 1/61 + 1/63; 1 scores 2/62, a hair less.
    fused = fuse([[0, 1, 2], [2, 1, 0]], ids)
    assert [ids[p] for p, _ in fused] == ["m.md", "z.md", "a.md"]


def test_fuse_of_nothing_is_empty():
    assert fuse([], {}) == []
    assert fuse([[], []], {}) == []


def test_fuse_positions_equals_fuse_with_chunk_id_tie_breaks():
    rng = np.random.default_rng(7)
    ids = [f"doc{i % 13}.md#s{i}" for i in range(60)]
    tie_rank = np.argsort(np.argsort(ids, kind="stable"), kind="stable")
    for _ in range(200):
        rankings = [rng.integers(0, 60, size=rng.integers(0, 25)) for _ in range(rng.integers(1, 5))]
        expected = fuse([r.tolist() for r in rankings], ids, k=30)
        assert fuse_positions(rankings, tie_rank, k=30) == expected
    # Equal scores: ranked first by one leg each, so the chunk ID decides.
    assert [p for p, _ in fuse_positions([np.array([5]), np.array([2])], tie_rank)] == sorted(
        [5, 2], key=lambda p: ids[p])
    assert fuse_positions([np.array([], np.int64)], tie_rank) == []
