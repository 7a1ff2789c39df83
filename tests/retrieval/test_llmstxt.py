"""llms.txt for every corpus over a live server: the llmstxt.org index, llms-full.txt, each page's
markdown, ETags from the active build, versions, /mcp/'s access rules, and refused traversal."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import httpx
import pytest
from django.core.management import call_command

from corpus.apikeys import create_api_key
from retrieval.format.metadata import read_metadata
from retrieval.llmstxt import page_description
from tests import fixtures_mcp
from tests.conftest import SAMPLE_DOCS

docs_server = fixtures_mcp.docs_server
LINK = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<url>[^)]+)\)(?:: (?P<description>.+))?$")


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def links(text: str) -> list[dict]:
    return [m.groupdict() for line in text.splitlines() if (m := LINK.match(line))]


def test_llms_txt_lists_every_page_by_top_folder_with_title_and_description(docs_server, http, sample_build_dir):
    response = http.get(f"{docs_server}/c/sample/llms.txt")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert text.startswith("# sample\n\n> Skyline Payments API documentation: guides and the Python, TypeScript "
                           "and Go SDKs\n\n")
    assert f"{docs_server}/c/sample/llms-full.txt" in text and f"{docs_server}/mcp/c/sample/" in text
    sections = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert sections == ["Guides", "Models", "Sdks"]
    files = read_metadata(sample_build_dir).files
    listed = links(text)
    assert sorted(link["url"] for link in listed) == sorted(f"{docs_server}/c/sample/{p}" for p in files)
    retries = next(link for link in listed if link["url"].endswith("/guides/retries.md"))
    assert retries["title"] == "Retries"
    assert retries["description"] == "Networks fail, load balancers restart and rate limits kick in."
    page = http.get(retries["url"])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/markdown")
    assert page.text == (SAMPLE_DOCS / "guides/retries.md").read_text()


def test_llms_full_txt_holds_every_page_in_the_index_order(docs_server, http, sample_build_dir):
    index = http.get(f"{docs_server}/c/sample/llms.txt").text
    full = http.get(f"{docs_server}/c/sample/llms-full.txt")
    assert full.status_code == 200
    sources = re.findall(r"^Source: (\S+)$", full.text, re.MULTILINE)
    assert sources == [link["url"] for link in links(index)]
    for path in ("guides/retries.md", "sdks/go/errors.md"):
        assert (SAMPLE_DOCS / path).read_text().rstrip() in full.text


def test_each_file_answers_304_to_its_etag(docs_server, http):
    for path in ("llms.txt", "llms-full.txt", "guides/retries.md"):
        first = http.get(f"{docs_server}/c/sample/{path}")
        etag = first.headers["etag"]
        assert etag.startswith('"') and first.headers["cache-control"] == "no-cache"
        again = http.get(f"{docs_server}/c/sample/{path}", headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
        stale = http.get(f"{docs_server}/c/sample/{path}", headers={"If-None-Match": '"an-older-build"'})
        assert stale.status_code == 200 and stale.content == first.content


def test_a_rebuild_changes_every_etag_and_the_served_text(docs_server, index_root, http, tmp_path):
    source = tmp_path / "widgets"
    source.mkdir()
    (source / "index.md").write_text("# Widgets\n\nWidgets are small.\n")
    (source / "api").mkdir()
    (source / "api" / "create.md").write_text("# Create\n\nCall create_widget.\n")
    build_widgets(source)
    urls = [f"{docs_server}/c/widgets/{p}" for p in ("llms.txt", "llms-full.txt", "api/create.md")]
    before = {url: http.get(url) for url in urls}
    assert before[urls[0]].text.startswith("# widgets\n") and "## Overview" in before[urls[0]].text
    (source / "api" / "create.md").write_text("# Create\n\nCall create_widget with a colour.\n")
    build_widgets(source)
    for url, old in before.items():
        new = http.get(url, headers={"If-None-Match": old.headers["etag"]})
        assert new.status_code == 200 and new.headers["etag"] != old.headers["etag"], url
        assert "create_widget with a colour" in new.text


def build_widgets(source) -> None:
    call_command("build_index", "--corpus", "widgets", "--source", str(source), "--embedding-provider", "none",
                 "--full", "--no-progress", stdout=io.StringIO())


def test_a_version_is_served_under_its_own_name(docs_server, http):
    pinned = http.get(f"{docs_server}/c/sample@3.2/llms.txt")
    assert pinned.status_code == 200 and pinned.text.startswith("# sample@3.2\n")
    assert all("/c/sample@3.2/" in link["url"] for link in links(pinned.text))
    assert http.get(f"{docs_server}/c/sample@3.2/guides/retries.md").text.startswith("# Retries")
    unknown = http.get(f"{docs_server}/c/sample@9.9/llms.txt")
    assert unknown.status_code == 404 and "3.2" in unknown.text


def test_unknown_corpora_and_pages_are_404_without_naming_any_corpus(docs_server, http):
    for path in ("c/secret-team/llms.txt", "c/secret-team/llms-full.txt", "c/secret-team/a.md"):
        response = http.get(f"{docs_server}/{path}")
        assert response.status_code == 404 and "sample" not in response.text
    assert http.get(f"{docs_server}/c/sample/guides/nope.md").status_code == 404
    assert http.get(f"{docs_server}/c/sample/guides/retries").status_code == 404  # pages end in .md


def test_traversal_out_of_the_corpus_is_refused(docs_server, http):
    for path in ("guides/%2e%2e/%2e%2e/%2e%2e/etc/passwd.md", "%2e%2e/settings.md", "guides/..%5cretries.md"):
        response = http.get(f"{docs_server}/c/sample/{path}")
        assert response.status_code in (400, 404), path
        assert "root:" not in response.text


def test_with_auth_required_a_read_key_is_needed_and_a_limited_key_sees_its_corpora_only(docs_server, http,
                                                                                       settings):
    settings.MCP_AUTH_REQUIRED = True
    _, reader = create_api_key("reader", ["read"])
    _, builder = create_api_key("builder", ["build"])
    _, elsewhere = create_api_key("other-team", ["read"], corpora=["other"])
    url = f"{docs_server}/c/sample/llms.txt"
    anonymous = http.get(url)
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")
    assert http.get(url, headers={"Authorization": "Bearer not-a-key"}).status_code == 401
    assert http.get(url, headers={"Authorization": f"Bearer {builder}"}).status_code == 403
    allowed = http.get(url, headers={"Authorization": f"Bearer {reader}"})
    assert allowed.status_code == 200 and allowed.headers["cache-control"] == "private, no-cache"
    hidden = http.get(f"{docs_server}/c/sample/guides/retries.md", headers={"Authorization": f"Bearer {elsewhere}"})
    assert hidden.status_code == 404 and "sample" not in hidden.text


def test_other_methods_and_origins_are_refused_and_allowed_origins_preflight(docs_server, http):
    assert http.post(f"{docs_server}/c/sample/llms.txt").status_code == 405
    foreign = http.get(f"{docs_server}/c/sample/llms.txt", headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    local = {"Origin": "http://localhost:3000"}
    preflight = http.options(f"{docs_server}/c/sample/llms.txt",
                             headers={**local, "Access-Control-Request-Headers": "authorization"})
    assert preflight.status_code == 204 and "GET" in preflight.headers["access-control-allow-methods"]
    allowed = http.get(f"{docs_server}/c/sample/llms.txt", headers=local)
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "http://localhost:3000"


@pytest.mark.parametrize(("markdown", "description"), [
    ("---\ntitle: A\ndescription: \"From the front matter.\"\n---\n# A\n\nBody.", "From the front matter."),
    ("# A\n\n```py\ncode\n```\n\nFirst *real* [paragraph](x.md)\ncontinues.\n\nSecond.", "First real paragraph continues."),
    ("# A\n\nThe first sentence. The second one.", "The first sentence."),
    ("Call `create_widget` with **bold_text**, _then_ stop.", "Call create_widget with bold_text, then stop."),
    ("# Only a heading\n\n## And another", ""),
])
def test_a_page_description_is_its_front_matter_or_first_paragraph(markdown, description):
    assert page_description(markdown) == description
