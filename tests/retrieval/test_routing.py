"""Routing a search across many corpora (retrieval/search/routing.py): which corpora are ranked in full."""

from __future__ import annotations

import math

import numpy as np

from retrieval.corpus_summary import Lexicon, page_text_scores
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


def _lexicon(pages: list[int], total: int, chunks: list[int] | None = None, chunk_total: int = 0) -> Lexicon:
    """A lexicon of the terms 1, 2, ...: how many pages (and chunks) hold each."""
    return Lexicon(np.arange(1, len(pages) + 1, dtype=np.uint64), np.array(pages, np.uint32), total,
                   None if chunks is None else np.array(chunks, np.uint32), chunk_total)


def _text(held: int, chunks: int, words_per_chunk: int, pages: int) -> Lexicon:
    """A corpus whose question words (terms 1 and 2) are each in `held` of its chunks and pages, the rest of
    its text (term 3 stands for every other word) filling `words_per_chunk` distinct words a chunk."""
    rest = chunks * words_per_chunk - 2 * held
    return _lexicon([held, held, rest], pages, [held, held, rest], chunks)


def test_the_lexical_match_takes_shares_of_the_text_so_long_pages_or_chunks_do_not_win_every_everyday_word():
    """A corpus of long pages and long sections holds a question's everyday words in more of its pages and
    chunks than a corpus of short ones, though in a smaller part of its text; the match weighs that part."""
    terms = np.array([1, 2], np.uint64)
    long_text = _text(held=300, chunks=1000, words_per_chunk=100, pages=100)  # the words are 0.3% of its text
    short_text = _text(held=200, chunks=1000, words_per_chunk=20, pages=400)  # 1% of its text
    scores, found = page_text_scores(terms, [long_text, short_text])
    assert scores[1] > scores[0] and found.all()
    # cut into twice as many sections, the same text matches as it did
    halves = _text(held=300, chunks=2000, words_per_chunk=50, pages=100)
    split, _found = page_text_scores(terms, [halves, short_text])
    assert split[1] > split[0] and abs(split[0] - scores[0]) < 0.1
    # a build made before chunk counts is scored by its pages, beside those that have them
    pages_only = _lexicon([300, 300, 99400], 100)
    mixed, found = page_text_scores(terms, [pages_only, long_text, short_text])
    without_chunks = [_lexicon(list(corpus.pages), corpus.total) for corpus in (long_text, short_text)]
    alone, _found = page_text_scores(terms, [pages_only, *without_chunks])
    assert mixed[0] == alone[0] and found.all()
    assert mixed[2] > mixed[1]
    # a term no corpus holds says nothing; a corpus without a lexicon scores 0 and matches nothing
    scores, found = page_text_scores(np.array([1, 2, 99], np.uint64), [long_text, short_text, None])
    assert scores[1] > scores[0] and scores[2] == 0 and found.tolist() == [True, True, False]
