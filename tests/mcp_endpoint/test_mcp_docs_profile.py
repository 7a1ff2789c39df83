"""The docs profile (docs/contracts/docs-tools.md and build-pipeline.md: `search_docs`, `get_doc`) end to end: a live server, real HTTP,
and the official `mcp` client in each protocol era (2025-06-18 and 2025-11-25 with the initialize
handshake, 2026-07-28 without). Raw httpx only where the client cannot go: malformed JSON, 404 routes.

Every refusal is followed by a good call, so a bad request never leaves the server unable to answer.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import mcp.client.session
import pytest
from django.core.management import call_command
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_endpoint.profiles.shared import COVERAGE_DESCRIPTION
from tests import fixtures_mcp
from tests.conftest import SAMPLE_DOCS
from tests.fixtures_mcp import MODERN, post

SAMPLE_DESCRIPTION = "Skyline Payments API documentation: guides and the Python, TypeScript and Go SDKs"
ERAS = [
    pytest.param("legacy", "2025-06-18", id="2025-06-18"),
    pytest.param("legacy", "2025-11-25", id="2025-11-25"),
    pytest.param(MODERN, MODERN, id=MODERN),
]

docs_server = fixtures_mcp.docs_server  # bound here so the tests below can request it by name

# The docs tool contract, word for word, except the examples: the sample build's first section (the
# contract's own, 'RateLimitError' and 'guides/retries.md#backoff-strategy', would be shown for any corpus);
# the taxonomy properties are the sample build's.
SEARCH_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "query": {
            "type": "string",
            "description": "The search query (e.g., 'API keys').",
        },
        "limit": {
            "type": "integer",
            "description": "Maximum number of results to return. Default is 10.",
            "minimum": 1,
            "maximum": 50,
            "default": 10,
        },
        "cursor": {
            "type": "string",
            "description": "Opaque pagination token returned from a previous search. Omit for the first page. "
            "Returns an error if invalid or malformed.",
        },
        "language": {
            "type": "string",
            "description": "Filter results by SDK programming language.",
            "enum": ["go", "python", "typescript"],
        },
        "scope": {
            "type": "string",
            "description": "Filter by documentation scope: global guides or SDK-specific pages.",
            "enum": ["global-guide", "sdk-specific"],
        },
    },
    "required": ["query"],
}
GET_DOC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "chunk_id": {
            "type": "string",
            "description": "The exact ID of the chunk to retrieve, as returned by search_docs "
            "(e.g., 'guides/authentication.md#authentication/api-keys').",
        },
        "context": {
            "type": "integer",
            "description": "Number of adjacent chunks to include before and after the target chunk. Default is 0. "
            "Use this to read the surrounding file context.",
            "minimum": 0,
            "maximum": 5,
            "default": 0,
        },
    },
    "required": ["chunk_id"],
}
@pytest.mark.django_db
def test_the_schema_examples_come_from_the_served_corpus_never_the_samples(tmp_path, index_root):
    from corpus.serving import active_index
    from mcp_endpoint.profiles import docs as docs_profile
    from tests.cli_helpers import build_corpus

    folder = tmp_path / "argo" / "operator"
    folder.mkdir(parents=True)
    (folder / "sync.md").write_text("# Sync\n\nHow syncing works.\n\n## Sync waves\n\nResources apply in waves.\n")
    build_corpus("argo", folder.parent)
    tools = {t.name: t for t in docs_profile._make_tools(active_index("argo"), [])}
    query = tools["search_docs"].input_schema["properties"]["query"]["description"]
    chunk_id = tools["get_doc"].input_schema["properties"]["chunk_id"]["description"]
    assert query == "The search query (e.g., 'Sync waves')."
    assert chunk_id.endswith("as returned by search_docs (e.g., 'operator/sync.md#sync/sync-waves').")
    schemas = json.dumps([t.input_schema for t in tools.values()])
    assert "RateLimitError" not in schemas and "retries.md" not in schemas and "paginate" not in schemas

    unbuilt = {t.name: t for t in docs_profile._make_tools(None, [])}  # nothing to take an example from
    assert unbuilt["search_docs"].input_schema["properties"]["query"]["description"] == "The search query."
    assert unbuilt["get_doc"].input_schema["properties"]["chunk_id"]["description"] == (
        "The exact ID of the chunk to retrieve, as returned by search_docs.")



HIT_KEYS = {"chunk_id", "score", "title", "heading", "breadcrumb", "snippet", "filepath", "metadata",
            "version", "revision", "indexed_at"}
DOCUMENT_HEADER = re.compile(r"^Document: (?P<title>.+) \((?P<path>\S+)\)\n"
                             r"(?:Version: (?P<version>\S+) \| )?Revision: (?P<revision>\S+) \| "
                             r"Indexed at: (?P<indexed_at>\S+)\n\n")
DELIMITER = re.compile(
    r"^--- Chunk: (?P<id>\S+) \(Chunk (?P<n>\d+) of (?P<m>\d+)\) \((?P<label>Target|Context: [+-]\d+)\) ---$",
    re.MULTILINE,
)
RETRIES = [
    "guides/retries.md#_preamble",
    "guides/retries.md#retries/when-to-retry",
    "guides/retries.md#retries/backoff-strategy",
    "guides/retries.md#retries/jitter",
    "guides/retries.md#retries/retries-in-the-official-sdks",
    "guides/retries.md#retries/circuit-breaking",
]


# --- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture
def pin_handshake(monkeypatch):
    """The client offers its newest handshake version; pin it to reach 2025-06-18 too."""

    def pin(mode: str, version: str) -> None:
        if mode == "legacy":
            monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)

    return pin


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def run(coro):
    return asyncio.run(coro)


def payload(result) -> dict:
    """The SearchResult of a search_docs call; its text block and structuredContent must agree."""
    assert result.is_error is False, result.content
    # The docs tool contract's text block comes first; resource links to the hits' pages (2025-06-18 on) follow it.
    assert result.content[0].type == "text"
    assert all(block.type == "resource_link" for block in result.content[1:])
    parsed = json.loads(result.content[0].text)
    assert result.structured_content == parsed
    assert set(parsed) - {"notice"} == {"coverage", "hits", "next_cursor", "hint"}
    assert parsed["coverage"]["verdict"] in ("covered", "partial", "not_covered")
    assert 0 <= parsed["coverage"]["score"] <= 1
    for hit in parsed["hits"]:
        assert set(hit) == HIT_KEYS
    return parsed


def error_text(result) -> str:
    assert result.is_error is True
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


def rpc(method: str, params: dict | None = None, request_id: int | str = 1) -> dict:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def raw_call(http: httpx.Client, url: str, name: str, arguments: dict) -> dict:
    response = post(
        http, url, rpc("tools/call", {"name": name, "arguments": arguments}), version="2025-06-18"
    )
    assert response.status_code == 200, response.text
    return response.json()


def raw_tools(http: httpx.Client, url: str) -> dict:
    response = post(http, url, rpc("tools/list"), version="2025-11-25")
    assert response.status_code == 200, response.text
    return {t["name"]: t for t in response.json()["result"]["tools"]}


def without_header(text: str) -> str:
    """get_doc's text after the line naming the document."""
    header = DOCUMENT_HEADER.match(text)
    assert header, text[:200]
    return text[header.end():]


