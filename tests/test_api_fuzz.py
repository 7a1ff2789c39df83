"""Fuzz the REST API from its own OpenAPI schema, against a live server: no input may cause a 5xx.

schemathesis (CLI, in a subprocess) reads /api/v1/openapi.json from the live server started by
pytest-django and sends schema-valid and schema-breaking requests to every operation, checking
`not_a_server_error`. Search and chunk operations are pointed at the registered sample corpus
so the engine itself is fuzzed (queries, filters, cursors, chunk IDs); the other operations get
generated names. Mutations cannot touch real paths: DOCSMCP_SOURCE_ROOTS and the index root are
temporary directories, and the database is the test database.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MAX_EXAMPLES = int(os.environ.get("DOCSMCP_FUZZ_EXAMPLES", "20"))
TIME_BUDGET = 85  # seconds; the run is killed (and the test fails) past this
SCHEMATHESIS = Path(sys.executable).with_name("st")

CONFIG = """
[[operations]]
include-path-regex = "/(search|chunks?)(/|$)"
parameters = { "path.name" = "sample" }

[[operations]]
include-method = "DELETE"
parameters = { "path.name" = "fuzz-victim" }
"""


@pytest.fixture
def fuzz_env(settings, tmp_path, index_root):
    sources = tmp_path / "sources"
    (sources / "docs").mkdir(parents=True)
    settings.DOCSMCP_SOURCE_ROOTS = [str(sources)]
    settings.MCP_AUTH_REQUIRED = False  # anonymous holds every scope, so the fuzzer reaches every handler
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    return config


@pytest.mark.skipif(not SCHEMATHESIS.exists(), reason="schemathesis is not installed (requirements.txt)")
def test_no_generated_request_gets_a_server_error(live_server, sample_corpus, fuzz_env, tmp_path):
    command = [
        str(SCHEMATHESIS), "--config-file", str(fuzz_env), "run", f"{live_server.url}/api/v1/openapi.json",
        "--checks", "not_a_server_error",
        "--max-examples", str(MAX_EXAMPLES),
        "--phases", "examples,coverage,fuzzing",
        "--workers", "1",  # the live server shares one SQLite connection between its threads
        "--seed", "20260101",
        "--request-timeout", "20",
        "--generation-with-security-parameters", "false",
        "--generation-database", "none",
        "--no-color",
        "--report", "ndjson", "--report-ndjson-path", str(tmp_path / "events.ndjson"),
    ]
    try:
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=TIME_BUDGET)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"schemathesis did not finish within {TIME_BUDGET}s:\n{exc.stdout or ''}")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    print(output)
    assert "not_a_server_error" in output
