"""Routing a search across many corpora (retrieval/search/routing.py): which corpora are ranked in full."""

from __future__ import annotations

import math

from retrieval.search.routing import route


def test_the_corpora_whose_chunks_come_closest_are_ranked_and_the_profile_breaks_near_ties():
    affinities = [0.2, 0.9, 0.5, 0.88]
    assert route([0, 0, 0, 0], affinities, ["m"] * 4, keep=2) == [1, 3]
    assert route([0, 0, 0, 5.0], affinities, ["m"] * 4, keep=1) == [3]  # named in its profile, nearly as close
    assert route([0, 0, 0, 0], affinities, ["m"] * 4, keep=1) == [1]


def test_a_clear_cosine_lead_is_not_overturned_by_the_profile():
    # A payments question: its corpus comes closest; a larger corpus's page titles share more of its words.
    assert route([0, 2.5, 1.7], [0.4455, 0.4211, 0.339], ["m"] * 3, keep=1) == [0]


def test_corpora_without_vectors_are_always_ranked_and_few_corpora_all():
    assert route([1.0, 0, 0, 0], [None, 0.9, 0.5, 0.1], ["m"] * 4, keep=1) == [0, 1]
    assert route([0, 0], [0.1, 0.9], ["m"] * 2, keep=2) == [0, 1]
    assert route([3.0, 0, 0], [None, None, None], ["m"] * 3, keep=1) == [0, 1, 2]  # the profile alone never routes
    assert route([0, 0, 0], [0.1, 0.9, 0.5], ["m"] * 3, keep=0) == [0, 1, 2]


def test_cosines_of_different_models_are_compared_only_among_their_own():
    # Model b's cosines run higher; scaled per model, each model's best corpus is kept.
    got = route([0, 0, 0, 0], [0.3, 0.4, 0.8, 0.95], ["a", "a", "b", "b"], keep=2)
    assert got == [1, 3]


def test_corpora_without_semantic_vectors_are_routed_by_their_pages_words():
    lexical = [-1.5, 2.0, -math.inf, 0.3]  # the lexicon's match of each; -inf: no query term in its pages
    assert route([0, 0, 0, 0], [None] * 4, ["none"] * 4, keep=1, lexical=lexical) == [1]
    assert route([0, 0, 0, 0], [None] * 4, ["none"] * 4, keep=2, lexical=lexical) == [1, 3]
    # a build made before lexicons is always ranked; a semantic model's corpora are routed among themselves
    assert route([0, 0, 0, 0], [None, None, None, None], ["none"] * 4, keep=1, lexical=[None, 2.0, 1.0, 0.5]) == [0, 1]
    assert route([0] * 5, [0.9, 0.2, None, None, None], ["m", "m", "none", "none", "none"], keep=1,
                 lexical=[-3.0, 5.0, 0.1, 1.0, -2.0]) == [0, 3]


def test_corpora_that_nothing_tells_apart_go_by_their_order():
    assert route([0, 0, 0], [None] * 3, ["none"] * 3, keep=1, lexical=[-math.inf] * 3) == [0]
