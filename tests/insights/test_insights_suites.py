"""Eval suites belong to a corpus and their names are the corpus's own: a key limited to one corpus that names
a suite first claims nothing in another corpus, cannot list, run, read the results of or write into another
corpus's suites, and two corpora may each have a suite of the same name (issue #47, finding 3)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from corpus.apikeys import create_api_key
from corpus.execution import build_activate
from corpus.models import BuildRun, Corpus, Feedback
from corpus.serving import forget_active
from evals.models import EvalCase, EvalRun, EvalSuite
from evals.services import eval_run
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


def _make_case(client, corpus: str, item: Feedback, suite: str, key: str):
    return call(client, "post", f"/corpora/{corpus}/feedback/{item.pk}/eval-case",
                {"suite": suite, "expected_files": ["guides/retries.md"]}, key=key)


def test_a_key_that_claims_another_corpus_suite_name_first_gets_nothing_of_that_corpus(
        client, secret, django_capture_on_commit_callbacks):
    """The issue's scenario: a key for `sample` names `secret-gaps` first; `secret`'s author still adds their
    case to their own `secret-gaps`, and the `sample` key can neither list, run nor read it."""
    _row, sample_key = create_api_key("sample-authors", ["admin"], corpora=["sample"])
    _row, secret_key = create_api_key("secret-authors", ["admin"], corpora=["secret"])
    squatted = _make_case(client, "sample", _feedback("sample", "how do retries work"), "secret-gaps", sample_key)
    assert squatted.status_code == 201, squatted.content

    made = _make_case(client, "secret", _feedback("secret", "the secret launch date"), "secret-gaps", secret_key)
    assert made.status_code == 201, made.content  # refused "taken" before: the name was global
    theirs = EvalSuite.objects.get(corpus=secret, name="secret-gaps")
    assert list(theirs.cases.values_list("query", flat=True)) == ["the secret launch date"]
    assert made.json()["suite_url"] == "/api/v1/evals/suites?corpus=secret"

    listed = call(client, "get", "/evals/suites", key=sample_key).json()
    assert [(s["name"], s["corpus"], s["case_count"]) for s in listed["items"]] == [("secret-gaps", "sample", 1)]
    assert_error(call(client, "get", "/evals/suites?corpus=secret", key=sample_key), 404)
    assert_error(call(client, "post", "/evals/runs", {"corpus": "secret", "suite": "secret-gaps"}, key=sample_key), 404)

    with django_capture_on_commit_callbacks(execute=True):
        started = call(client, "post", "/evals/runs", {"corpus": "sample", "suite": "secret-gaps"}, key=sample_key)
    assert started.status_code == 202, started.content
    results = call(client, "get", f"/evals/runs/{started.json()['id']}/results", key=sample_key).json()
    assert [r["query"] for r in results["items"]] == ["how do retries work"]

    # secret's own run of its suite: the sample key neither lists nor opens it
    their_run = eval_run(corpus=secret, suite=theirs)
    runs = call(client, "get", "/evals/runs?suite=secret-gaps", key=sample_key).json()
    assert [r["id"] for r in runs["items"]] == [started.json()["id"]]
    assert_error(call(client, "get", f"/evals/runs/{their_run.pk}/results", key=sample_key), 404, "run_not_found")
    seen = str(call(client, "get", "/evals/suites", key=sample_key).json()) + str(runs)
    assert "secret launch" not in seen and "secret'" not in seen


def test_a_key_of_one_corpus_cannot_write_into_another_corpus_suite(client, secret):
    theirs = EvalSuite.objects.create(name="secret-gaps", corpus=secret)
    _row, sample_key = create_api_key("sample-authors", ["admin"], corpora=["sample"])
    item = _feedback("sample", "how do retries work")
    assert _make_case(client, "sample", item, "secret-gaps", sample_key).status_code == 201  # into sample's own
    assert_error(_make_case(client, "secret", _feedback("secret", "x"), "secret-gaps", sample_key), 404)
    assert not theirs.cases.exists()
    assert EvalCase.objects.get().suite.corpus.name == "sample"


def test_two_corpora_have_suites_of_the_same_name_each_run_on_its_own_corpus(client, secret, sample_corpus):
    for corpus, query in ((sample_corpus, "how do retries work"), (secret, "the secret launch date")):
        eval_case_make(corpus=corpus, suite="gaps", name="q", query=query, expected_files=["guides/retries.md"],
                       category="gap", note={})
    assert EvalSuite.objects.filter(name="gaps").count() == 2
    for corpus, query in ((sample_corpus, "how do retries work"), (secret, "the secret launch date")):
        run = call(client, "post", "/evals/runs", {"corpus": corpus.name, "suite": "gaps"},
                   key=create_api_key(f"{corpus.name}-ci", ["build"])[1])
        assert run.status_code == 202, run.content
        assert EvalRun.objects.get(pk=run.json()["id"]).suite.cases.get().query == query
    unlimited = call(client, "get", "/evals/suites", key=create_api_key("all", ["read"])[1]).json()
    assert [(s["name"], s["corpus"]) for s in unlimited["items"]] == [("gaps", "sample"), ("gaps", "secret")]


def test_a_suite_of_another_corpus_is_refused_by_the_run_service(secret, sample_corpus):
    theirs = EvalSuite.objects.create(name="secret-gaps", corpus=secret)
    EvalCase.objects.create(suite=theirs, name="q", query="the secret launch date", expected_files=["guides/retries.md"])
    from evals.errors import EvalError

    with pytest.raises(EvalError, match="belongs to another corpus"):
        eval_run(corpus=sample_corpus, suite=theirs)


def test_the_run_eval_and_eval_suite_commands_find_a_suite_in_the_named_corpus_only(secret, sample_corpus, tmp_path):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    eval_case_make(corpus=secret, suite="gaps", name="q", query="the secret launch date",
                   expected_files=["guides/retries.md"], category="gap", note={})
    with pytest.raises(CommandError, match="eval suite 'gaps' not found in corpus 'sample'"):
        call_command("run_eval", "--corpus", "sample", "--suite", "gaps", "--no-progress")
    with pytest.raises(CommandError, match="not found in corpus 'sample'"):
        call_command("eval_suite", "export", "--suite", "gaps", "--corpus", "sample")
    out = StringIO()
    call_command("eval_suite", "export", "--suite", "gaps", "--corpus", "secret", stdout=out)
    assert "the secret launch date" in out.getvalue()


def test_a_corpus_adds_to_its_own_suite(secret):
    for n in range(2):
        eval_case_make(corpus=secret, suite="secret-gaps", name=f"q{n}", query=f"question {n}",
                       expected_files=["guides/retries.md"], category="gap", note={})
    assert EvalSuite.objects.get(name="secret-gaps").cases.count() == 2


@pytest.mark.django_db(transaction=True)
def test_upgrading_gives_every_suite_a_corpus_and_keeps_its_cases_and_runs(settings):
    """Suites from before (a global name, maybe no corpus, maybe a version's) each end in one corpus."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    settings.DOCSMCP_DEFAULT_CORPUS = ""
    before = [("evals", "0003_case_answerable_coverage")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    corpus_now = [node for node in executor.loader.graph.leaf_nodes() if node[0] == "corpus"]
    old = executor.loader.project_state(before + corpus_now).apps
    OldCorpus, OldSuite = old.get_model("corpus", "Corpus"), old.get_model("evals", "EvalSuite")
    OldCase, OldRun = old.get_model("evals", "EvalCase"), old.get_model("evals", "EvalRun")
    first = OldCorpus.objects.create(name="first", source_dir="/x")
    version = OldCorpus.objects.create(name="first@v2", source_dir="/x", version_of=first)
    other = OldCorpus.objects.create(name="other", source_dir="/y")
    measured = OldSuite.objects.create(name="measured")
    OldCase.objects.create(suite=measured, name="c", query="q")
    OldRun.objects.create(suite=measured, corpus=other, status="complete")
    OldSuite.objects.create(name="bare")
    OldSuite.objects.create(name="versioned", corpus=version)
    OldSuite.objects.create(name="kept", corpus=other)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    homes = dict(EvalSuite.objects.values_list("name", "corpus__name"))
    assert homes == {"measured": "other", "bare": "first", "versioned": "first", "kept": "other"}
    assert EvalSuite.objects.get(name="measured").cases.count() == 1
    assert EvalRun.objects.get().suite.name == "measured"