def delimiters(text: str) -> list[dict]:
    text = without_header(text)
    found = [m.groupdict() for m in DELIMITER.finditer(text)]
    assert text.startswith("--- Chunk: ")
    assert text.count("--- Chunk: ") == len(found)  # every delimiter follows the grammar
    return found


# --- tools/list ---------------------------------------------------------------------------------


async def _list(url: str, mode: str):
    async with Client(url, mode=mode) as client:
        return client.protocol_version, client.instructions, (await client.list_tools()).tools


@pytest.mark.parametrize(("mode", "version"), [*ERAS, pytest.param("auto", MODERN, id="auto")])
def test_tools_list_matches_seed_000(docs_server, pin_handshake, mode, version):
    pin_handshake(mode, version)
    negotiated, instructions, tools = run(_list(f"{docs_server}/mcp/", mode))
    assert negotiated == version
    if mode != MODERN:  # a pinned modern version skips server/discover, so no instructions arrive
        assert instructions.startswith(f"This server searches the {SAMPLE_DESCRIPTION}.")
        assert (
            "Filters: language (go, python, typescript); scope (global-guide, sdk-specific)." in instructions
        )
    assert [t.name for t in tools] == ["search_docs", "get_doc", "docs_feedback"]
    search, get_doc, _feedback = tools
    # The contract's description, then what the coverage verdict every reply leads with means.
    assert search.description == (
        f"Search the {SAMPLE_DESCRIPTION}. Use this to find relevant documentation, guides, or API references."
        + COVERAGE_DESCRIPTION
    )
    assert "`not_covered`" in search.description and "do not answer from them" in search.description
    assert search.input_schema == SEARCH_SCHEMA
    assert list(search.input_schema["properties"]) == ["query", "limit", "cursor", "language", "scope"]
    assert search.output_schema["required"] == ["coverage", "hits", "next_cursor", "hint"]
    assert get_doc.description == (
        "Retrieve the full content of a specific documentation chunk using its chunk_id. "
        "You can optionally request surrounding context within the same file."
    )
    assert get_doc.input_schema == GET_DOC_SCHEMA
    assert _feedback.annotations.read_only_hint is False and _feedback.annotations.destructive_hint is False
    assert _feedback.input_schema["required"] == ["verdict"]
    for tool in (search, get_doc):
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.open_world_hint is False
        assert tool.annotations.destructive_hint is False


