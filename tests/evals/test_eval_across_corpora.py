"""Evals across corpora: the same cases asked of /mcp/ without a corpus argument (scope `all`) and with
each case's corpus named (scope `named`), scored only on hits from the case's own corpus, and corpus
resolution (`list_corpora` with the question: is the case's corpus first?) stored with the run and
shown on the dashboards. Real corpora: the bundled sample (the default) and a tiny Kubernetes corpus
built with `manage.py build_index`; in process and over HTTP against a live server."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evals.errors import EvalError
from evals.models import EvalRun
from evals.services import eval_run, suite_import

KUBE_PAGES = {
    "pods.md": "# Pods\n\nA Pod is the smallest deployable unit of computing in Kubernetes: one or more "
               "containers sharing storage and network.\n",
    "deployments.md": "# Deployments\n\nA Deployment manages a replicated set of Pods and rolls out updates "
                      "to them.\n\n## Rolling back\n\nRoll a Deployment back with `kubectl rollout undo`.\n",
}
CASES = [
    {"id": "kube-pod", "query": "smallest deployable unit of computing, containers sharing network",
     "expected_files": ["pods.md"], "corpus": "kubernetes", "category": "kube"},
    {"id": "kube-rollback", "query": "kubectl rollout undo a Deployment",
     "expected_chunk_ids": ["deployments.md#deployments/rolling-back"], "corpus": "kubernetes", "category": "kube"},
    {"id": "sample-ratelimit", "query": "RateLimitError python SDK retries",
     "expected_files": ["sdks/python/errors.md"], "corpus": "sample", "category": "payments"},
    # The page exists, but in the other corpus: a hit from there must not count for this case.
    {"id": "sample-wrong-corpus", "query": "smallest deployable unit of computing, containers sharing network",
     "expected_files": ["pods.md"], "corpus": "sample", "category": "payments"},
    # Kubernetes cannot answer this (a zero-result case of its own); across corpora, the sample can.
    {"id": "kube-no-ratelimit", "query": "RateLimitError python SDK retries", "corpus": "kubernetes",
     "category": "zero-result"},
]


def write_cases(path: Path, cases: list[dict]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


@pytest.fixture
def two_corpora(sample_corpus, index_root, tmp_path, settings):
    """`sample` (the default corpus) and a built `kubernetes` corpus with a description."""
    from corpus.models import Corpus
    from corpus.serving import forget_active

    settings.DOCSMCP_DEFAULT_CORPUS = "sample"
    settings.DOCSMCP_SOURCE_ROOTS = [str(tmp_path)]
    root = tmp_path / "kubernetes"
    root.mkdir()
    for name, text in KUBE_PAGES.items():
        (root / name).write_text(text)
    # Full text only: a question with none of its words gets no hit from it (vectors always have neighbours).
    call_command("build_index", "--corpus", "kubernetes", "--source", str(root), "--embedding-provider", "none",
                 "--full", "--no-progress", stdout=StringIO())
    Corpus.objects.filter(name="kubernetes").update(description="Kubernetes container orchestration")
    forget_active()
    return sample_corpus


@pytest.fixture
def suite(two_corpora, tmp_path):
    return suite_import(name="across", path=write_cases(tmp_path / "cases.jsonl", CASES), corpus=two_corpora)


def test_a_question_about_corpus_b_resolves_to_b_and_is_scored_on_b_only(two_corpora, suite):
    run = eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_ALL)
    assert run.status == EvalRun.COMPLETE, run.error
    assert run.scope == "all" and run.metrics["overall"]["errors"] == 0
    results = {r.case_name: r for r in run.results.all()}

    pod = results["kube-pod"]
    assert pod.metrics["resolution"] == {"expected": "kubernetes", "first": "kubernetes", "rank": 1}
    assert pod.passed and pod.file_rank == 1 and pod.top_hits[0].startswith("pods.md")
    assert results["kube-rollback"].chunk_rank == 1
    assert results["sample-ratelimit"].metrics["resolution"]["first"] == "sample"
    assert results["sample-ratelimit"].passed

    # Same question, same file name, but the case says the sample corpus answers it: the kubernetes hit
    # is shown as coming from there and does not count.
    wrong = results["sample-wrong-corpus"]
    assert not wrong.passed and wrong.file_rank is None
    assert wrong.top_hits[0].startswith("[kubernetes] pods.md")
    assert wrong.metrics["resolution"]["first"] == "kubernetes" and wrong.metrics["resolution"]["rank"] == 2

    # A case its corpus cannot answer passes while no hit comes from that corpus, whatever the others
    # answer, and has no right corpus to resolve to.
    none = results["kube-no-ratelimit"]
    assert none.hit_count > 0 and all(h.startswith("[sample] ") for h in none.top_hits)
    assert none.passed and "resolution" not in none.metrics

    overall = run.metrics["overall"]
    assert overall["resolution"] == {"n": 4, "accuracy": 0.75, "mrr": 0.875}
    assert run.metrics["by_corpus"]["kubernetes"]["resolution"]["accuracy"] == 1.0
    assert run.metrics["by_corpus"]["sample"]["resolution"]["accuracy"] == 0.5
    assert run.metrics["by_corpus"]["kubernetes"]["file"]["mrr@10"] == 1.0
    assert run.latency["list_corpora"]["n"] == 4 and run.latency["get_doc"]["n"] == 5


def test_named_scope_asks_each_case_s_corpus_alone(two_corpora, suite):
    across = eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_ALL)
    alone = eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_NAMED)
    assert alone.status == EvalRun.COMPLETE, alone.error
    results = {r.case_name: r for r in alone.results.all()}
    assert results["kube-pod"].file_rank == 1
    # Asked of the sample corpus alone, no hit comes from kubernetes at all.
    assert not any(h.startswith("[") for h in results["sample-wrong-corpus"].top_hits)
    assert results["sample-ratelimit"].passed
    per_corpus = across.metrics["by_corpus"]["kubernetes"]["file"]["mrr@10"]
    assert per_corpus == alone.metrics["by_corpus"]["kubernetes"]["file"]["mrr@10"]


def test_a_run_across_corpora_needs_every_case_s_corpus(two_corpora, tmp_path):
    cases = [{k: v for k, v in c.items() if k != "corpus"} if c["id"] == "kube-pod" else c for c in CASES]
    suite = suite_import(name="partial", path=write_cases(tmp_path / "partial.jsonl", cases), corpus=two_corpora)
    with pytest.raises(EvalError, match=r"cases without one \(kube-pod\).*\"corpus\": \"<name>\""):
        eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_ALL)
    with pytest.raises(EvalError, match="unknown scope 'every'"):
        eval_run(corpus=two_corpora, suite=suite, scope="every")
    # A run of one corpus does not need it.
    assert eval_run(corpus=two_corpora, suite=suite).status == EvalRun.COMPLETE


def test_the_case_s_corpus_is_read_and_written_back(suite):
    assert dict(suite.cases.values_list("name", "corpus"))["kube-pod"] == "kubernetes"
    from evals.selectors import suite_export

    exported = [json.loads(line) for line in suite_export(suite=suite).splitlines()]
    assert {c["id"]: c["corpus"] for c in exported}["sample-ratelimit"] == "sample"


def test_run_eval_command_prints_resolution_per_corpus(two_corpora, tmp_path):
    out = StringIO()
    call_command("run_eval", "--suite", "cmd-across", "--cases", str(write_cases(tmp_path / "c.jsonl", CASES)),
                 "--scope", "all", "--no-progress", stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert "on /mcp/ (scope all)" in text and "corpus resolution 0.750" in text
    assert re.search(r"corpus kubernetes\s+3/3 passed .* resolution 1\.000", text)


def test_dashboards_show_the_resolution_and_its_history(two_corpora, suite, admin_client):
    first = eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_ALL)
    second = eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_ALL, baseline=first)
    eval_run(corpus=two_corpora, suite=suite)  # the same suite on the sample corpus alone: a series of its own

    page = admin_client.get("/evals/").content.decode()
    across = page[page.index('id="corpus-mcp-across-corpora"'):]
    assert 'data-scope="all"' in across and "corpus resolution" in across
    assert re.search(r'data-metric="resolution"><div class="k">corpus resolution</div><div class="v">75', across)
    assert 'aria-label="corpus resolution (list_corpora)"' in across and "first 0.750" in across
    own = page[page.index('id="corpus-sample"'):]  # headings sorted: "/mcp/ across corpora" comes first
    assert 'data-scope="corpus"' in own and "corpus resolution" not in own

    run_page = admin_client.get(f"/evals/runs/{second.pk}/").content.decode()
    assert 'id="resolution-card"' in run_page and "across corpora: /mcp/ without a corpus argument" in run_page
    assert 'id="corpora"' in run_page and "list_corpora with the case&#x27;s query" in run_page
    assert re.search(r'sample → <span class="err">kubernetes</span>', run_page)
    assert "75.0%" in admin_client.get("/admin/evals/evalrun/?scope=all").content.decode()


@pytest.mark.django_db(transaction=True)
def test_over_http_the_endpoint_gives_the_same_scores(two_corpora, suite, live_server, settings):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 100_000
    settings.MCP_SERVER_PORT = int(live_server.url.rsplit(":", 1)[1])
    local = eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_ALL)
    remote = eval_run(corpus=two_corpora, suite=suite, scope=EvalRun.SCOPE_ALL, mode="http",
                      url=f"{live_server.url}/mcp/", baseline=local)
    assert remote.status == EvalRun.COMPLETE, remote.error
    assert remote.metrics["overall"]["resolution"] == local.metrics["overall"]["resolution"]
    assert remote.metrics["by_corpus"] == local.metrics["by_corpus"]
    assert remote.delta["cases"]["worse"] == [] and remote.delta["cases"]["better"] == []


def test_rest_starts_a_run_across_corpora(two_corpora, suite, writer_client, django_capture_on_commit_callbacks):
    from corpus.apikeys import create_api_key
    from tests.api_helpers import assert_error, call

    with django_capture_on_commit_callbacks(execute=True):
        response = call(writer_client, "post", "/evals/runs", {"corpus": "sample", "suite": "across", "scope": "all"})
    assert response.status_code == 202, response.content
    run = call(writer_client, "get", f"/evals/runs/{response.json()['id']}").json()
    assert run["status"] == "complete" and run["scope"] == "all", run["error"]
    assert run["metrics"]["overall"]["resolution"]["accuracy"] == 0.75
    assert set(run["metrics"]["by_corpus"]) == {"kubernetes", "sample"}

    # The run's calls carry no key: a key limited to some corpora may not ask every corpus through it.
    _row, limited = create_api_key("sample-only", ["build"], corpora=["sample"])
    refused = call(writer_client, "post", "/evals/runs", {"corpus": "sample", "suite": "across", "scope": "all"},
                   key=limited)
    assert_error(refused, 400, message_contains="limited to some corpora")
    assert_error(call(writer_client, "post", "/evals/runs", {"corpus": "sample", "suite": "across", "scope": "x"}),
                 422)
