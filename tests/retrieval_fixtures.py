"""Builders for the engine tests: the handwritten corpus, its 10x replica, and a build helper.

Import the fixtures a module needs (`from tests.retrieval_fixtures import handwritten_index`);
each is module-scoped, so a test module builds an index once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval.embeddings import get_provider
from retrieval.errors import EmbeddingError
from retrieval.ingest.build import BuildRequest, build_index
from retrieval.search.index import Index

HANDWRITTEN = Path(__file__).resolve().parent / "corpora" / "handwritten"
SECRET = b"test-cursor-secret"
COPIES = 10


def build(source: Path, out: Path, build_id: str, provider: str | None = "hash") -> Index:
    build_index(BuildRequest(source, out, build_id, "handwritten",
                             provider=get_provider(provider) if provider else None, workers=1))
    return Index(out)


def replicate(source: Path, dest: Path, copies: int = COPIES) -> Path:
    """`copies` copies of `source` under v1..vN, every manifest tagging its files `version: vK`.

    Manifests do not merge across directories, so each copied manifest gets the version in
    its own metadata; taxonomy and auto-include stay in the new root manifest.
    """
    root_manifest = json.loads((source / ".docs-mcp.json").read_text())
    dest.mkdir(parents=True)
    (dest / ".docs-mcp.json").write_text(json.dumps({
        "version": "1", "strategy": {"chunk_by": "h2"},
        "taxonomy": {**root_manifest["taxonomy"], "version": {"description": "Docs version."}},
        "auto_include": root_manifest["auto_include"],
    }))
    for n in range(1, copies + 1):
        copy = dest / f"v{n}"
        shutil.copytree(source, copy)
        for manifest in copy.rglob(".docs-mcp.json"):
            data = json.loads(manifest.read_text())
            data.pop("taxonomy", None)
            data.pop("auto_include", None)
            data["metadata"] = {**data.get("metadata", {}), "version": f"v{n}"}
            manifest.write_text(json.dumps(data))
    return dest


@pytest.fixture(scope="module")
def handwritten_index(tmp_path_factory) -> Index:
    """The handwritten corpus with hash embeddings, so the vector leg runs."""
    return build(HANDWRITTEN, tmp_path_factory.mktemp("hw") / "build", "hw-1")


@pytest.fixture(scope="module")
def handwritten_fts_index(tmp_path_factory) -> Index:
    """The handwritten corpus without embeddings: full-text legs only."""
    return build(HANDWRITTEN, tmp_path_factory.mktemp("hw-fts") / "build", "hw-fts-1", provider=None)


@pytest.fixture(scope="module")
def replicated_index(tmp_path_factory) -> Index:
    base = tmp_path_factory.mktemp("hw-x10")
    return build(replicate(HANDWRITTEN, base / "docs"), base / "build", "hw-x10-1")


@pytest.fixture(scope="module")
def hash_embedder():
    return get_provider("hash")


class BrokenEmbedder:
    """Looks like the index's provider but fails to embed, like an API that is down."""

    def __init__(self):
        real = get_provider("hash")
        self.name, self.model, self.dimensions, self.spec = real.name, real.model, real.dimensions, real.spec

    def embed_query(self, text):
        raise EmbeddingError("embedding API unreachable")

    def embed_queries(self, texts):
        raise EmbeddingError("embedding API unreachable")


class CountingEmbedder:
    """The hash provider, recording which embedding calls a search made."""

    def __init__(self):
        self.inner = get_provider("hash")
        self.name, self.model, self.dimensions, self.spec = (
            self.inner.name, self.inner.model, self.inner.dimensions, self.inner.spec)
        self.calls: list[str] = []

    def embed_query(self, text):
        self.calls.append("embed_query")
        return self.inner.embed_query(text)

    def embed_queries(self, texts):
        self.calls.append("embed_queries")
        return self.inner.embed_queries(texts)
