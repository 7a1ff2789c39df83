"""The coverage verdict on real questions: the sample docs (a payments API) asked what they answer, what
they never mention, and Python coding questions that belong to other docs.

The questions are real ones: the sample suite's cases (corpus/sample_docs_eval.json), near-miss
questions a payments team is asked (features the sample docs never name, checked with grep: the
answerability set of bench/answerability.py) and CoNaLa's Stack Overflow intents (the Python docs'
dev questions). bench/answerability.py measures the same on Kubernetes and the Python docs.
"""

from __future__ import annotations

import json

import pytest

from retrieval.embeddings import get_provider
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.search.coverage import (
    COVERED,
    NOT_COVERED,
    NOT_COVERED_NOTICE,
    PARTIAL,
    Coverage,
    Evidence,
    Thresholds,
    best_of,
    coverage_of,
    elsewhere,
    verdict_of,
    with_word_share,
)
from retrieval.search.engine import SearchRequest, search
from retrieval.search.index import Index
from tests.conftest import ROOT, SAMPLE_DOCS

SECRET = b"test-cursor-secret"
SUITE = json.loads((ROOT / "corpus" / "sample_docs_eval.json").read_text(encoding="utf-8"))
ANSWERED = [(c["query"], c.get("filters") or {}) for c in SUITE if c["category"] in ("identifier", "filtered")]
PARAPHRASED = [c["query"] for c in SUITE if c["category"] == "paraphrase"]
NEAR_MISS = [
    "Can customers pay with Apple Pay?",
    "How do I accept Google Pay on the web?",
    "Is there a PHP SDK?",
    "install the Ruby gem",
    "Charge a customer every month for a recurring billing plan",
    "Log in to the dashboard with SAML single sign-on",
    "Take in-person payments with a card reader terminal",
    "Query payments with the GraphQL API",
    "Offer Klarna buy now pay later at checkout",
    "Install the Shopify plugin",
    "Add payments to an iOS app with the Swift SDK",
    "Use the .NET client library from C#",
]
CODING = [  # CoNaLa intents, answered by the Python docs
    "make all keys lowercase in dictionary `d`",
    "remove duplicate dict in list `l`",
    "sort a list of tuples by the second element",
    "read a file line by line into a list",
    "convert a string to a datetime object",
    "reverse a string `s`",
    "get the current working directory",
    "check if a key exists in a dictionary",
]


def _verdicts(index: Index, questions, embedder=None) -> list[str]:
    out = []
    for question in questions:
        query, filters = question if isinstance(question, tuple) else (question, {})
        result = search(index, SearchRequest(query, filters), embedder=embedder, cursor_secret=SECRET)
        out.append(result.coverage.verdict)
    return out


def _share(verdicts: list[str], *wanted: str) -> float:
    return sum(v in wanted for v in verdicts) / len(verdicts)


@pytest.fixture(scope="module")
def fts_index(tmp_path_factory) -> Index:
    out = tmp_path_factory.mktemp("coverage-fts") / "build"
    build_index(BuildRequest(SAMPLE_DOCS, out, "coverage-fts", "sample", provider=None, workers=1))
    return Index(out)


@pytest.fixture(scope="module")
def local_index(tmp_path_factory) -> Index:
    out = tmp_path_factory.mktemp("coverage-local") / "build"
    build_index(BuildRequest(SAMPLE_DOCS, out, "coverage-local", "sample", provider=get_provider("local"), workers=1))
    return Index(out)


def test_questions_the_sample_docs_answer_are_rarely_flagged(fts_index):
    verdicts = _verdicts(fts_index, ANSWERED)
    assert _share(verdicts, NOT_COVERED) <= 0.05
    assert _share(verdicts, COVERED) >= 0.85


def test_features_the_sample_docs_never_mention_are_flagged(fts_index):
    verdicts = _verdicts(fts_index, NEAR_MISS)
    assert _share(verdicts, NOT_COVERED, PARTIAL) >= 0.7
    assert _share(verdicts, NOT_COVERED) >= 0.8
    apple_pay, php = _verdicts(fts_index, ["Can customers pay with Apple Pay?", "Is there a PHP SDK?"])
    assert apple_pay == php == NOT_COVERED  # "pay" and "customers" are the docs' words; "apple" is not


def test_a_not_covered_search_still_returns_its_closest_hits_with_the_notice(fts_index):
    result = search(fts_index, SearchRequest("Is there a PHP SDK?"), cursor_secret=SECRET)
    assert result.hits
    assert result.coverage.verdict == NOT_COVERED
    assert result.coverage.as_dict()["notice"] == NOT_COVERED_NOTICE
    assert 0 <= result.coverage.score < 0.5