# --- search_docs ----------------------------------------------------------------------------------


async def _filtered_searches(url: str, mode: str) -> dict:
    async with Client(url, mode=mode) as client:
        calls = {
            "python": {"query": "RateLimitError", "language": "python", "limit": 50},
            "python_sdk": {
                "query": "RateLimitError",
                "language": "python",
                "scope": "sdk-specific",
                "limit": 50,
            },
            "python_guides": {"query": "RateLimitError", "language": "python", "scope": "global-guide"},
            "unfiltered": {"query": "RateLimitError", "limit": 50},
            "default_limit": {"query": "payments"},
        }
        return {name: payload(await client.call_tool("search_docs", args)) for name, args in calls.items()}


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_search_filters_and_auto_include(docs_server, pin_handshake, mode, version):
    pin_handshake(mode, version)
    out = run(_filtered_searches(f"{docs_server}/mcp/", mode))

    python = out["python"]["hits"]
    assert python[0]["chunk_id"] == "sdks/python/errors.md#error-handling/ratelimiterror"
    assert python[0]["metadata"] == {"language": "python", "scope": "sdk-specific"}
    # language=python without scope also brings the global guides (the manifest's auto_include rule)
    assert {h["metadata"].get("language") for h in python} == {"python", None}
    assert any(h["metadata"] == {"scope": "global-guide"} for h in python)
    assert "guides/migrations/v2-to-v3.md" in {h["filepath"] for h in python}  # mentions RateLimitError
    for hit in python:
        assert hit["metadata"].get("language", "python") == "python"
        assert hit["metadata"].get("scope") in ("sdk-specific", "global-guide")

    # with scope explicit, auto-include does not apply
    python_sdk = out["python_sdk"]["hits"]
    assert python_sdk and all(
        h["metadata"] == {"language": "python", "scope": "sdk-specific"} for h in python_sdk
    )
    assert {h["chunk_id"] for h in python_sdk} < {h["chunk_id"] for h in python}

    # no chunk is both python and a global guide: zero hits and a hint that says what would match
    guides = out["python_guides"]
    assert guides["hits"] == [] and guides["next_cursor"] is None
    assert guides["hint"]["message"].startswith(
        "0 results found for language 'python' and scope 'global-guide'."
    )
    # global guides carry no language, so only the scope can change into a match
    assert guides["hint"]["suggested_filters"] == {"scope": ["sdk-specific"]}

    unfiltered = out["unfiltered"]["hits"]
    assert {h["metadata"].get("language") for h in unfiltered} >= {"python", "go", "typescript"}
    assert out["unfiltered"]["hint"] is None
    assert len(out["default_limit"]["hits"]) == 10
    scores = [h["score"] for h in unfiltered]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)


