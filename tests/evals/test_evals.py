"""The evals harness: case files, the runner, runs in-process and over HTTP, baselines, failures."""

from __future__ import annotations

import json
import socket
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpus.models import BuildRun, Corpus
from evals import runner
from evals.cases import CaseFormatError, dump_cases, parse_cases, read_cases
from evals.errors import EvalError, RunStateConflict
from evals.execution import eval_execute
from evals.models import EvalCase, EvalResult, EvalRun, EvalSuite
from evals.selectors import compare_runs, latest_scores_for_builds, suite_export
from evals.services import eval_request, eval_run, eval_start, suite_import
from evals.targets import Target
from tests.evals.sample_cases import two_of_each_category

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SUITE = ROOT / "corpus" / "sample_docs_eval.json"
BENCH = ROOT.parent / "shared" / "bench"

BENCH_JSONL = "\n".join(json.dumps(c) for c in [
    {"id": "k1", "query": "what is a pod", "expected_files": ["concepts/pod.md"], "category": "glossary",
     "refs": ["x"]},
    {"id": "p1", "query": "sorted()", "expected_chunk_ids": ["library/functions.md#sorted"],
     "expected_files": ["library/functions.md"], "category": "conala", "filters": {"ps_version": "7.5"}},
    {"id": "z1", "query": "nothing like this", "category": "zero-result"},
]) + "\n"


# --- fakes -------------------------------------------------------------------------------------


def hits_result(ids: list[str], next_cursor: str | None = None, structured: bool = True,
                verdict: str | None = None) -> dict:
    payload = {"hits": [{"chunk_id": i, "filepath": i.split("#")[0], "score": 1.0} for i in ids],
               "next_cursor": next_cursor, "hint": None}
    if verdict:
        payload = {"coverage": {"verdict": verdict, "score": {"covered": 0.9, "partial": 0.4}.get(verdict, 0.1)},
                   **payload}
    result = {"content": [{"type": "text", "text": json.dumps(payload)}], "isError": False}
    if structured:
        result["structuredContent"] = payload
    return result


class FakeTarget(Target):
    """Answers search_docs from a {query: [pages of chunk IDs]} table; records every call."""

    label = "fake"

    def __init__(self, pages: dict[str, list[list[str]]], fail_on: str | None = None,
                 interrupt_on: str | None = None, verdicts: dict[str, str] | None = None):
        self.pages, self.fail_on, self.interrupt_on = pages, fail_on, interrupt_on
        self.verdicts = verdicts or {}  # {query: coverage verdict}; none: the server says nothing of coverage
        self.calls: list[tuple[str, dict]] = []

    def call(self, name, arguments):
        self.calls.append((name, dict(arguments)))
        if name == "get_doc":
            return {"content": [{"type": "text", "text": "--- Chunk: x ---"}], "isError": False}
        query = arguments["query"]
        if query == self.interrupt_on:
            raise KeyboardInterrupt
        if query == self.fail_on:
            return {"content": [{"type": "text", "text": "Invalid filter value"}], "isError": True}
        pages = self.pages.get(query, [[]])
        n = int(arguments.get("cursor", "0"))
        return hits_result(pages[n], str(n + 1) if n + 1 < len(pages) else None, structured=n % 2 == 0,
                           verdict=self.verdicts.get(query))


def case(name, query, chunks=(), files=(), category="c", filters=None, **rules):
    return EvalCase(name=name, query=query, category=category, filters=filters or {},
                    expected_chunk_ids=list(chunks), expected_files=list(files),
                    answerable=bool(chunks or files), **rules)


@pytest.fixture
def fake_corpus(db):
    """A corpus whose active build row exists (no index on disk): enough for runs with a fake target."""
    corpus = Corpus.objects.create(name="fake", source_dir="/nonexistent")
    build = BuildRun.objects.create(corpus=corpus, build_id="fake-build-1", status=BuildRun.COMPLETE,
                                    timings={"total": 1.5})
    corpus.active_build = build
    corpus.save()
    return corpus


@pytest.fixture
def fake_suite(fake_corpus):
    text = "\n".join(json.dumps(c) for c in [
        {"name": "first", "category": "identifier", "query": "q1", "expectedChunkId": "a.md#x"},
        {"name": "second", "category": "identifier", "query": "q2", "expectedChunkId": "b.md#y"},
        {"name": "third", "category": "paraphrase", "query": "q3", "expectedChunkIds": ["c.md#z"]},
        {"name": "zero", "category": "zero-result", "query": "q4", "expectedChunkIds": []},
    ])
    return suite_import(name="fake-suite", text=text, corpus=fake_corpus)


# --- case files --------------------------------------------------------------------------------


def test_import_reads_the_bundled_suite_in_seed_spelling(fake_corpus):
    suite = suite_import(name="sample", path=SAMPLE_SUITE, corpus=fake_corpus)
    raw = json.loads(SAMPLE_SUITE.read_text())
    assert suite.cases.count() == len(raw)
    first = suite.cases.get(name="ratelimiterror-python")
    assert first.expected_chunk_ids == ["sdks/python/errors.md#error-handling/ratelimiterror"]
    assert first.filters == {"language": "python"} and first.category == "identifier"
    both = suite.cases.get(name="list-customers-python")
    assert len(both.expected_chunk_ids) == 2
    zero = suite.cases.filter(category="zero-result")
    assert zero.exists() and all(c.is_zero_result for c in zero)


