"""A damaged index (files overwritten or cut short under a running server) is reported as such, with
how to mend it, on every surface, never as a generic internal error."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from retrieval.errors import IndexCorrupt
from retrieval.search.documents import get_chunk
from retrieval.search.engine import SearchRequest, search
from retrieval.search.index import Index
from tests.api_helpers import assert_error
from tests.profile_fixtures import call, live_url, register_build  # noqa: F401

CHUNK = "guides/retries.md#retries/when-to-retry"


def damage(build: Path) -> None:
    """Overwrite every data file of both tables, and the mapped files a server reads first, with noise of
    the same size, as a bad disk or copy would."""
    damaged = [path for path in (build / "lancedb").rglob("*.lance") if path.is_file() and path.parent.name == "data"]
    for path in [*damaged, *(build / "mapped").iterdir()]:
        path.write_bytes(os.urandom(path.stat().st_size))


@pytest.fixture
def damaged_copy(sample_build_dir, tmp_path) -> Path:
    copy = tmp_path / "damaged-build"
    shutil.copytree(sample_build_dir, copy)
    damage(copy)
    return copy


def test_reading_a_damaged_index_raises_index_corrupt_naming_the_rebuild(damaged_copy):
    index = Index(damaged_copy)
    with pytest.raises(IndexCorrupt) as raised:
        get_chunk(index, CHUNK)
    assert raised.value.corpus == "sample"
    assert "damaged" in str(raised.value) and "manage.py build_index --corpus sample" in str(raised.value)
    with pytest.raises(IndexCorrupt):
        search(Index(damaged_copy), SearchRequest(query="retry"), cursor_secret=b"secret")


@pytest.mark.django_db(transaction=True)
def test_get_doc_and_search_on_a_damaged_index_say_to_rebuild(damaged_copy, live_url, settings):  # noqa: F811
    register_build("sample", damaged_copy)
    settings.DOCSMCP_DEFAULT_CORPUS = "sample"
    with httpx.Client(timeout=60) as http:
        for name, arguments in (("get_doc", {"chunk_id": CHUNK}), ("search_docs", {"query": "retry"})):
            result = call(http, f"{live_url}/mcp/", name, arguments)["result"]
            text = result["content"][0]["text"]
            assert result["isError"], text
            assert "damaged" in text and "manage.py build_index --corpus sample" in text, text
            assert "internal error" not in text
        rest = http.get(f"{live_url}/api/v1/corpora/sample/chunks/{CHUNK.replace('#', '%23')}")
        error = assert_error(_Response(rest), 503, "index_corrupt", "build_index --corpus sample")
        assert error["details"] == {}


class _Response:
    """An httpx response as assert_error reads a Django one."""

    def __init__(self, response: httpx.Response):
        self._response = response
        self.status_code = response.status_code
        self.content = response.content

    def __getitem__(self, header: str) -> str:
        return self._response.headers[header]

    def json(self):
        return self._response.json()
