"""An eval case made from a corpus's insights goes into a suite of that corpus only: a suite name another
corpus holds (or one written for no corpus, which every caller sees) is refused, so a key limited to one corpus
can neither read another corpus's agent questions through a suite it claimed first, nor write into another's."""

from __future__ import annotations

import pytest
from django.utils import timezone

from corpus.apikeys import create_api_key
from corpus.execution import build_activate
from corpus.models import BuildRun, Corpus, Feedback
from corpus.serving import forget_active
from evals.models import EvalCase, EvalSuite
from insights.errors import InsightsError
from insights.services import eval_case_make
from tests.api_helpers import assert_error, call


@pytest.fixture
def secret(sample_corpus):
    """A second corpus (the same pages as `sample`), whose questions `sample`'s callers must not see."""
    active = sample_corpus.active_build
    corpus = Corpus.objects.create(name="secret", source_dir=sample_corpus.source_dir,
                                   settings={"embedding_provider": "hash"})
    build = BuildRun.objects.create(corpus=corpus, build_id="secret-build", kind=BuildRun.KIND_FULL,
                                    status=BuildRun.COMPLETE, index_path=active.index_path,
                                    embedding_provider="hash", embedding=active.embedding, stats=active.stats)
    build_activate(build=build)
    forget_active()
    corpus.refresh_from_db()
    yield corpus
    forget_active()


def _feedback(corpus: str, query: str) -> Feedback:
    return Feedback.objects.create(at=timezone.now(), corpus=corpus, verdict="wrong", chunk_id="guides/retries.md#retries",
                                   filepath="guides/retries.md", query=query, comment="")


def test_a_suite_another_corpus_claimed_first_is_refused_and_its_caller_reads_nothing(client, secret):
    _row, sample_key = create_api_key("sample-authors", ["admin"], corpora=["sample"])
    claimed = _feedback("sample", "how do retries work")
    response = call(client, "post", f"/corpora/sample/feedback/{claimed.pk}/eval-case",
                    {"suite": "secret-gaps", "expected_files": ["guides/retries.md"]}, key=sample_key)
    assert response.status_code == 201, response.content
    with pytest.raises(InsightsError, match="taken by a suite that is not this corpus's"):
        eval_case_make(corpus=secret, suite="secret-gaps", name="question", query="the secret launch date",
                       expected_files=["guides/retries.md"], category="gap", note={})
    assert not EvalCase.objects.filter(query__contains="secret launch").exists()
    suites = call(client, "get", "/evals/suites", key=sample_key).json()
    assert "secret launch" not in str(suites)


def test_a_caller_of_one_corpus_cannot_write_into_another_corpus_suite(client, secret):
    EvalSuite.objects.create(name="secret-gaps", corpus=secret)
    _row, sample_key = create_api_key("sample-authors", ["admin"], corpora=["sample"])
    item = _feedback("sample", "how do retries work")
    error = assert_error(call(client, "post", f"/corpora/sample/feedback/{item.pk}/eval-case",
                              {"suite": "secret-gaps", "expected_files": ["guides/retries.md"]}, key=sample_key), 400)
    assert "choose another name (for example sample-secret-gaps)" in error["message"]
    assert "secret'" not in error["message"]  # whose suite it is stays unsaid
    assert not EvalCase.objects.exists()


def test_a_suite_written_for_no_corpus_takes_no_corpus_questions(secret):
    EvalSuite.objects.create(name="shared")
    with pytest.raises(InsightsError):
        eval_case_make(corpus=secret, suite="shared", name="question", query="the secret launch date",
                       expected_files=["guides/retries.md"], category="gap", note={})


def test_a_corpus_adds_to_its_own_suite(secret):
    for n in range(2):
        eval_case_make(corpus=secret, suite="secret-gaps", name=f"q{n}", query=f"question {n}",
                       expected_files=["guides/retries.md"], category="gap", note={})
    assert EvalSuite.objects.get(name="secret-gaps").cases.count() == 2