def test_import_reads_bench_spelling_and_keeps_unknown_keys(fake_corpus):
    suite = suite_import(name="bench", text=BENCH_JSONL, match_mode="leaf", corpus=fake_corpus)
    k1, p1, z1 = (suite.cases.get(name=n) for n in ("k1", "p1", "z1"))
    assert k1.expected_files == ["concepts/pod.md"] and k1.expected_chunk_ids == [] and k1.extra == {"refs": ["x"]}
    assert p1.expected_chunk_ids == ["library/functions.md#sorted"] and p1.filters == {"ps_version": "7.5"}
    assert z1.is_zero_result
    assert suite.match_mode == "leaf"


@pytest.mark.skipif(not (BENCH / "k8s" / "dev.jsonl").exists(), reason="shared bench data not present")
def test_reads_every_shared_bench_query_file():
    for path in [BENCH / "k8s" / "dev.jsonl", BENCH / "pydocs" / "dev.jsonl", BENCH / "scale" / "queries.jsonl"]:
        specs = read_cases(path)
        assert specs and all(s.query and (s.expected_chunk_ids or s.expected_files) for s in specs), path


def test_export_round_trips_in_both_spellings(fake_corpus):
    suite = suite_import(name="sample", path=SAMPLE_SUITE, corpus=fake_corpus)
    for fmt, style in (("jsonl", "bench"), ("json", "docs-mcp"), ("jsonl", "docs-mcp"), ("json", "bench")):
        again = parse_cases(suite_export(suite=suite, fmt=fmt, style=style))
        original = parse_cases(SAMPLE_SUITE.read_text())
        assert [(c.name, c.query, c.category, c.filters, c.expected_chunk_ids) for c in again] == \
               [(c.name, c.query, c.category, c.filters, c.expected_chunk_ids) for c in original]
    seed = json.loads(suite_export(suite=suite, fmt="json"))
    assert seed[0]["expectedChunkId"] == "sdks/python/errors.md#error-handling/ratelimiterror"
    bench = json.loads(suite_export(suite=suite).splitlines()[0])
    assert bench["id"] == "ratelimiterror-python" and bench["expected_chunk_ids"]


def test_refreshing_a_suite_updates_adds_and_prunes_by_name(fake_suite):
    run = EvalRun.objects.create(suite=fake_suite, corpus=fake_suite.corpus, status=EvalRun.COMPLETE)
    old = fake_suite.cases.get(name="third")
    EvalResult.objects.create(run=run, case=old, case_name="third", query="q3")
    suite_import(name="fake-suite", text=json.dumps([
        {"name": "first", "query": "q1 changed", "expectedChunkId": "a.md#x"},
        {"name": "fourth", "query": "q5", "expectedChunkId": "d.md#w"},
    ]), corpus=fake_suite.corpus)
    names = list(fake_suite.cases.order_by("position").values_list("name", "query"))
    assert names == [("first", "q1 changed"), ("fourth", "q5")]
    kept = EvalResult.objects.get(run=run)
    assert kept.case is None and kept.case_name == "third"  # history survives the refresh


@pytest.mark.parametrize("text, message", [
    ('[{"name": "a"}]', "case 1: missing 'query'"),
    ('{"id": "a", "query": "x"}\n{"id": "a", "query": "y"}\n', "used twice"),
    ('{"id": "a", "query": "x"}\nnot json\n', "<cases>:2: not JSON"),
    ('[{"query": "x", "filters": ["python"]}]', "filters must be an object"),
    ('[{"query": "x", "expectedChunkIds": [1]}]', "list of strings"),
    ('[{"query": "x", "answerable": true}]', "an answerable case needs the chunks or files"),
    ('[{"query": "x", "answerable": false, "expectedFiles": ["a.md"]}]', "expects no chunks or files"),
    ('[{"query": "x", "answerable": "no"}]', "answerable must be true or false"),
    ('[{"query": "x", "expectedFiles": ["a.md"], "maxRank": 0}]', "maxRank must be a whole number"),
    ('[{"query": "x", "maxRank": 3}]', "for answerable cases"),
])
def test_bad_case_files_say_where(text, message):
    with pytest.raises(CaseFormatError, match=message.replace("(", r"\(")):
        parse_cases(text)


def test_answerable_false_max_rank_and_require_covered_round_trip_in_both_spellings():
    specs = parse_cases(json.dumps([
        {"name": "apple-pay", "query": "Can customers pay with Apple Pay?", "answerable": False},
        {"name": "old-zero", "query": "kafka", "expectedChunkIds": []},
        {"name": "gap-7", "query": "429 rate limit", "expectedFiles": ["guides/throttling.md"], "maxRank": 3,
         "requireCovered": True},
    ]))
    assert [(s.answerable, s.max_rank, s.require_covered) for s in specs] == [
        (False, None, False), (False, None, False), (True, 3, True)]
    bench = [json.loads(line) for line in dump_cases(specs).splitlines()]
    assert bench[0]["answerable"] is False and bench[2]["max_rank"] == 3 and bench[2]["require_covered"] is True
    assert "answerable" not in bench[2]
    again = parse_cases(dump_cases(specs, "json"))
    assert [(s.answerable, s.max_rank, s.require_covered) for s in again] == [
        (s.answerable, s.max_rank, s.require_covered) for s in specs]


