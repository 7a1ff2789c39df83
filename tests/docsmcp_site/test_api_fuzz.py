"""Fuzz the REST API from its own OpenAPI schema, against a live server: no input may cause a 5xx.

schemathesis (CLI, in a subprocess) reads /api/v1/openapi.json from the live server started by
pytest-django and sends schema-valid and schema-breaking requests to every operation, checking
`not_a_server_error`: one run per OpenAPI tag (small tags share one, see RUNS), each with at most DOCSMCP_FUZZ_EXAMPLES random
examples per operation after the boundary values, killed after DOCSMCP_FUZZ_SECONDS. Search and chunk operations are pointed at the registered sample corpus
so the engine itself is fuzzed (queries, filters, cursors, chunk IDs); the other operations get
generated names. Mutations cannot touch real paths: DOCSMCP_SOURCE_ROOTS and the index root are
temporary directories, and the database is the test database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MAX_EXAMPLES = int(os.environ.get("DOCSMCP_FUZZ_EXAMPLES", "10"))
TAGS = ("corpora", "builds", "search", "fixes", "evals", "webhooks", "insights")
# One schemathesis run per entry; small tags share a run to keep the time budget.
RUNS = (("corpora",), ("builds",), ("search",), ("fixes", "evals", "webhooks"), ("insights",))
HARD_LIMIT = int(os.environ.get("DOCSMCP_FUZZ_SECONDS", "85"))  # past this the run is killed and the test fails
SCHEMATHESIS = Path(sys.executable).with_name("st")

# Point the operations that need existing data at it; the rest get generated names (mostly 404s).
CONFIG = """
[[operations]]
include-path-regex = "/(search|chunks?)(/|$)"
parameters = {{ "path.name" = "sample" }}

[[operations]]
include-path-regex = "/builds/[{{]build_id[}}]"
parameters = {{ "path.name" = "sample", "path.build_id" = "{build_id}" }}

[[operations]]
include-path-regex = "/fixes"
parameters = {{ "path.name" = "fuzz-fixes", "path.proposal_id" = {proposal_id} }}

[[operations]]
include-method = "DELETE"
parameters = {{ "path.name" = "fuzz-victim" }}
"""


@pytest.fixture
def fuzz_env(settings, tmp_path, index_root, sample_corpus, copy_sample_docs, monkeypatch):
    """Allowed roots, corpora and a fix proposal, all under tmp_path; builds are queued, never run."""
    from corpus.models import Corpus, FixProposal
    from corpus.tasks import run_build
    from evals.services import suite_import
    from evals.tasks import run_eval
    from retrieval.fixes.apply import current_hash

    sources = tmp_path / "sources"
    (sources / "docs").mkdir(parents=True)
    (sources / "docs" / "page.md").write_text("# Page\n\nText.\n")
    settings.DOCSMCP_SOURCE_ROOTS = [str(sources)]
    settings.MCP_AUTH_REQUIRED = False  # anonymous callers read; the keyed runs reach every handler
    # Builds would run inline in the request (no broker), with whatever provider the fuzzer picks
    # (`local` loads a model, `openai` calls out): queue them instead; test_api_builds runs real ones.
    for task in (run_build, run_eval):  # eval runs too (http mode calls out)
        monkeypatch.setattr(task, "delay", lambda *args, **kwargs: None)
        monkeypatch.setattr(task, "apply_async", lambda *args, **kwargs: None)
    suite_import(name="fuzz-suite", text='[{"query": "retries", "expectedChunkId": "guides/retries.md"}]',
                 corpus=sample_corpus)
    Corpus.objects.filter(pk=sample_corpus.pk).update(source_dir=str(copy_sample_docs))
    Corpus.objects.create(name="fuzz-victim", kind=Corpus.KIND_CHUNKS)
    fixes = Corpus.objects.create(name="fuzz-fixes", source_dir=str(sources / "docs"))
    proposal = FixProposal.objects.create(
        corpus=fixes, file="page.md", kind="frontmatter", rationale="r", diff="d", target_path="page.md",
        old_content="# Page\n\nText.\n", new_content="# Page\n\nBetter text.\n",
        base_hash=current_hash(sources / "docs" / "page.md"))
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG.format(build_id=sample_corpus.active_build.build_id, proposal_id=proposal.pk))
    return config


def test_every_operation_is_in_a_fuzzed_tag(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    tags = {tag for ops in schema["paths"].values() for op in ops.values() for tag in op["tags"]}
    assert tags == set(TAGS)
    assert sorted(tag for run in RUNS for tag in run) == sorted(TAGS)


@pytest.mark.skipif(not SCHEMATHESIS.exists(), reason="schemathesis is not installed (requirements-dev.txt)")
@pytest.mark.parametrize("keyed", [True, False], ids=["admin-key", "anonymous"])
@pytest.mark.parametrize("tags", RUNS, ids="+".join)
def test_no_generated_request_gets_a_server_error(live_server, fuzz_env, tmp_path, tags, keyed):
    """One bounded schemathesis run per tag, so each stays well inside its time limit; with an admin key
    (every handler runs) and without one (reads run, writes are refused)."""
    from corpus.apikeys import create_api_key

    auth = ["--header", f"Authorization: Bearer {create_api_key('fuzzer', ['admin'])[1]}"] if keyed else []
    command = [
        str(SCHEMATHESIS), "--config-file", str(fuzz_env), "run",
        live_server.url.replace("localhost", "127.0.0.1") + "/api/v1/openapi.json",
        "--include-tag-regex", f"^({'|'.join(tags)})$",
        "--checks", "not_a_server_error",
        "--phases", "coverage,fuzzing",  # boundary and negative values of every parameter, then random ones
        "--max-examples", str(MAX_EXAMPLES),
        "--workers", "1",  # in-memory SQLite shares one connection between the live server's threads
        "--seed", "20260101",
        "--request-timeout", "20",
        "--generation-with-security-parameters", "false",
        "--generation-database", "none",
        "--suppress-health-check", "filter_too_much",  # chunk IDs are paths; many generated ones are unusable
        "--no-color",
        "--report", "ndjson", "--report-ndjson-path", str(tmp_path / "events.ndjson"),
        *auth,
    ]
    try:
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=HARD_LIMIT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"schemathesis did not finish within {HARD_LIMIT}s:\n{exc.stdout or ''}")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    statuses = answered(tmp_path / "events.ndjson")
    assert statuses, output[-3000:]
    server_errors = {uri: codes for uri, codes in statuses.items() if any(code >= 500 for code in codes)}
    assert not server_errors, server_errors
    if "search" in tags:  # the engine itself was fuzzed: searches and chunk reads of the sample got answers
        for route in ("/corpora/sample/search", "/corpora/sample/chunk"):
            assert any(200 in codes for uri, codes in statuses.items() if route in uri), output[-3000:]


def answered(report: Path) -> dict[str, set[int]]:
    """Every request URI (without its query) in schemathesis's NDJSON report, with the statuses it got."""
    statuses: dict[str, set[int]] = {}

    def walk(node):
        if isinstance(node, dict):
            request, response = node.get("request"), node.get("response")
            if isinstance(request, dict) and isinstance(response, dict) and "status_code" in response:
                statuses.setdefault(request.get("uri", "").split("?")[0], set()).add(response["status_code"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for line in report.read_text().splitlines():
        walk(json.loads(line))
    return statuses
