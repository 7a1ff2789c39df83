"""int8 chunk vectors: how close their scores stay to float32 cosines, and their edge cases."""

from __future__ import annotations

import numpy as np

from retrieval.search.vectors import Vectors, quantize


def _unit_rows(rows: int, dims: int, seed: int = 3) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(rows, dims)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _vectors(matrix: np.ndarray) -> Vectors:
    vectors = Vectors.empty(*matrix.shape)
    vectors.put(np.arange(len(matrix)), matrix)
    return vectors


def test_codes_decode_within_half_a_step_of_each_component():
    matrix = _unit_rows(200, 384)
    codes, scales = quantize(matrix)
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127
    error = np.abs(codes * scales[:, None] - matrix)
    assert (error <= scales[:, None] / 2 + 1e-7).all()


def test_dots_stay_within_a_hundredth_of_float_cosines():
    matrix = _unit_rows(2000, 384)
    queries = _unit_rows(20, 384, seed=4)
    vectors = _vectors(matrix)
    for query in queries:
        assert np.abs(vectors.dots(query) - matrix @ query).max() < 0.01


def test_the_nearest_row_of_a_perturbed_query_is_still_first():
    matrix = _unit_rows(5000, 384)
    vectors = _vectors(matrix)
    rng = np.random.default_rng(5)
    for row in rng.choice(len(matrix), 50, replace=False):
        query = matrix[row] + rng.normal(scale=0.02, size=384).astype(np.float32)
        assert int(np.argmax(vectors.dots(query))) == row


def test_dots_at_positions_equal_those_entries_of_the_full_scan():
    vectors = _vectors(_unit_rows(300, 32))
    query = _unit_rows(1, 32, seed=9)[0]
    positions = np.array([299, 0, 17])
    assert np.array_equal(vectors.dots(query, positions), vectors.dots(query)[positions])
    assert vectors.dots(query, np.empty(0, np.int64)).shape == (0,)


def test_a_zero_vector_scores_zero_not_nan():
    matrix = _unit_rows(3, 8)
    matrix[1] = 0
    vectors = _vectors(matrix)
    assert vectors.scales[1] == 0
    scores = vectors.dots(matrix[0])
    assert scores[1] == 0 and np.isfinite(scores).all()
    assert np.isfinite(vectors.dots(np.zeros(8, np.float32))).all()


def test_rows_decode_the_given_positions():
    matrix = _unit_rows(10, 16)
    decoded = _vectors(matrix).rows([7, 2])
    assert decoded.dtype == np.float32 and np.abs(decoded - matrix[[7, 2]]).max() < 0.01