def test_json_object_with_cases_key_and_default_names():
    specs = parse_cases(json.dumps({"cases": [{"query": "x"}, {"query": "y"}]}))
    assert [s.name for s in specs] == ["q1", "q2"]
    assert dump_cases(specs).count("\n") == 2


# --- the runner --------------------------------------------------------------------------------


def test_runner_follows_cursors_until_the_expected_chunk_shows():
    target = FakeTarget({"q": [[f"f{i}.md#x" for i in range(10)], ["a.md#n", "a.md#want"], ["z.md#late"]]})
    out = runner.run_case(target, case("c", "q", chunks=["a.md#want"]), max_rounds=3)
    assert out.calls == 2 and out.rounds == 2 and out.chunk_rank == 12 and out.file_rank == 11
    assert out.passed and out.metrics["chunk"]["mrr@10"] == 0.0  # not in the first 10
    assert out.metrics["file"] is not None  # files derived from the expected chunk
    search_calls = [a for n, a in target.calls if n == "search_docs"]
    assert search_calls[1]["cursor"] == "1" and search_calls[1]["query"] == "q" and search_calls[1]["limit"] == 10
    assert target.calls[-1] == ("get_doc", {"chunk_id": "f0.md#x"})


def test_runner_stops_at_max_rounds_and_reports_not_found():
    target = FakeTarget({"q": [["x.md#1"], ["x.md#2"], ["x.md#3"], ["a.md#want"]]})
    out = runner.run_case(target, case("c", "q", chunks=["a.md#want"]), max_rounds=2)
    assert out.calls == 2 and out.chunk_rank is None and out.rounds is None and not out.passed
    assert out.top_hits == ["x.md#1", "x.md#2"]


def test_an_unanswerable_case_without_a_verdict_passes_only_with_no_hits():
    empty = runner.run_case(FakeTarget({"q": [[]]}), case("z", "q"))
    assert empty.zero_result and empty.passed and empty.metrics["unanswerable"] == 1.0
    noisy = runner.run_case(FakeTarget({"q": [["a.md#x"]], }), case("z", "q"))
    assert not noisy.passed and noisy.metrics["unanswerable"] == 0.0 and noisy.hit_count == 1


@pytest.mark.parametrize("verdict, passed", [("not_covered", True), ("partial", True), ("covered", False)])
def test_an_unanswerable_case_passes_when_the_search_says_the_docs_do_not_cover_it(verdict, passed):
    out = runner.run_case(FakeTarget({"q": [["a.md#x", "b.md#y"]]}, verdicts={"q": verdict}), case("z", "q"))
    assert out.zero_result and out.coverage == verdict and out.passed is passed and out.hit_count == 2


def test_an_answerable_case_fails_when_its_question_is_flagged_not_covered():
    target = FakeTarget({"q": [["a.md#x"]]}, verdicts={"q": "not_covered"})
    out = runner.run_case(target, case("c", "q", chunks=["a.md#x"]))
    assert out.chunk_rank == 1 and not out.passed and out.score == 0.0
    assert out.why == "the search said the docs do not cover it (not_covered)"
    partial = runner.run_case(FakeTarget({"q": [["a.md#x"]]}, verdicts={"q": "partial"}), case("c", "q", chunks=["a.md#x"]))
    assert partial.passed and partial.score == 1.0 and partial.why == ""


@pytest.mark.parametrize("pages, verdict, passed, why", [
    ([["x.md#1", "y.md#2", "a.md#want"]], "covered", True, ""),
    ([["x.md#1", "y.md#2", "z.md#3", "a.md#want"]], "covered", False, "found at rank 4, and this case needs it "
                                                                      "within the first 3"),
    ([["a.md#want"]], "partial", False, "the search said partial, and this case needs covered"),
    ([["a.md#want"]], None, False, "the search said nothing about coverage, and this case needs covered"),
    ([["x.md#1"]], "covered", False, ""),
])
def test_a_gap_case_needs_its_page_in_the_first_three_hits_and_the_verdict_covered(pages, verdict, passed, why):
    target = FakeTarget({"q": pages}, verdicts={"q": verdict} if verdict else {})
    out = runner.run_case(target, case("gap-1", "q", files=["a.md"], max_rank=3, require_covered=True))
    assert (out.passed, out.why) == (passed, why)


def test_coverage_precision_and_recall_are_counted_over_verdicts():
    cases = [(False, "not_covered"), (False, "not_covered"), (False, "partial"), (False, "covered"),
             (True, "covered"), (True, "covered"), (True, "not_covered"), (True, "partial"), (True, "")]
    from evals.metrics import coverage_summary

    summary = coverage_summary(cases)
    assert summary["n"] == 8  # the case without a verdict is left out
    assert summary["precision"] == round(2 / 3, 4) and summary["recall"] == 0.5
    assert summary["precision_partial"] == 0.6 and summary["recall_partial"] == 0.75
    assert summary["answerable_flagged"] == 0.25
    assert summary["unanswerable"] == {"covered": 1, "partial": 1, "not_covered": 2}
    assert coverage_summary([(True, ""), (False, "")]) is None


