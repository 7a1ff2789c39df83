"""Documents as MCP resources on the docs profile, through the official MCP client against a live
server: every page listed (paged) and read whole as markdown with its title and build, the
`docs://{corpus}/{path}` template, and search hits followed by resource links a client can open."""

from __future__ import annotations

import asyncio
import json

import httpx
import mcp.client.session
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from retrieval.format.metadata import read_metadata
from tests import fixtures_mcp
from tests.conftest import SAMPLE_DOCS
from tests.fixtures_mcp import MODERN, modern_post, post

docs_server = fixtures_mcp.docs_server
ERAS = [
    pytest.param("legacy", "2025-06-18", id="2025-06-18"),
    pytest.param("legacy", "2025-11-25", id="2025-11-25"),
    pytest.param(MODERN, MODERN, id=MODERN),
]
META_KEY = "docsmcp/document"


@pytest.fixture
def pin_handshake(monkeypatch):
    def pin(mode: str, version: str) -> None:
        if mode == "legacy":
            monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)

    return pin


def run(coro):
    return asyncio.run(coro)


async def _all_resources(url: str, mode: str) -> tuple[list, int]:
    async with Client(url, mode=mode) as client:
        listed, pages, cursor = [], 0, None
        while True:
            page = await client.list_resources(cursor=cursor)
            listed += page.resources
            pages += 1
            cursor = page.next_cursor
            if not cursor:
                return listed, pages


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_every_page_of_the_corpus_is_a_resource_listed_page_by_page(docs_server, sample_build_dir, settings,
                                                                   pin_handshake, mode, version):
    pin_handshake(mode, version)
    settings.MCP_LIST_PAGE_SIZE = 10
    listed, pages = run(_all_resources(f"{docs_server}/mcp/", mode))
    files = read_metadata(sample_build_dir).files
    assert pages == -(-len(files) // 10) > 1
    assert [r.uri for r in listed] == [f"docs://sample/{path}" for path in sorted(files)]
    retries = next(r for r in listed if r.name == "guides/retries.md")
    assert retries.title == "Retries" and retries.mime_type == "text/markdown"
    freshness = retries.meta[META_KEY]
    assert freshness["indexed_at"] and freshness["title"] == "Retries"
    assert {"version", "revision"} <= set(freshness)


async def _read(url: str, mode: str, uri: str):
    async with Client(url, mode=mode) as client:
        return await client.read_resource(uri)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_a_document_resource_reads_as_the_whole_page_with_title_and_freshness(docs_server, pin_handshake,
                                                                             mode, version):
    pin_handshake(mode, version)
    read = run(_read(f"{docs_server}/mcp/c/sample/", mode, "docs://sample/guides/retries.md"))
    (contents,) = read.contents
    assert contents.text == (SAMPLE_DOCS / "guides/retries.md").read_text()
    assert contents.mime_type == "text/markdown"
    document = contents.meta[META_KEY]
    assert document["title"] == "Retries" and document["path"] == "guides/retries.md"
    assert document["indexed_at"] and {"version", "revision"} <= set(document)


def test_a_version_pinned_endpoint_names_its_version_in_every_uri(docs_server):
    listed, _pages = run(_all_resources(f"{docs_server}/mcp/c/sample@3.2/", MODERN))
    assert listed and all(r.uri.startswith("docs://sample/") and r.uri.endswith("?version=3.2") for r in listed)
    read = run(_read(f"{docs_server}/mcp/", MODERN, "docs://sample/guides/retries.md?version=3.2"))
    assert read.contents[0].text.startswith("# Retries")


async def _templates(url: str):
    async with Client(url, mode=MODERN) as client:
        return (await client.list_resource_templates()).resource_templates


def test_the_document_template_names_corpus_and_path(docs_server):
    (template,) = run(_templates(f"{docs_server}/mcp/"))
    assert template.uri_template == "docs://{corpus}/{path}"
    assert template.mime_type == "text/markdown" and "filepath" in template.description


async def _misses(url: str) -> dict[str, MCPError]:
    out = {}
    async with Client(url, mode=MODERN) as client:
        for uri in ("docs://sample/guides/nope.md", "docs://sample/../../etc/passwd", "docs://secret-team/a.md",
                    "docs://sample/guides/retries.md?version=9.9", "file:///etc/passwd"):
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                out[uri] = exc
    return out


def test_unknown_documents_corpora_and_paths_are_not_found_without_naming_other_corpora(docs_server):
    misses = run(_misses(f"{docs_server}/mcp/"))
    assert len(misses) == 5
    assert all(exc.error.code == -32602 for exc in misses.values())
    assert "Document 'guides/nope.md' not found" in misses["docs://sample/guides/nope.md"].error.message
    assert "'..'" in misses["docs://sample/../../etc/passwd"].error.message
    hidden = misses["docs://secret-team/a.md"].error.message
    assert "No corpus of that name" in hidden and "sample" not in hidden
    assert "3.2" in misses["docs://sample/guides/retries.md?version=9.9"].error.message


async def _search(url: str, mode: str, arguments: dict):
    async with Client(url, mode=mode) as client:
        result = await client.call_tool("search_docs", arguments)
        first_link = next((b for b in result.content if b.type == "resource_link"), None)
        page = await client.read_resource(str(first_link.uri)) if first_link else None
        return result, page


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_search_hits_are_followed_by_links_to_their_pages(docs_server, pin_handshake, mode, version):
    pin_handshake(mode, version)
    result, page = run(_search(f"{docs_server}/mcp/", mode, {"query": "retry with exponential backoff"}))
    text, *links = result.content
    assert text.type == "text"
    hits = json.loads(text.text)["hits"]
    assert result.structured_content == json.loads(text.text)
    files = list(dict.fromkeys(h["filepath"] for h in hits))
    assert [link.type for link in links] == ["resource_link"] * len(files)
    assert [str(link.uri) for link in links] == [f"docs://sample/{f}" for f in files]
    assert [link.name for link in links] == files
    assert links[0].title == hits[0]["title"] and links[0].mime_type == "text/markdown"
    assert page.contents[0].text == (SAMPLE_DOCS / files[0]).read_text()


def test_clients_of_2025_03_26_get_the_text_block_alone(docs_server, pin_handshake):
    pin_handshake("legacy", "2025-03-26")
    result, _page = run(_search(f"{docs_server}/mcp/", "legacy", {"query": "retry with exponential backoff"}))
    assert [block.type for block in result.content] == ["text"]


def test_a_search_of_one_version_links_to_that_version(docs_server):
    with httpx.Client(timeout=30) as http:
        reply = post(http, f"{docs_server}/mcp/c/sample@3.2/",
                     {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "search_docs", "arguments": {"query": "idempotency keys"}}},
                     version="2025-11-25").json()
    links = [b for b in reply["result"]["content"] if b["type"] == "resource_link"]
    assert links and all(link["uri"].endswith("?version=3.2") for link in links)