async def _pages(url: str, mode: str, arguments: dict, limit: int) -> tuple[list[str], int, list[str | None]]:
    ids, cursors, pages = [], [], 0
    async with Client(url, mode=mode) as client:
        cursor = None
        while True:
            args = {**arguments, "limit": limit, **({"cursor": cursor} if cursor else {})}
            page = payload(await client.call_tool("search_docs", args))
            assert len(page["hits"]) <= limit
            ids += [h["chunk_id"] for h in page["hits"]]
            pages += 1
            cursor = page["next_cursor"]
            cursors.append(cursor)
            if cursor is None:
                break
            assert len(page["hits"]) == limit  # only the last page may be short
            assert pages < 100
    return ids, pages, cursors


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_paging_with_cursors(docs_server, pin_handshake, mode, version):
    pin_handshake(mode, version)
    url = f"{docs_server}/mcp/"
    query = {"query": "how do I handle errors and retries", "language": "typescript"}
    small, pages, cursors = run(_pages(url, mode, query, 7))
    assert pages >= 3
    assert len(small) == len(set(small))  # no duplicates across pages
    assert cursors[-1] is None and all(cursors[:-1])
    big, big_pages, _ = run(_pages(url, mode, query, 50))
    assert small == big  # no gaps either: the same ranking, cut into other pages
    assert all(cid.startswith(("sdks/typescript/", "guides/", "models/")) for cid in small)


async def _continue_without_limit(url: str, mode: str) -> tuple[dict, dict, dict]:
    async with Client(url, mode=mode) as client:
        first = payload(await client.call_tool("search_docs", {"query": "webhook signature", "limit": 4}))
        second = payload(
            await client.call_tool(
                "search_docs", {"query": "webhook signature", "cursor": first["next_cursor"]}
            )
        )
        wider = payload(await client.call_tool("search_docs", {"query": "webhook signature", "limit": 14}))
        return first, second, wider


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_an_omitted_limit_is_10_on_every_page(docs_server, pin_handshake, mode, version):
    """The docs tool contract: limit defaults to 10, also when continuing a cursor issued for another page size;
    pages are cut by offset, so changing the size neither skips nor repeats hits."""
    pin_handshake(mode, version)
    first, second, wider = run(_continue_without_limit(f"{docs_server}/mcp/", mode))
    assert len(first["hits"]) == 4 and len(second["hits"]) == 10
    assert [h["chunk_id"] for h in first["hits"] + second["hits"]] == [h["chunk_id"] for h in wider["hits"]]


# --- get_doc ----------------------------------------------------------------------------------------


async def _get_docs(url: str, mode: str, calls: list[dict]) -> list:
    async with Client(url, mode=mode) as client:
        return [await client.call_tool("get_doc", args) for args in calls]


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_get_doc_context_follows_the_delimiter_grammar(docs_server, pin_handshake, mode, version):
    pin_handshake(mode, version)
    target = "guides/retries.md#retries/backoff-strategy"
    alone, window, first, last, default = run(
        _get_docs(
            f"{docs_server}/mcp/",
            mode,
            [
                {"chunk_id": target, "context": 0},
                {"chunk_id": target, "context": 2},
                {"chunk_id": RETRIES[0], "context": 2},
                {"chunk_id": RETRIES[-1], "context": 5},
                {"chunk_id": target},
            ],
        )
    )
    source = (SAMPLE_DOCS / "guides" / "retries.md").read_text()
    for result in (alone, window, first, last, default):
        assert result.is_error is False
        assert len(result.content) == 1 and result.content[0].type == "text"
        assert result.structured_content is None  # get_doc answers in markdown only

    text = alone.content[0].text
    assert delimiters(text) == [{"id": target, "n": "3", "m": "6", "label": "Target"}]
    assert text.startswith("Document: Retries (guides/retries.md)\nRevision: ")
    assert DOCUMENT_HEADER.match(text)["indexed_at"].endswith("+00:00")
    body = without_header(text).split("\n", 1)[1]
    assert body.startswith("## Backoff strategy") and body in source
    assert default.content[0].text == text

    blocks = delimiters(window.content[0].text)
    assert [(b["id"], b["n"], b["label"]) for b in blocks] == [
        (RETRIES[0], "1", "Context: -2"),
        (RETRIES[1], "2", "Context: -1"),
        (RETRIES[2], "3", "Target"),
        (RETRIES[3], "4", "Context: +1"),
        (RETRIES[4], "5", "Context: +2"),
    ]
    assert {b["m"] for b in blocks} == {"6"}
    # blocks are the delimiter, then the chunk's exact markdown, separated by one blank line
    parts = DELIMITER.split(window.content[0].text)
    assert [p.strip() in source for p in parts[5::5]] == [True] * 5
    assert without_header(text) in window.content[0].text

    assert [b["label"] for b in delimiters(first.content[0].text)] == ["Target", "Context: +1", "Context: +2"]
    assert [b["label"] for b in delimiters(last.content[0].text)] == [
        "Context: -5",
        "Context: -4",
        "Context: -3",
        "Context: -2",
        "Context: -1",
        "Target",
    ]


