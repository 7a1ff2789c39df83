"""The techdoc profile (docs/contracts/techdoc-tools.md) end to end over HTTP: the seed's curl examples as written, its validation
table, its error and resource shapes, its settings, and the official mcp client."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from retrieval.search.coverage import NOT_COVERED_NOTICE
from tests import conftest, profile_fixtures
from tests.profile_fixtures import call, rpc, with_client

built_corpora = profile_fixtures.built_corpora
doc_corpora = profile_fixtures.doc_corpora
live_url = profile_fixtures.live_url
sample_build_dir = conftest.sample_build_dir

CONTRACT = conftest.ROOT / "docs" / "contracts" / "techdoc-tools.md"
SEED_HOST = "http://localhost:8001"

# The four "Complete Request/Response Examples" of seed 003, verbatim, as the contract page shows them
# (checked against docs/contracts/techdoc-tools.md below, which a clone always has).
EXAMPLES = [
    """curl -s -X POST http://localhost:8001/mcp \\
  -H "Content-Type: application/json" \\
  -d '{
    "jsonrpc": "2.0",
    "method": "tools/list",
    "id": "ex-1"
  }' | python -m json.tool""",
    """curl -s -X POST http://localhost:8001/mcp \\
  -H "Content-Type: application/json" \\
  -d '{
    "jsonrpc": "2.0",
    "method": "tools/call",
    "params": {
      "name": "search_documentation",
      "arguments": {
        "query": "How do I configure max_connections?",
        "max_results": 3,
        "doc_type": "postgresql"
      }
    },
    "id": "ex-2"
  }' | python -m json.tool""",
    """curl -s -X POST http://localhost:8001/mcp \\
  -H "Content-Type: application/json" \\
  -H "Authorization: Bearer my-secret-key" \\
  -d '{
    "jsonrpc": "2.0",
    "method": "tools/call",
    "params": {
      "name": "search_documentation",
      "arguments": {
        "query": "VACUUM ANALYZE explained",
        "max_results": 5
      }
    },
    "id": "ex-3"
  }'""",
    """curl -s -X POST http://localhost:8001/mcp \\
  -H "Content-Type: application/json" \\
  -d '{
    "jsonrpc": "2.0",
    "method": "tools/call",
    "params": {
      "name": "get_document",
      "arguments": {
        "document_id": "postgresql/indexes.html"
      }
    },
    "id": "ex-4"
  }'""",
]


def url_of(base: str) -> str:
    return f"{base}/mcp/techdoc/"


@pytest.fixture
def http():
    with httpx.Client(timeout=60) as client:
        yield client


@pytest.fixture
def techdoc_default(settings):
    """/mcp serves the techdoc profile, as the seed's examples assume."""
    settings.DOCSMCP_DEFAULT_PROFILE = "techdoc"