def test_tool_error_scores_zero_and_is_recorded():
    out = runner.run_case(FakeTarget({}, fail_on="q"), case("c", "q", chunks=["a.md#x"]))
    assert not out.passed and out.error.startswith("search_docs: Invalid filter value")
    assert out.metrics["chunk"]["mrr@10"] == 0.0


def test_results_are_read_from_structured_content_text_blocks_or_sse():
    from evals.targets import ToolFailed, parse_search_result, parse_sse

    text_only = hits_result(["a.md#x"], "c1", structured=False)
    assert parse_search_result(text_only).hits[0]["chunk_id"] == "a.md#x"
    assert parse_search_result(text_only).next_cursor == "c1"
    assert parse_search_result({"content": [{"type": "text", "text": "[{\"id\": \"b.md\"}]"}]}).hits == [{"id": "b.md"}]
    with pytest.raises(ToolFailed, match="no hits"):
        parse_search_result({"content": [{"type": "text", "text": "--- Chunk: x ---"}]})
    with pytest.raises(ToolFailed, match="Chunk ID 'x' not found"):
        parse_search_result({"content": [{"type": "text", "text": "Chunk ID 'x' not found."}], "isError": True})
    events = parse_sse(': ping\n\nevent: message\ndata: {"id": 1,\ndata:  "result": {}}\n\ndata: not json\n\n')
    assert events == [{"id": 1, "result": {}}]


def test_filters_go_with_every_call_and_the_case_wins():
    target = FakeTarget({"q": [["a.md#x"]]})
    runner.run_case(target, case("c", "q", chunks=["a.md#x"], filters={"language": "go"}),
                    extra_filters={"language": "python", "scope": "sdk"})
    assert target.calls[0][1] == {"query": "q", "limit": 10, "language": "go", "scope": "sdk"}


def test_leaf_matching_in_the_runner():
    target = FakeTarget({"q": [["a.md#_preamble/x/y"]]})
    exact = runner.run_case(target, case("c", "q", chunks=["a.md#x/y"]), match="exact")
    leaf = runner.run_case(target, case("c", "q", chunks=["a.md#x/y"]), match="leaf")
    assert exact.chunk_rank is None and leaf.chunk_rank == 1


def test_summary_groups_by_category():
    outs = [runner.run_case(FakeTarget({"q1": [["a.md#x"]]}), case("a", "q1", chunks=["a.md#x"], category="id")),
            runner.run_case(FakeTarget({"q2": [["b.md#y", "a.md#x"]]}), case("b", "q2", chunks=["a.md#x"],
                                                                            category="para")),
            runner.run_case(FakeTarget({}), case("z", "q3", category="zero-result"))]
    summary = runner.summarize(outs)
    assert summary["overall"]["chunk"]["mrr@10"] == 0.75 and summary["overall"]["cases"] == 3
    assert summary["overall"]["unanswerable"] == {"n": 1, "accuracy": 1.0, "not_covered": 0, "partial": 0}
    assert summary["overall"]["coverage"] is None  # the fake target gives no verdict
    assert summary["by_category"]["para"]["chunk"]["hit@1"] == 0.0
    assert summary["by_category"]["zero-result"]["chunk"] is None
    assert runner.latency(outs)["search"]["n"] == 3


# --- runs --------------------------------------------------------------------------------------


def test_run_is_tied_to_the_build_and_stores_every_case(fake_suite):
    target = FakeTarget({"q1": [["a.md#x"]], "q2": [["n.md#1", "b.md#y"]], "q3": [["n.md#1"]], "q4": [[]]})
    run = eval_request(corpus=fake_suite.corpus, suite=fake_suite)
    assert run.status == EvalRun.QUEUED and run.build.build_id == "fake-build-1" and run.build_seconds == 1.5
    seen = []
    run = eval_execute(run=run, target=target, progress=lambda d, t: seen.append((d, t)))
    assert run.status == EvalRun.COMPLETE and run.progress_done == 4
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)
    results = {r.case_name: r for r in run.results.all()}
    assert results["first"].chunk_rank == 1 and results["second"].chunk_rank == 2
    assert results["third"].chunk_rank is None and not results["third"].passed
    assert results["zero"].passed and results["zero"].zero_result
    assert run.metrics["overall"]["chunk"]["mrr@10"] == 0.5
    assert run.metrics["by_category"]["identifier"]["chunk"]["mrr@10"] == 0.75
    assert set(run.latency) == {"search", "search_first", "get_doc"}


def test_baseline_delta_lists_better_and_worse_cases(fake_suite):
    corpus = fake_suite.corpus
    base = eval_execute(run=eval_request(corpus=corpus, suite=fake_suite),
                        target=FakeTarget({"q1": [["a.md#x"]], "q2": [["n.md#1", "b.md#y"]], "q3": [[]]}))
    run = eval_execute(run=eval_request(corpus=corpus, suite=fake_suite, baseline=base),
                       target=FakeTarget({"q1": [["n.md#1", "a.md#x"]], "q2": [["b.md#y"]], "q3": [[]]}))
    delta = run.delta
    assert delta["baseline"] == base.pk
    assert delta["cases"]["worse"] == ["first"] and delta["cases"]["better"] == ["second"]
    assert delta["cases"]["same"] == 2
    assert delta["metrics"]["overall"]["chunk"]["mrr@10"] == 0.0  # 1 + 1/2 before, 1/2 + 1 after
    assert delta["metrics"]["overall"]["chunk"]["hit@1"] == 0.0
    assert delta["metrics"]["by_category"]["identifier"]["chunk"]["hit@1"] == 0.0
    assert "p50" in delta["latency"]["search"]
    rows = compare_runs(run, base)
    assert rows["counts"]["worse"] == 1 and rows["rows"][0]["name"] == "first"
    assert rows["rows"][0]["rank"] == 2 and rows["rows"][0]["other_rank"] == 1