# --- failures: isError results, JSON-RPC errors -----------------------------------------------------


async def _tool_failures(url: str, mode: str) -> dict:
    async with Client(url, mode=mode) as client:
        first = payload(await client.call_tool("search_docs", {"query": "refund a payment", "limit": 2}))
        cursor = first["next_cursor"]
        body, sig = cursor.split(".")
        calls = {
            "unknown_chunk": ("get_doc", {"chunk_id": "guides/retries.md#does-not-exist"}),
            "unknown_file": ("get_doc", {"chunk_id": "nope.md", "context": 1}),
            "absolute": ("get_doc", {"chunk_id": "/etc/passwd"}),
            "dotdot": ("get_doc", {"chunk_id": "../secrets.md#x"}),
            "empty_fragment": ("get_doc", {"chunk_id": "guides/retries.md#"}),
            "spaces": ("get_doc", {"chunk_id": "guides/retries.md#backoff strategy"}),
            "empty": ("get_doc", {"chunk_id": ""}),
            "forged": ("search_docs", {"query": "refund a payment", "cursor": body + "." + sig[::-1]}),
            "edited": ("search_docs", {"query": "refund a payment", "cursor": body[:-2] + "x." + sig}),
            "garbage": ("search_docs", {"query": "refund a payment", "cursor": "garbage"}),
            "other_query": ("search_docs", {"query": "dispute a charge", "cursor": cursor}),
            "other_filter": (
                "search_docs",
                {"query": "refund a payment", "language": "go", "cursor": cursor},
            ),
            "blank_query": ("search_docs", {"query": "   "}),
        }
        out = {name: await client.call_tool(tool, args) for name, (tool, args) in calls.items()}
        out["after"] = payload(
            await client.call_tool("search_docs", {"query": "refund a payment", "limit": 2, "cursor": cursor})
        )
        return out


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_tool_failures_are_is_error_results_with_actionable_text(docs_server, pin_handshake, mode, version):
    pin_handshake(mode, version)
    out = run(_tool_failures(f"{docs_server}/mcp/", mode))
    assert error_text(out["unknown_chunk"]) == (
        "Chunk ID 'guides/retries.md#does-not-exist' not found. Use search_docs to discover valid chunk IDs."
    )
    assert error_text(out["unknown_file"]) == (
        "Chunk ID 'nope.md' not found. Use search_docs to discover valid chunk IDs."
    )
    for name in ("absolute", "dotdot", "empty_fragment", "spaces", "empty"):
        text = error_text(out[name])
        assert text.startswith("Invalid chunk ID '"), text
        assert "Expected '{filepath}' or '{filepath}#{heading-path}'" in text
    assert (
        error_text(out["forged"])
        == "Cursor is invalid or was tampered with; repeat the search without a cursor."
    )
    assert error_text(out["edited"]).startswith("Cursor is ")
    assert error_text(out["garbage"]).startswith("Cursor is malformed or truncated;")
    for name in ("other_query", "other_filter"):
        assert error_text(out[name]).startswith("Cursor belongs to a different query or filters;")
    assert "non-empty" in error_text(out["blank_query"])
    assert len(out["after"]["hits"]) == 2  # the genuine cursor still works after all that