def run_example(example: str, base: str) -> dict:
    """One seed example as written, against `base` instead of localhost:8001: through bash and curl when
    they are installed (with `python` on PATH), else the same request through httpx."""
    command = example.replace(SEED_HOST, base)
    if shutil.which("curl") and shutil.which("bash"):
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        done = subprocess.run(["bash", "-c", "set -o pipefail; " + command], capture_output=True, text=True,
                              timeout=120, env=env, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    url = re.search(r"POST (\S+)", command).group(1)
    headers = dict(h.split(": ", 1) for h in re.findall(r'-H "([^"]+)"', command))
    body = re.search(r"-d '(.*?)'", command, re.S).group(1)
    return httpx.post(url, content=body, headers=headers, timeout=60).json()


def test_the_examples_run_here_are_the_contract_pages_verbatim():
    text = CONTRACT.read_text()
    section = text[text.index("## Request examples"):]
    blocks = [b.strip() for b in re.findall(r"```bash\n(.*?)```", section, re.S)]
    assert blocks == EXAMPLES


@pytest.mark.parametrize("path", ["/mcp", "/mcp/techdoc"])
def test_seed_examples_work_as_written(doc_corpora, live_url, techdoc_default, settings, path):
    """Against /mcp (DOCSMCP_DEFAULT_PROFILE=techdoc) exactly as written, and against /mcp/techdoc."""
    examples = [e.replace(f"{SEED_HOST}/mcp ", f"{SEED_HOST}{path} ") for e in EXAMPLES]
    base = live_url

    listed = run_example(examples[0], base)
    assert listed["id"] == "ex-1"
    tools = listed["result"]["tools"]
    assert [t["name"] for t in tools] == ["search_documentation", "get_document", "submit_feedback"]
    search = tools[0]
    assert search["description"].startswith("Search technical documentation using semantic similarity. "
                                            "Returns relevant document chunks. Each reply carries `coverage`")
    assert search["input_schema"] == search["inputSchema"]
    properties = search["input_schema"]["properties"]
    assert properties["doc_type"]["enum"] == ["postgresql", "sample", "ubuntu", "all"]
    assert properties["max_results"]["default"] == 5
    assert search["input_schema"]["required"] == ["query"]
    assert tools[1]["input_schema"]["required"] == ["document_id"]
    assert tools[1]["description"] == "Retrieve a specific document by ID or path."

    found = run_example(examples[1], base)
    assert found["id"] == "ex-2"
    items = found["result"]["content"]
    assert 1 <= len(items) <= 3
    for item in items:
        assert item["type"] == "text" and item["text"]
        assert set(item["metadata"]) >= {"source", "section"}
        assert item["metadata"]["source"].startswith("postgresql/")
        assert 0 <= item["score"] <= 1
    assert items[0]["metadata"]["source"] == "postgresql/runtime-config.md"
    assert items[0]["metadata"]["section"] == "Connections and Authentication"
    assert "max_connections" in items[0]["text"]
    assert found["result"]["isError"] is False

    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = "my-secret-key"
    authed = run_example(examples[2], base)
    assert authed["id"] == "ex-3"
    vacuum = authed["result"]["content"]
    assert 1 <= len(vacuum) <= 5
    assert vacuum[0]["metadata"]["source"] == "postgresql/maintenance.md"
    settings.MCP_AUTH_REQUIRED = False

    document = run_example(examples[3], base)
    assert document["id"] == "ex-4"
    (item,) = document["result"]["content"]
    assert item["type"] == "text"
    assert item["text"] == profile_fixtures.POSTGRESQL["indexes.md"]
    assert item["metadata"]["source"] == "postgresql/indexes.md"


def test_unauthenticated_requests_get_401_when_auth_is_required(doc_corpora, live_url, settings, http):
    settings.MCP_AUTH_REQUIRED = True
    settings.MCP_API_KEY = "my-secret-key"
    for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Basic bXk6a2V5"}):
        response = rpc(http, url_of(live_url), "tools/list", headers=headers)
        assert response.status_code == 401
        assert response.json() == {"detail": "Invalid API key"}
    good = rpc(http, url_of(live_url), "tools/list", headers={"Authorization": "Bearer my-secret-key"})
    assert good.status_code == 200 and len(good.json()["result"]["tools"]) == 3


def test_allowed_origins_setting(doc_corpora, live_url, settings, http):
    settings.MCP_ALLOWED_ORIGINS = ["https://docs.example.com"]
    refused = rpc(http, url_of(live_url), "tools/list", headers={"Origin": "https://evil.example.com"})
    assert refused.status_code == 403
    allowed = rpc(http, url_of(live_url), "tools/list", headers={"Origin": "https://docs.example.com"})
    assert allowed.status_code == 200
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://docs.example.com"


def test_serve_binds_to_mcp_server_host_and_port(settings, monkeypatch):
    from django.core.management import call_command

    settings.MCP_SERVER_HOST, settings.MCP_SERVER_PORT = "127.0.0.2", 8123
    import json

    from common.supervise import Spec

    seen = []
    monkeypatch.setattr(os, "execv", lambda path, argv: seen.append(Spec(**json.loads(argv[3]))))
    call_command("serve")
    assert "127.0.0.2:8123" in seen[0].commands[0]  # the web server's command line
    assert seen[0].health_url == "http://127.0.0.2:8123/health/"


def test_health_check_at_root(doc_corpora, live_url, http):
    response = http.get(f"{live_url}/")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "healthy" and {"service", "version", "protocol"} <= set(body)


# --- validation table ------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("search_documentation", {}, "Missing required argument 'query'."),
    ("search_documentation", {"query": ""}, "Argument 'query' must be at least 1 character long."),
    ("search_documentation", {"query": "x" * 1001}, "Argument 'query' must be at most 1000 characters long; got 1001."),
    ("search_documentation", {"query": 42}, "Argument 'query' must be a string; got 42."),
    ("search_documentation", {"query": "   "}, "Argument 'query' must not be blank."),
    ("search_documentation", {"query": "x", "max_results": 0}, "Argument 'max_results' must be an integer from 1 to 20; got 0."),
    ("search_documentation", {"query": "x", "max_results": 21}, "Argument 'max_results' must be an integer from 1 to 20; got 21."),
    ("search_documentation", {"query": "x", "max_results": "5"}, "Argument 'max_results' must be an integer; got \"5\"."),
    ("search_documentation", {"query": "x", "doc_type": "mysql"},
     'Argument \'doc_type\' must be one of "postgresql", "sample", "ubuntu", "all"; got "mysql".'),
    ("get_document", {}, "Missing required argument 'document_id'."),
    ("get_document", {"document_id": ""}, "Argument 'document_id' must be at least 1 character long."),
    ("get_document", {"document_id": "  "}, "Argument 'document_id' must not be blank."),
    ("get_document", {"document_id": 7}, "Argument 'document_id' must be a string; got 7."),
])
def test_validation_table_is_invalid_params_with_a_readable_message(doc_corpora, live_url, http, tool, arguments,
                                                                    expected):
    body = call(http, url_of(live_url), tool, arguments)
    assert body["error"]["code"] == -32602
    assert expected in body["error"]["message"]
    assert body["error"]["message"].startswith(f"Invalid arguments for tool '{tool}': ")