def test_a_build_switch_during_the_run_is_reported(fake_suite):
    corpus = fake_suite.corpus
    newer = BuildRun.objects.create(corpus=corpus, build_id="fake-build-2", status=BuildRun.COMPLETE)

    class Switching(FakeTarget):
        def call(self, name, arguments):
            if arguments.get("query") == "q3":
                Corpus.objects.filter(pk=corpus.pk).update(active_build=newer)
            return super().call(name, arguments)

    run = eval_execute(run=eval_request(corpus=corpus, suite=fake_suite), target=Switching({}))
    assert run.status == EvalRun.COMPLETE and run.build.build_id == "fake-build-1"
    assert "active build changed during the run (was fake-build-1)" in run.error


def test_baseline_must_be_complete(fake_suite):
    failed = EvalRun.objects.create(suite=fake_suite, corpus=fake_suite.corpus, status=EvalRun.FAILED)
    with pytest.raises(RunStateConflict, match="only a complete run"):
        eval_request(corpus=fake_suite.corpus, suite=fake_suite, baseline=failed)


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "carrier-pigeon"}, "unknown mode"),
    ({"mode": "http"}, "needs the MCP server's URL"),
    ({"max_rounds": 0}, "max_rounds"),
    ({"match": "fuzzy"}, "unknown match mode"),
])
def test_bad_requests_are_refused(fake_suite, kwargs, message):
    with pytest.raises(EvalError, match=message):
        eval_request(corpus=fake_suite.corpus, suite=fake_suite, **kwargs)


def test_in_process_run_needs_an_active_build(db):
    corpus = Corpus.objects.create(name="unbuilt", source_dir="/x")
    suite = suite_import(name="s", text='[{"query": "x", "expectedChunkId": "a.md#x"}]', corpus=corpus)
    with pytest.raises(EvalError, match="no active build"):
        eval_request(corpus=corpus, suite=suite)


def test_interrupted_run_is_marked_failed_and_saves_no_results(fake_suite):
    run = eval_request(corpus=fake_suite.corpus, suite=fake_suite)
    with pytest.raises(KeyboardInterrupt):
        eval_execute(run=run, target=FakeTarget({"q1": [["a.md#x"]]}, interrupt_on="q3"))
    run.refresh_from_db()
    assert run.status == EvalRun.FAILED and "KeyboardInterrupt" in run.error and run.finished_at
    assert run.results.count() == 0 and run.metrics == {}


def test_crash_while_saving_rolls_back_every_result(fake_suite, monkeypatch):
    def boom(outcomes):
        raise RuntimeError("disk full")

    monkeypatch.setattr(runner, "summarize", boom)
    run = eval_request(corpus=fake_suite.corpus, suite=fake_suite)
    with pytest.raises(RuntimeError):
        eval_execute(run=run, target=FakeTarget({}))
    run.refresh_from_db()
    assert run.status == EvalRun.FAILED and run.error == "RuntimeError: disk full"
    assert EvalResult.objects.filter(run=run).count() == 0