async def _argument_errors(url: str, mode: str) -> dict:
    async with Client(url, mode=mode) as client:
        calls = {
            "enum": ("search_docs", {"query": "x", "language": "rust"}),
            "enum_case": ("search_docs", {"query": "x", "language": "Python"}),
            "limit_0": ("search_docs", {"query": "x", "limit": 0}),
            "limit_51": ("search_docs", {"query": "x", "limit": 51}),
            "limit_str": ("search_docs", {"query": "x", "limit": "10"}),
            "extra": ("search_docs", {"query": "x", "extra": 1}),
            "no_query": ("search_docs", {"limit": 3}),
            "query_type": ("search_docs", {"query": 5}),
            "context_6": ("get_doc", {"chunk_id": RETRIES[0], "context": 6}),
            "context_neg": ("get_doc", {"chunk_id": RETRIES[0], "context": -1}),
            "chunk_type": ("get_doc", {"chunk_id": ["a.md"]}),
            "unknown_tool": ("search_everything", {"query": "x"}),
        }
        out = {}
        for name, (tool, args) in calls.items():
            try:
                result = await client.call_tool(tool, args)
            except MCPError as exc:
                out[name] = ("protocol", exc.error.code, exc.error.message)
            else:
                out[name] = ("tool", result.is_error, error_text(result))
        out["after"] = payload(await client.call_tool("search_docs", {"query": "refunds", "language": "go"}))
        return out


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_invalid_arguments_are_tool_errors_from_2025_11_25(docs_server, pin_handshake, mode, version):
    """SEP-1303: from 2025-11-25 on, a model reads argument errors as isError results and retries;
    before, they are -32602. An unknown tool is a protocol error in every era."""
    pin_handshake(mode, version)
    out = run(_argument_errors(f"{docs_server}/mcp/", mode))
    expected = {
        "enum": 'Argument \'language\' must be one of "go", "python", "typescript"; got "rust".',
        "enum_case": 'Argument \'language\' must be one of "go", "python", "typescript"; got "Python".',
        "limit_0": "Argument 'limit' must be an integer from 1 to 50; got 0.",
        "limit_51": "Argument 'limit' must be an integer from 1 to 50; got 51.",
        "limit_str": "Argument 'limit' must be an integer; got \"10\".",
        "extra": "Unknown argument 'extra'. Allowed arguments: query, limit, cursor, language, scope.",
        "no_query": "Missing required argument 'query'.",
        "context_6": "Argument 'context' must be an integer from 0 to 5; got 6.",
        "unknown_tool": "Unknown tool 'search_everything'. Available tools: search_docs, get_doc, docs_feedback.",
    }
    for name, answer in out.items():
        if name == "after":  # the structured result of a valid search after the errors
            continue
        kind, code, message = answer
        if version == "2025-06-18" or name == "unknown_tool":
            assert (kind, code) == ("protocol", -32602), (name, message)
        else:
            assert (kind, code) == ("tool", True), (name, message)
        if name in expected:
            assert expected[name] in message, (name, message)
    assert out["after"]["hits"] and all(
        h["metadata"].get("language", "go") == "go" for h in out["after"]["hits"]
    )


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_docs"', -32700),
        (b"\xff not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["search_docs"]}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "params": {"name": "search_docs"}}', -32600),
    ],
)
def test_malformed_requests_and_the_server_keeps_serving(docs_server, http, raw, code):
    url = f"{docs_server}/mcp/"
    for version in ("2025-06-18", MODERN):
        headers = {"Mcp-Method": "tools/call", "Mcp-Name": "search_docs"} if version == MODERN else {}
        response = post(http, url, None, version=version, headers=headers, raw=raw)
        assert response.json()["error"]["code"] == code, response.text
        assert "Traceback" not in response.text
    result = raw_call(http, url, "search_docs", {"query": "idempotency key"})["result"]
    assert result["isError"] is False
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["structuredContent"]["hits"][0]["filepath"] == "guides/idempotency.md"


# --- corpora by name, rebuilds, switching builds ----------------------------------------------------