def test_every_page_of_one_search_has_the_same_verdict(fts_index):
    first = search(fts_index, SearchRequest("refund a payment", limit=3), cursor_secret=SECRET)
    second = search(fts_index, SearchRequest("refund a payment", cursor=first.next_cursor), cursor_secret=SECRET)
    assert second.coverage == first.coverage


@pytest.mark.slow
def test_the_local_model_tells_coding_questions_and_paraphrases_apart(fts_index, local_index):
    """Full text alone cannot: a Python SDK's pages hold the words of "reverse a string" as a Python page
    does, and a paraphrase shares few words with its answer (docs/search.md gives the measured rates)."""
    embedder = get_provider("local")
    lexical = _verdicts(fts_index, PARAPHRASED)
    semantic = _verdicts(local_index, PARAPHRASED, embedder)
    assert _share(semantic, NOT_COVERED) <= 0.08  # 2 of these 26; 4.1% of bench/answerability.py's 340
    assert _share(semantic, COVERED) > _share(lexical, COVERED)
    near_miss = _verdicts(local_index, NEAR_MISS, embedder)
    assert _share(near_miss, NOT_COVERED, PARTIAL) >= 0.7
    assert _share(near_miss, NOT_COVERED) >= 0.5
    coding = _verdicts(local_index, CODING, embedder)
    assert _share(coding, NOT_COVERED) >= 0.75 > _share(_verdicts(fts_index, CODING), NOT_COVERED)


def test_a_corpus_may_cut_the_score_its_own_way():
    evidence = Evidence(lexical=0.4, cosine=None, terms=3)
    default = coverage_of(evidence)
    strict = coverage_of(evidence, Thresholds(covered=0.99, partial=0.98))
    assert strict.score == default.score and strict.verdict == NOT_COVERED
    assert verdict_of(0.5, Thresholds(covered=0.5, partial=0.2)) == COVERED
    with pytest.raises(ValueError, match="partial <= covered"):
        Thresholds(covered=0.2, partial=0.5)


def test_another_corpus_closer_by_meaning_and_by_words_takes_the_question():
    """The rule a server of several corpora applies (corpus/serving/elsewhere.py): both routers must agree
    the question belongs to the other corpus before this one's hits are set aside, and its word share is
    ranked only when a neighbour is closer."""
    covered = Coverage(COVERED, 0.81)
    asked: list[bool] = []

    def share(value: float):
        return lambda: asked.append(True) or value

    moved = elsewhere(covered, 0.52, {"pydocs": 0.71, "sample": 0.40}, share(0.02))
    assert (moved.verdict, moved.score, moved.elsewhere) == (NOT_COVERED, 0.81, "pydocs")
    assert moved.as_dict()["elsewhere"] == "pydocs" and "`pydocs` on this server" in moved.as_dict()["notice"]
    assert elsewhere(covered, 0.52, {"pydocs": 0.71}, share(0.6)) == covered  # the words prefer this corpus
    asked.clear()
    assert elsewhere(covered, 0.75, {"pydocs": 0.71}, share(0.0)) == covered and not asked
    assert elsewhere(covered, 0.52, {}, share(0.0)) == covered


def test_a_search_of_several_corpora_is_covered_when_one_corpus_covers_it():
    sent_away = Coverage(NOT_COVERED, 0.81, "pydocs")  # the asked corpus's hits scored well, but belong elsewhere
    answered = Coverage(COVERED, 0.64)
    assert best_of([sent_away, answered]) == answered
    assert best_of([Coverage(PARTIAL, 0.3), Coverage(PARTIAL, 0.4)]).score == 0.4
    assert best_of([]).verdict == NOT_COVERED


def test_a_full_text_corpus_beside_others_weighs_its_share_of_the_question_words(fts_index):
    """On a server of several full-text corpora (corpus/serving/elsewhere.py) the score takes one more
    input: how much of the question's word evidence this corpus holds among them. Python coding questions
    use the sample's words ("list", "file", "key"); when the corpus beside it holds far more of them, most
    are no longer covered here, and the sample's own questions, whose words it holds, stay covered."""
    alone = [search(fts_index, SearchRequest(q), cursor_secret=SECRET).coverage for q in CODING]
    beside_python_docs = [with_word_share(c, share=0.001) for c in alone]
    assert _share([c.verdict for c in beside_python_docs], NOT_COVERED) > _share([c.verdict for c in alone],
                                                                                  NOT_COVERED)
    assert _share([c.verdict for c in beside_python_docs], NOT_COVERED) >= 0.75
    own = [search(fts_index, SearchRequest(q, f), cursor_secret=SECRET).coverage for q, f in ANSWERED]
    assert _share([with_word_share(c, share=0.95).verdict for c in own], COVERED) >= 0.85
    semantic = Coverage(COVERED, 0.9, evidence=Evidence(lexical=0.2, cosine=0.7, terms=3))
    assert with_word_share(semantic, share=0.0) == semantic  # judged by `elsewhere` instead