def test_stale_runs_are_marked_failed_before_a_new_one(fake_suite):
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    dead = EvalRun.objects.create(suite=fake_suite, corpus=fake_suite.corpus, status=EvalRun.RUNNING,
                                  heartbeat_at=now - timedelta(hours=1))
    alive = EvalRun.objects.create(suite=fake_suite, corpus=fake_suite.corpus, status=EvalRun.RUNNING,
                                   heartbeat_at=now)
    eval_request(corpus=fake_suite.corpus, suite=fake_suite)
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert dead.status == EvalRun.FAILED and "worker stopped" in dead.error
    assert alive.status == EvalRun.RUNNING


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def listener():
    """A listening socket on 127.0.0.1; `accepted()` says whether anything connected to it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)

        def accepted() -> bool:
            try:
                sock.accept()[0].close()
            except BlockingIOError:
                return False
            return True

        yield sock.getsockname()[1], accepted


@pytest.mark.parametrize("template", [
    "http://127.0.0.1:{port}/mcp/",            # loopback, but not this server's port
    "http://127.0.0.1:{port}/anything",
    "http://localhost:{port}/mcp/",
    "http://allowed.example@127.0.0.1:{port}/mcp/",  # userinfo trick
])
def test_http_run_to_a_url_that_is_not_allowed_is_refused_before_any_connection(fake_suite, settings, listener,
                                                                                  template):
    port, accepted = listener
    settings.MCP_SERVER_PORT = port + 1 if port < 65535 else port - 1
    settings.DOCSMCP_EVAL_ALLOWED_URLS = ["http://allowed.example/mcp/", f"http://127.0.0.1:{port}/other/"]
    url = template.format(port=port)
    with pytest.raises(EvalError, match="not allowed|not an http") as refused:
        eval_request(corpus=fake_suite.corpus, suite=fake_suite, mode="http", url=url)
    assert "DOCSMCP_EVAL_ALLOWED_URLS" in str(refused.value) or "user:password" in str(refused.value)
    assert "Connect" not in str(refused.value)
    assert not accepted() and not EvalRun.objects.exists()


def test_http_run_whose_url_was_disallowed_after_the_request_fails_without_connecting(fake_suite, settings,
                                                                                      listener):
    port, accepted = listener
    url = f"http://127.0.0.1:{port}/mcp/"
    settings.DOCSMCP_EVAL_ALLOWED_URLS = [url]
    run = eval_request(corpus=fake_suite.corpus, suite=fake_suite, mode="http", url=url)
    settings.DOCSMCP_EVAL_ALLOWED_URLS = []
    eval_execute(run=run)
    run.refresh_from_db()
    assert run.status == EvalRun.FAILED and "not allowed" in run.error and "Connect" not in run.error
    assert not accepted()


def test_eval_url_rules(settings):
    from evals.allowed_urls import check_eval_url

    settings.MCP_SERVER_HOST, settings.MCP_SERVER_PORT = "0.0.0.0", 8001
    settings.DOCSMCP_EVAL_ALLOWED_URLS = ["https://docs.example.com/mcp"]
    for ok in ("http://127.0.0.1:8001/mcp/", "http://localhost:8001/mcp/techdoc/", "https://docs.example.com/mcp/",
               "https://docs.example.com:443/mcp/documents/"):
        check_eval_url(ok)
    for bad in ("http://127.0.0.1:8002/mcp/", "http://127.0.0.1:8001/admin/", "http://10.0.0.5:8001/mcp/",
                "https://docs.example.com.evil.net/mcp/", "https://docs.example.com/mcpx", "file:///etc/passwd",
                "http://docs.example.com/mcp/", "https://docs.example.com:8443/mcp/"):
        with pytest.raises(EvalError):
            check_eval_url(bad)


@pytest.mark.parametrize("path", ["/mcp/../api/v1/corpora", "/mcp/%2e%2e/api/v1/corpora", "/mcp/%2E%2e/admin/",
                                  "/mcp/c/x/../../../api/v1/corpora", "/mcp/%252e%252e/api/v1/corpora",
                                  "/mcp\\..\\api/v1/corpora"])
def test_dot_segments_cannot_lead_an_http_run_out_of_mcp(settings, path):
    from evals.allowed_urls import check_eval_url

    settings.MCP_SERVER_HOST, settings.MCP_SERVER_PORT = "127.0.0.1", 8001
    settings.DOCSMCP_EVAL_ALLOWED_URLS = ["https://docs.example.com/mcp/"]
    with pytest.raises(EvalError, match="not allowed"):
        check_eval_url(f"http://127.0.0.1:8001{path}")
    with pytest.raises(EvalError, match="not allowed"):
        check_eval_url(f"https://docs.example.com{path}")
    check_eval_url("http://127.0.0.1:8001/mcp/c/x/../y/")  # resolved, still this server's /mcp/c/y/


@pytest.fixture
def foreign_server():
    """An HTTP server that is no MCP endpoint: secrets in every body, and one JSON-RPC error."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, kind, body = {
                "/notfound": (404, "text/html", "<h1>SECRET-404 internal page</h1>"),
                "/listing": (200, "application/json", '{"items": ["SECRET-corpus-name"]}'),
                "/text": (200, "text/plain", "SECRET-plain"),
                "/rpc": (403, "application/json",
                         '{"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "key required"}}'),
            }[self.path]
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["/notfound", "/listing", "/text"])
def test_a_run_never_shows_the_body_of_a_url_that_is_not_an_mcp_endpoint(fake_suite, settings, foreign_server, path):
    settings.DOCSMCP_EVAL_ALLOWED_URLS = [foreign_server]
    run = eval_run(corpus=fake_suite.corpus, suite=fake_suite, mode="http", url=foreign_server + path)
    assert run.status == EvalRun.FAILED
    assert "SECRET" not in run.error and "not an MCP endpoint" in run.error, run.error


def test_a_run_quotes_a_json_rpc_error_of_the_target(fake_suite, settings, foreign_server):
    settings.DOCSMCP_EVAL_ALLOWED_URLS = [foreign_server]
    run = eval_run(corpus=fake_suite.corpus, suite=fake_suite, mode="http", url=foreign_server + "/rpc")
    assert run.status == EvalRun.FAILED and "HTTP 403" in run.error and "-32001: key required" in run.error


def test_unreachable_server_fails_the_run_with_the_reason(fake_suite, settings):
    url = f"http://127.0.0.1:{_closed_port()}/mcp/"
    settings.DOCSMCP_EVAL_ALLOWED_URLS = [url]  # an operator-allowed target may report its connection errors
    run = eval_run(corpus=fake_suite.corpus, suite=fake_suite, mode="http", url=url)
    assert run.status == EvalRun.FAILED and url in run.error and "ConnectError" in run.error


# --- the real thing: the sample corpus ---------------------------------------------------------