async def _named(url: str) -> tuple:
    async with Client(url, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        found = payload(await client.call_tool("search_docs", {"query": "RateLimitError", "language": "go"}))
        return client.instructions, tools, found


def test_named_corpus_route_and_unknown_corpus(docs_server, http):
    for path in ("/mcp/c/sample/", "/mcp/c/sample"):
        instructions, tools, found = run(_named(f"{docs_server}{path}"))
        assert SAMPLE_DESCRIPTION in instructions
        assert tools[0].input_schema == SEARCH_SCHEMA
        assert found["hits"][0]["chunk_id"] == "sdks/go/errors.md#error-handling/ratelimiterror"
    for path in ("/mcp/c/nope/", "/mcp/c/nope"):
        response = post(http, f"{docs_server}{path}", rpc("tools/list"), version="2025-11-25")
        assert response.status_code == 404, response.text
        assert "nope" in response.text and "Traceback" not in response.text
    assert raw_tools(http, f"{docs_server}/mcp/")["search_docs"]["inputSchema"] == SEARCH_SCHEMA


def test_a_corpus_without_a_build_answers_with_an_actionable_error(docs_server, http, tmp_path):
    from corpus.services import corpus_create

    corpus_create(name="empty", source_dir=str(write_widget_docs(tmp_path / "empty", ["go"])))
    url = f"{docs_server}/mcp/c/empty/"
    tools = raw_tools(http, url)
    assert set(tools["search_docs"]["inputSchema"]["properties"]) == {"query", "limit", "cursor"}
    for name, arguments in (
        ("search_docs", {"query": "widgets"}),
        ("get_doc", {"chunk_id": "go/widgets.md"}),
    ):
        result = raw_call(http, url, name, arguments)["result"]
        assert result["isError"] is True
        assert "has no active build yet" in result["content"][0]["text"]
        assert "build_index --corpus empty" in result["content"][0]["text"]
    assert (
        raw_call(http, f"{docs_server}/mcp/", "search_docs", {"query": "refunds"})["result"]["isError"]
        is False
    )


MANIFEST = {
    "version": "1",
    "description": "Widget SDK docs",
    "strategy": {"chunk_by": "h2"},
    "taxonomy": {"language": {}},
}


def write_widget_docs(root: Path, languages: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".docs-mcp.json").write_text(json.dumps(MANIFEST))
    for language in languages:
        folder = root / language
        folder.mkdir(exist_ok=True)
        (folder / ".docs-mcp.json").write_text(
            json.dumps({"version": "1", "metadata": {"language": language}})
        )
        (folder / "widgets.md").write_text(
            f"# Widgets in {language}\n\nThe {language} widget client creates and lists widgets.\n\n"
            f"## Create a widget\n\nCall `create_widget` from {language} to make a widget with a name and "
            "a colour.\n\n## List widgets\n\nCall `list_widgets` to page through every widget you own.\n\n"
            "## Delete a widget\n\nCall `delete_widget` with the widget ID; deletion cannot be undone.\n"
        )
    return root


def build(name: str, source: Path) -> None:
    """`manage.py build_index` as an operator runs it: build, then activate."""
    args = [
        "--corpus",
        name,
        "--source",
        str(source),
        "--embedding-provider",
        "hash",
        "--full",
        "--no-progress",
    ]
    call_command("build_index", *args, stdout=io.StringIO())


def test_rebuild_that_adds_a_language_shows_in_the_next_tools_list(docs_server, index_root, http, tmp_path):
    source = write_widget_docs(tmp_path / "widgets", ["go", "python"])
    build("widgets", source)
    url = f"{docs_server}/mcp/c/widgets/"
    before = raw_tools(http, url)["search_docs"]
    assert before["description"].startswith("Search the Widget SDK docs.")
    assert before["inputSchema"]["properties"]["language"] == {
        "type": "string",
        "description": "Filter results by language.",
        "enum": ["go", "python"],
    }
    assert "scope" not in before["inputSchema"]["properties"]
    first = raw_call(http, url, "search_docs", {"query": "create a widget", "limit": 1})["result"]
    stale_cursor = first["structuredContent"]["next_cursor"]
    refused = raw_call(http, url, "search_docs", {"query": "x", "language": "rust"})
    assert refused["error"]["code"] == -32602

    write_widget_docs(source, ["go", "python", "rust"])
    build("widgets", source)
    after = raw_tools(http, url)["search_docs"]
    assert after["inputSchema"]["properties"]["language"]["enum"] == ["go", "python", "rust"]
    rust = raw_call(http, url, "search_docs", {"query": "delete_widget", "language": "rust"})["result"]
    assert (
        rust["structuredContent"]["hits"][0]["chunk_id"] == "rust/widgets.md#widgets-in-rust/delete-a-widget"
    )
    stale = raw_call(http, url, "search_docs", {"query": "create a widget", "cursor": stale_cursor})["result"]
    assert stale["isError"] is True and stale["content"][0]["text"].startswith("Cursor belongs to an older")
    # the default corpus is untouched: /mcp/ of two corpora adds `corpus` and `version` (tests/mcp_endpoint/test_mcp_corpora.py)
    shared = raw_tools(http, f"{docs_server}/mcp/")["search_docs"]["inputSchema"]
    assert {k: v for k, v in shared["properties"].items() if k not in ("corpus", "version")} == SEARCH_SCHEMA["properties"]


def test_searches_never_fail_while_a_new_build_is_activated(docs_server, index_root, tmp_path):
    from corpus.execution import build_activate
    from corpus.models import Corpus

    source = write_widget_docs(tmp_path / "widgets", ["go", "python"])
    build("widgets", source)
    write_widget_docs(source, ["go", "python", "rust"])
    build("widgets", source)
    corpus = Corpus.objects.get(name="widgets")
    builds = list(corpus.builds.order_by("created_at"))
    assert len(builds) == 2
    url = f"{docs_server}/mcp/c/widgets/"
    stop = threading.Event()
    failures: list[str] = []
    done = {"search": 0, "get_doc": 0}
    seen_enums: set[tuple[str, ...]] = set()

    def hammer() -> None:
        with httpx.Client(timeout=30) as http:
            while not stop.is_set():
                try:
                    searched = raw_call(http, url, "search_docs", {"query": "list widgets", "language": "go"})
                    got = raw_call(
                        http,
                        url,
                        "get_doc",
                        {"chunk_id": "python/widgets.md#widgets-in-python/list-widgets", "context": 1},
                    )
                    listed = raw_tools(http, url)["search_docs"]["inputSchema"]["properties"]["language"][
                        "enum"
                    ]
                except Exception as exc:  # noqa: BLE001 - any failure is what this test looks for
                    failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                for name, answer in (("search", searched), ("get_doc", got)):
                    if "error" in answer or answer["result"]["isError"]:
                        failures.append(json.dumps(answer)[:500])
                    else:
                        done[name] += 1
                seen_enums.add(tuple(listed))

    def served_after(count: int, deadline: float) -> None:
        target = done["search"] + count
        while done["search"] < target and time.monotonic() < deadline and not failures:
            time.sleep(0.02)

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    try:
        for flip in range(20):  # flip between two builds, each switch under requests in flight
            build_activate(build=builds[flip % 2])
            served_after(3, deadline)
        write_widget_docs(source, ["go", "python", "rust", "zig"])
        build("widgets", source)  # a real build finishing and activating under load
        served_after(10, deadline)
        # servers notice a new active build within a second: keep serving until one answers from it
        while ("go", "python", "rust", "zig") not in seen_enums and time.monotonic() < deadline and not failures:
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert failures == []
    assert done["search"] >= 70 and done["get_doc"] >= 70
    assert {("go", "python"), ("go", "python", "rust"), ("go", "python", "rust", "zig")} <= seen_enums


def test_a_warm_search_on_the_default_corpus_makes_no_database_query(
    sample_corpus, client, settings, django_assert_num_queries, held_clock
):
    """The default corpus and its active build are cached like the active-build pointer (1 s), so
    a call costs the search and not an ORM join per request (it cost more than the search itself).
    The serving clock is held: on a loaded machine a call may take longer than the TTL."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    body = rpc("tools/call", {"name": "search_docs", "arguments": {"query": "refund a payment"}})
    headers = {
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18",
    }

    def call() -> dict:
        response = client.post("/mcp/", data=json.dumps(body), content_type="application/json", **headers)
        assert response.status_code == 200
        return response.json()["result"]

    assert call()["isError"] is False
    with django_assert_num_queries(0):
        assert call()["structuredContent"]["hits"]