def test_list_and_read_results_carry_cache_hints_on_2026_07_28(docs_server, settings):
    settings.MCP_CACHE_TTL_MS = 60000
    with httpx.Client(timeout=30) as http:
        listed = modern_post(http, f"{docs_server}/mcp/", "resources/list").json()["result"]
        read = modern_post(http, f"{docs_server}/mcp/", "resources/read",
                           {"uri": "docs://sample/guides/retries.md"}).json()["result"]
    for result in (listed, read):
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 60000 and result["cacheScope"] == "public"
    assert read["contents"][0]["_meta"][META_KEY]["indexed_at"]


def test_a_key_limited_to_other_corpora_cannot_read_this_one(docs_server, settings):
    from corpus.apikeys import create_api_key
    from corpus.models import Corpus

    settings.MCP_AUTH_REQUIRED = True
    Corpus.objects.create(name="other", source_dir=str(SAMPLE_DOCS))
    _, key = create_api_key("other-team", ["read"], corpora=["other"])
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {key}"}) as http:
        reply = post(http, f"{docs_server}/mcp/c/other/",
                     {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                      "params": {"uri": "docs://sample/guides/retries.md"}}, version="2025-11-25").json()
    assert reply["error"]["code"] == -32602 and reply["error"]["data"] == {"uri": "docs://sample/guides/retries.md"}
    assert "No corpus of that name" in reply["error"]["message"] and "other" not in reply["error"]["message"]