def test_in_process_run_on_the_sample_corpus(sample_corpus):
    suite = suite_import(name="sample", path=SAMPLE_SUITE, corpus=sample_corpus)
    run = eval_run(corpus=sample_corpus, suite=suite)
    assert run.status == EvalRun.COMPLETE, run.error
    assert run.build_id == sample_corpus.active_build_id and run.index_bytes > 0
    assert run.results.count() == suite.cases.count()
    overall = run.metrics["overall"]
    assert overall["errors"] == 0
    assert overall["chunk"]["n"] == suite.cases.exclude(expected_chunk_ids=[]).count()
    assert overall["chunk"]["mrr@10"] > 0.4 and overall["file"]["hit@10"] > 0.7
    assert set(run.metrics["by_category"]) == {"identifier", "paraphrase", "filtered", "zero-result", "unanswered"}
    assert run.metrics["by_category"]["unanswered"]["cases"] == 3  # questions the sample docs cannot answer
    # every search said whether the docs cover it; the run's precision and recall are those of the cases
    verdicts = list(run.results.values_list("zero_result", "coverage"))
    assert all(v in ("covered", "partial", "not_covered") for _z, v in verdicts)
    coverage, unanswerable = overall["coverage"], overall["unanswerable"]
    assert coverage["n"] == 90 and unanswerable["n"] == 9 == suite.cases.filter(answerable=False).count()
    flagged = [zero for zero, v in verdicts if v == "not_covered"]
    assert coverage["precision"] == round(sum(flagged) / len(flagged), 4)
    assert coverage["recall"] == round(sum(flagged) / 9, 4)
    assert run.results.get(case_name="unanswered-apple-pay").coverage != "covered"
    wrongly = run.results.filter(zero_result=False, coverage="not_covered")
    assert all(not r.passed and "not_covered" in r.why for r in wrongly)
    assert run.latency["search"]["p50"] > 0 and run.latency["get_doc"]["n"] > 0
    hit = run.results.get(case_name="ratelimiterror-python")
    assert hit.chunk_rank == 1 and hit.top_hits[0] == "sdks/python/errors.md#error-handling/ratelimiterror"
    scores = latest_scores_for_builds([sample_corpus.active_build_id])
    assert scores[sample_corpus.active_build_id][0]["suite"] == "sample"


@pytest.mark.django_db(transaction=True)
def test_http_run_matches_the_in_process_run(sample_corpus, live_server, settings):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 100_000
    settings.MCP_SERVER_PORT = int(live_server.url.rsplit(":", 1)[1])  # the server's own /mcp/ is always allowed
    suite = suite_import(name="sample", path=SAMPLE_SUITE, corpus=sample_corpus)
    local = eval_run(corpus=sample_corpus, suite=suite)
    remote = eval_run(corpus=sample_corpus, suite=suite, mode="http", url=f"{live_server.url}/mcp/", baseline=local)
    assert remote.status == EvalRun.COMPLETE, remote.error
    assert remote.target_url.endswith("/mcp/") and remote.metrics["overall"]["errors"] == 0
    # the same tool code answers both ways: identical ranks for every case
    assert remote.metrics["overall"]["chunk"] == local.metrics["overall"]["chunk"]
    assert remote.delta["cases"]["worse"] == [] and remote.delta["cases"]["better"] == []
    assert remote.latency["get_doc"]["n"] > 0


# --- doors: command, task, admin ---------------------------------------------------------------


def test_run_eval_command_imports_runs_and_compares(sample_corpus, tmp_path):
    out = StringIO()
    cases = two_of_each_category(tmp_path)
    call_command("run_eval", "--corpus", "sample", "--suite", "sample-eval", "--cases", str(cases), "--no-progress",
                 stdout=out, stderr=StringIO())
    first = EvalRun.objects.get()
    assert first.status == EvalRun.COMPLETE and first.requested_by == "manage.py"
    assert f"run {first.pk} complete: suite sample-eval on sample" in out.getvalue()
    assert "chunk: MRR@10" in out.getvalue() and "identifier" in out.getvalue()
    assert EvalSuite.objects.get(name="sample-eval").corpus == sample_corpus
    out = StringIO()
    call_command("run_eval", "--corpus", "sample", "--suite", "sample-eval", "--baseline", str(first.pk),
                 "--max-rounds", "1", "--no-progress", "--json", stdout=out, stderr=StringIO())
    assert "vs baseline" in out.getvalue()
    assert json.loads(out.getvalue()[: out.getvalue().rindex("}") + 1])["delta"]["baseline"] == first.pk


def test_run_eval_command_errors(sample_corpus):
    with pytest.raises(CommandError, match="eval suite 'nope' not found"):
        call_command("run_eval", "--corpus", "sample", "--suite", "nope", "--no-progress")
    with pytest.raises(CommandError, match="not found"):
        call_command("run_eval", "--corpus", "missing", "--suite", "nope", "--no-progress")
    with pytest.raises(CommandError, match="--filter expects"):
        call_command("run_eval", "--corpus", "sample", "--suite", "s", "--cases", str(SAMPLE_SUITE),
                     "--filter", "language", "--no-progress")


def test_failed_run_exits_1(fake_suite, settings):
    url = f"http://127.0.0.1:{_closed_port()}/mcp/"
    settings.DOCSMCP_EVAL_ALLOWED_URLS = [url]
    with pytest.raises(SystemExit) as exc:
        call_command("run_eval", "--corpus", "fake", "--suite", "fake-suite", "--over-http", url, "--no-progress",
                     stderr=StringIO())
    assert exc.value.code == 1