def test_query_of_1000_characters_and_20_results_are_fine(doc_corpora, live_url, http):
    body = call(http, url_of(live_url), "search_documentation", {"query": ("index " * 200)[:1000], "max_results": 20})
    assert body["result"]["isError"] is False
    assert len(body["result"]["content"]) <= 20


# --- tool errors, documents, doc_type ----------------------------------------------------------------


def test_tool_errors_carry_is_error_and_error_as_well_as_is_error(doc_corpora, live_url, http):
    body = call(http, url_of(live_url), "get_document", {"document_id": "postgresql/missing.html"})
    result = body["result"]
    assert result["isError"] is True and result["is_error"] is True
    assert result["error"] == "Document not found"
    assert result["content"][0]["text"].startswith("Document not found: 'postgresql/missing.html'.")


@pytest.mark.parametrize(("document_id", "source"), [
    ("postgresql/indexes.md", "postgresql/indexes.md"),
    ("postgresql/indexes.html", "postgresql/indexes.md"),
    ("postgresql/indexes", "postgresql/indexes.md"),
    ("pg/runtime-config.md", "postgresql/runtime-config.md"),
    ("runtime-config.md", "postgresql/runtime-config.md"),
    ("networking.html", "ubuntu/networking.md"),
    ("guides/retries.md", "sample/guides/retries.md"),
    ("sample/guides/retries.md", "sample/guides/retries.md"),
])
def test_get_document_id_rule(doc_corpora, live_url, http, document_id, source):
    body = call(http, url_of(live_url), "get_document", {"document_id": document_id})
    (item,) = body["result"]["content"]
    assert item["metadata"]["source"] == source
    assert item["metadata"]["doc_type"] == source.split("/")[0]


def test_a_bare_path_in_several_corpora_is_ambiguous(doc_corpora, live_url, http):
    body = call(http, url_of(live_url), "get_document", {"document_id": "overview.md"})
    result = body["result"]
    assert result["isError"] is True and result["is_error"] is True
    assert result["error"] == ("Document 'overview.md' is in several documentation sets: 'postgresql/overview.md', "
                               "'ubuntu/overview.md'. Use one of these ids.")


def test_doc_type_restricts_and_all_merges(doc_corpora, live_url, http):
    only = call(http, url_of(live_url), "search_documentation", {"query": "overview", "doc_type": "ubuntu",
                                                                 "max_results": 20})
    hits = [i for i in only["result"]["content"] if "metadata" in i]
    assert {i["metadata"]["doc_type"] for i in hits} == {"ubuntu"}
    everywhere = call(http, url_of(live_url), "search_documentation", {"query": "overview", "max_results": 20})
    items = [i for i in everywhere["result"]["content"] if "metadata" in i]
    assert {"postgresql", "ubuntu"} <= {i["metadata"]["doc_type"] for i in items}
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)