def test_eval_suite_command_imports_and_exports(fake_corpus, tmp_path):
    out = StringIO()
    call_command("eval_suite", "import", str(SAMPLE_SUITE), "--suite", "s1", "--corpus", "fake", stdout=out)
    assert "suite s1 of corpus fake:" in out.getvalue()
    target = tmp_path / "s1.jsonl"
    call_command("eval_suite", "export", "--suite", "s1", "--corpus", "fake", "-o", str(target))
    assert len(read_cases(target)) == EvalSuite.objects.get(name="s1").cases.count()


def test_celery_task_runs_a_queued_run(sample_corpus, django_capture_on_commit_callbacks, tmp_path):
    suite = suite_import(name="sample", path=two_of_each_category(tmp_path), corpus=sample_corpus)
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_start(corpus=sample_corpus, suite=suite)
        assert run.status == EvalRun.QUEUED
    run.refresh_from_db()
    assert run.status == EvalRun.COMPLETE
    from evals.tasks import run_eval

    assert run_eval.name == "evals.run_eval" and run_eval(run.pk) == EvalRun.COMPLETE  # not re-run


def test_admin_action_runs_a_suite_against_the_active_build(sample_corpus, admin_client,
                                                            django_capture_on_commit_callbacks, tmp_path):
    suite = suite_import(name="sample", path=two_of_each_category(tmp_path), corpus=sample_corpus)
    unbuilt = Corpus.objects.create(name="unbuilt", source_dir="/x")
    orphan = suite_import(name="orphan", text='[{"query": "x", "expectedChunkId": "a.md#x"}]', corpus=unbuilt)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post("/admin/evals/evalsuite/", {
            "action": "run_against_active_build", "_selected_action": [suite.pk, orphan.pk]}, follow=True)
    text = response.content.decode()
    run = EvalRun.objects.get(suite=suite)
    assert run.status == EvalRun.COMPLETE and run.build_id == sample_corpus.active_build_id
    assert f"run <a href=\"/evals/runs/{run.pk}/\">#{run.pk}</a> queued" in text
    assert "Orphan: corpus" in text and "has no active build" in text  # the admin capitalises messages


def test_admin_pages_render(sample_corpus, admin_client, tmp_path):
    suite = suite_import(name="sample", path=two_of_each_category(tmp_path), corpus=sample_corpus)
    run = eval_run(corpus=sample_corpus, suite=suite)
    result = run.results.first()
    for url in ["/admin/evals/evalsuite/", f"/admin/evals/evalsuite/{suite.pk}/change/", "/admin/evals/evalcase/",
                "/admin/evals/evalrun/", f"/admin/evals/evalrun/{run.pk}/change/", "/admin/evals/evalresult/",
                f"/admin/evals/evalresult/{result.pk}/change/"]:
        assert admin_client.get(url).status_code == 200, url
    page = admin_client.get("/admin/evals/evalrun/").content.decode()
    assert f"{run.metrics['overall']['chunk']['mrr@10']:.3f}" in page
    export = admin_client.post("/admin/evals/evalsuite/", {"action": "export_jsonl", "_selected_action": [suite.pk]})
    assert export["Content-Type"] == "application/x-ndjson"
    assert len(export.content.decode().splitlines()) == suite.cases.count()


def test_build_list_shows_eval_scores_when_the_corpus_admin_opts_in(sample_corpus, admin_client, monkeypatch,
                                                                    tmp_path):
    from django.contrib import admin as django_admin

    suite = suite_import(name="sample", path=two_of_each_category(tmp_path), corpus=sample_corpus)
    run = eval_run(corpus=sample_corpus, suite=suite)
    build_admin = django_admin.site._registry[BuildRun]
    # the one line corpus/admin.py adds to BuildRunAdmin
    monkeypatch.setattr(build_admin, "change_list_template", "admin/evals/buildrun_change_list.html")
    page = admin_client.get("/admin/corpus/buildrun/").content.decode()
    assert "Eval scores" in page
    assert f'href="/evals/runs/{run.pk}/"' in page
    assert f"MRR@10 {run.metrics['overall']['chunk']['mrr@10']:.3f}" in page


def test_the_admin_names_each_suite_with_its_corpus(admin_client):
    """Two corpora may each have a suite called `gaps`: by bare name the admin's suite filters and the case
    form's drop-down showed two alike entries. Each is shown as "corpus / name", and picks its own suite."""
    alpha = Corpus.objects.create(name="alpha", source_dir="/nonexistent/alpha")
    beta = Corpus.objects.create(name="beta", source_dir="/nonexistent/beta")
    ours, theirs = (EvalSuite.objects.create(corpus=corpus, name="gaps") for corpus in (alpha, beta))
    EvalCase.objects.create(suite=ours, name="c1", query="q")
    assert (str(ours), str(theirs)) == ("alpha / gaps", "beta / gaps")
    for page in ("/admin/evals/evalcase/", "/admin/evals/evalrun/"):
        text = admin_client.get(page).content.decode()
        assert f'?suite__id__exact={ours.pk}">alpha / gaps' in text.replace("\n", "").replace("  ", ""), page
        assert "beta / gaps" in text, page
    form = admin_client.get("/admin/evals/evalcase/add/").content.decode()
    assert f'<option value="{ours.pk}">alpha / gaps</option>' in form
    assert f'<option value="{theirs.pk}">beta / gaps</option>' in form