def test_a_question_no_documentation_set_covers_ends_with_the_notice(doc_corpora, live_url, http):
    found = call(http, url_of(live_url), "search_documentation", {"query": "Which sourdough starter works best for rye bread?"})
    hits = [i for i in found["result"]["content"] if "metadata" in i]
    (last,) = [i for i in found["result"]["content"] if "coverage" in i]
    assert hits  # the closest chunks still come back
    assert last["coverage"]["verdict"] == "not_covered"
    assert last["text"] == f"[coverage: not_covered ({last['coverage']['score']}). {NOT_COVERED_NOTICE}]"
    covered = call(http, url_of(live_url), "search_documentation", {"query": "max_connections postgresql"})
    assert all("metadata" in i for i in covered["result"]["content"])


def test_an_unexpected_failure_is_a_seed_shaped_tool_error(doc_corpora, live_url, http, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("secret detail /etc/passwd")

    monkeypatch.setattr("retrieval.search.engine.search", boom)  # as corpus.serving calls it
    result = call(http, url_of(live_url), "search_documentation", {"query": "vacuum"})["result"]
    message = "Tool 'search_documentation' failed with an internal error; the server log has details."
    assert (result["isError"], result["is_error"], result["error"]) == (True, True, message)
    assert "secret" not in json.dumps(result)


# --- resources --------------------------------------------------------------------------------------


def test_resources_list_and_read(doc_corpora, live_url, http):
    listed = rpc(http, url_of(live_url), "resources/list", request_id="res-1").json()
    assert listed["id"] == "res-1"
    resources = listed["result"]["resources"]
    assert [r["uri"] for r in resources] == ["techdoc://postgresql/docs", "techdoc://sample/docs",
                                             "techdoc://ubuntu/docs"]
    pg = resources[0]
    assert pg["name"] == "postgresql documentation"
    assert pg["description"] == "PostgreSQL 16 official documentation (version 16)"
    assert pg["mime_type"] == pg["mimeType"] == "application/x-documentation"
    read = rpc(http, url_of(live_url), "resources/read", {"uri": "techdoc://postgresql/docs"}).json()
    (contents,) = read["result"]["contents"]
    listing = json.loads(contents["text"])
    assert listing["doc_type"] == "postgresql" and listing["total"] == 4
    assert {"source": "postgresql/indexes.md", "title": "Indexes", "size": len(profile_fixtures.POSTGRESQL["indexes.md"])} \
        in listing["documents"]
    missing = rpc(http, url_of(live_url), "resources/read", {"uri": "techdoc://mysql/docs"}).json()
    assert missing["error"]["code"] == -32602


# --- the official client ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_official_client(doc_corpora, live_url, mode):
    async def work(client):
        tools = (await client.list_tools()).tools
        found = await client.call_tool("search_documentation", {"query": "shared_buffers memory",
                                                                "doc_type": "postgresql"})
        document = await client.call_tool("get_document", {"document_id": "ubuntu/packages.md"})
        missing = await client.call_tool("get_document", {"document_id": "ubuntu/none.md"})
        resources = (await client.list_resources()).resources
        invalid = await client.call_tool("search_documentation", {"query": "x", "max_results": 50})
        return tools, found, document, missing, resources, invalid

    tools, found, document, missing, resources, invalid = with_client(url_of(live_url), work, mode=mode)
    assert [t.name for t in tools] == ["search_documentation", "get_document", "submit_feedback"]
    assert found.is_error is False and "shared_buffers" in found.content[0].text
    assert document.content[0].text == profile_fixtures.UBUNTU["packages.md"]
    assert missing.is_error is True and missing.content[0].text.startswith("Document not found")
    assert [str(r.uri) for r in resources][0] == "techdoc://postgresql/docs"
    # both modes speak 2025-11-25 or later, where argument errors are isError results (SEP-1303)
    assert invalid.is_error is True and "max_results" in invalid.content[0].text
