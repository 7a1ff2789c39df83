"""The citeloom profile (docs/contracts/citeloom-tools.md) end to end over HTTP at /mcp/citeloom/: every tool, every error code,
output shaping, timeouts and strict project isolation; plus the chunk store on its own."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from retrieval import storage
from tests import profile_fixtures
from tests.profile_fixtures import call, text_of, with_client

live_url = profile_fixtures.live_url

HASH_MODEL = "hash/feature-hash-v1"
DIMS = 64
TOPICS = [
    "Entities and value objects are distinct building blocks of the domain model.",
    "Use cases orchestrate the flow of data to and from the entities.",
    "The dependency rule says source code dependencies point only inward.",
    "Interface adapters convert data between use cases and external agencies.",
    "Frameworks and drivers are details kept at the outermost layer.",
]


def url_of(base: str) -> str:
    return f"{base}/mcp/citeloom/"


def embed(texts: list[str], dims: int = DIMS) -> np.ndarray:
    from retrieval.embeddings import get_provider

    return get_provider("hash", dimensions=dims).embed(texts)


def make_items(project: str, n: int, prefix: str = "chunk", *, model: str = HASH_MODEL, dims: int = DIMS,
               text_of_item=None) -> list[dict]:
    texts = [text_of_item(i) if text_of_item else f"{TOPICS[i % len(TOPICS)]} ({prefix} {i})" for i in range(n)]
    vectors = embed(texts, dims) if model == HASH_MODEL else np.random.default_rng(0).random((n, dims))
    return [
        {
            "id": f"{prefix}-{i:04d}",
            "text": text,
            "embedding": [round(float(v), 6) for v in vector],
            "metadata": {
                "project": project,
                "source": {"path": "docs/clean-arch.pdf", "title": "Clean Architecture"},
                "zotero": {"citekey": f"{prefix}Key{i % 3}", "tags": ["architecture"] if i % 2 == 0 else ["design"],
                           "doi": "10.1000/xyz123" if i % 3 == 0 else None},
                "doc": {"page_span": [i + 1, i + 2], "section": f"Section {i}", "section_path": ["Part I", f"Chapter {i % 4}"]},
                "embed_model": model,
                "version": "1",
                "fulltext": True,
            },
        }
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]


@pytest.fixture
def projects(transactional_db, any_index_root):
    from corpus.chunkstore import project_create

    return {
        "clean": project_create(project="citeloom/clean-arch", embed_model=HASH_MODEL, dimensions=DIMS),
        "ddd": project_create(project="citeloom/ddd", embed_model=HASH_MODEL, dimensions=DIMS, hybrid=False),
    }


@pytest.fixture
def http():
    with httpx.Client(timeout=120) as client:
        yield client


def tool(http, base: str, name: str, arguments: dict, **kwargs) -> dict:
    """The tools/call result, parsed: the payload of a success, the `error` object of a failure."""
    body = call(http, url_of(base), name, arguments, **kwargs)
    assert "result" in body, body
    result = body["result"]
    payload = json.loads(result["content"][0]["text"])
    assert result.get("structuredContent") == payload
    if result["isError"]:
        return payload
    return payload


def write_key(corpora: list[str] | None = None) -> dict[str, str]:
    """Headers carrying a key with the write scope: anonymous callers may not store chunks."""
    from corpus.apikeys import create_api_key

    return {"Authorization": f"Bearer {create_api_key('citeloom-writer', ['read', 'write'], corpora)[1]}"}


def store(http, base, project, items, **extra) -> dict:
    return tool(http, base, "store_chunks", {"project": project, "items": items, **extra}, headers=write_key())


# --- list_projects / inspect_collection ----------------------------------------------------------------


def test_list_projects_matches_the_seed(projects, live_url, http):
    assert tool(http, live_url, "list_projects", {}) == {"projects": [
        {"id": "citeloom/clean-arch", "collection": "proj-citeloom-clean-arch", "embed_model": HASH_MODEL,
         "hybrid_enabled": True},
        {"id": "citeloom/ddd", "collection": "proj-citeloom-ddd", "embed_model": HASH_MODEL, "hybrid_enabled": False},
    ]}


def test_list_projects_with_none_is_empty(transactional_db, live_url, http):
    assert tool(http, live_url, "list_projects", {}) == {"projects": []}


def test_markdown_corpora_are_not_projects(transactional_db, sample_corpus, live_url, http):
    assert tool(http, live_url, "list_projects", {}) == {"projects": []}
    error = tool(http, live_url, "find_chunks", {"project": "sample", "query": "retries"})["error"]
    assert error["code"] == "INVALID_PROJECT"


def test_store_then_inspect(projects, live_url, http):
    items = make_items("citeloom/clean-arch", 120)
    written = store(http, live_url, "citeloom/clean-arch", items)
    assert written == {"chunks_written": 120, "project": "citeloom/clean-arch", "embed_model": HASH_MODEL,
                       "warnings": []}
    info = tool(http, live_url, "inspect_collection", {"project": "citeloom/clean-arch", "sample": 9})
    assert info["project"] == "citeloom/clean-arch" and info["collection"] == "proj-citeloom-clean-arch"
    assert info["size"] == 120 and info["embed_model"] == HASH_MODEL and info["dimensions"] == DIMS
    assert info["payload_keys"] == ["doc", "embed_model", "fulltext", "project", "source", "version", "zotero"]
    assert "id" in info["indexes"]["keyword"] and info["indexes"]["fulltext"] == ["text"]
    assert len(info["sample"]) == 5  # capped
    sample = info["sample"][0]
    assert set(sample) >= {"id", "project", "source", "zotero", "doc"}
    assert sample["project"] == "citeloom/clean-arch"
    empty = tool(http, live_url, "inspect_collection", {"project": "citeloom/ddd"})
    assert (empty["size"], empty["sample"], empty["payload_keys"]) == (0, [], [])


def test_store_is_idempotent_by_chunk_id(projects, live_url, http):
    items = make_items("citeloom/clean-arch", 100)
    store(http, live_url, "citeloom/clean-arch", items)
    again = store(http, live_url, "citeloom/clean-arch", items)
    assert again["chunks_written"] == 100
    rewritten = "Rewritten: the dependency rule, again."
    changed = [dict(item, text=rewritten, embedding=embed([rewritten])[0].tolist()) if i == 0 else item
               for i, item in enumerate(items)]
    store(http, live_url, "citeloom/clean-arch", changed)
    assert tool(http, live_url, "inspect_collection", {"project": "citeloom/clean-arch"})["size"] == 100
    found = tool(http, live_url, "find_chunks", {"project": "citeloom/clean-arch", "query": "Rewritten dependency rule",
                                                 "filters": {"citekey": "chunkKey0"}, "include_full_text": True,
                                                 "top_k": 20})
    assert "Rewritten: the dependency rule, again." in [i["full_text"] for i in found["items"]]


def test_batch_size_is_enforced(projects, live_url, http):
    small = call(http, url_of(live_url), "store_chunks", {"project": "citeloom/clean-arch",
                                                          "items": make_items("citeloom/clean-arch", 42)},
                 headers=write_key())
    assert small["error"]["code"] == -32602
    assert "store_chunks takes 100-500 items per call; got 42" in small["error"]["message"]
    tail = store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 42), final_batch=True)
    assert tail["chunks_written"] == 42
    too_many = call(http, url_of(live_url), "store_chunks", {"project": "citeloom/clean-arch",
                                                             "items": make_items("citeloom/clean-arch", 501, dims=DIMS)},
                    headers=write_key())
    assert too_many["error"]["code"] == -32602
    assert "Argument 'items' must have at most 500 item(s); got 501." in too_many["error"]["message"]


def test_a_full_batch_of_minilm_sized_vectors_fits(transactional_db, index_root, live_url, http):
    """500 items x 384 dimensions (about 4 MB of JSON) is within the citeloom path's body limit; queries
    to a MiniLM project are embedded by the server itself."""
    from corpus.chunkstore import project_create

    project_create(project="citeloom/minilm")
    items = make_items("citeloom/minilm", 500, model="fastembed/all-MiniLM-L6-v2", dims=384)
    written = store(http, live_url, "citeloom/minilm", items)
    assert written["chunks_written"] == 500 and written["embed_model"] == "fastembed/all-MiniLM-L6-v2"
    found = tool(http, live_url, "find_chunks", {"project": "citeloom/minilm", "query": "dependency rule"})
    assert found["count"] == 6


# --- retrieval and output shaping ------------------------------------------------------------------------


def test_find_chunks_shapes_items_like_the_seed(projects, live_url, http):
    store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 100))
    found = tool(http, live_url, "find_chunks", {"project": "citeloom/clean-arch",
                                                 "query": "entities and value objects"})
    assert found["count"] == len(found["items"]) == 6  # top_k default
    top = found["items"][0]
    assert set(top) >= {"render_text", "score", "citekey", "section", "page_span", "section_path", "doi", "full_text"}
    assert top["render_text"].startswith("Entities and value objects are distinct")
    assert top["full_text"] is None
    assert top["citekey"].startswith("chunkKey") and top["section"].startswith("Section ")
    assert len(top["page_span"]) == 2 and top["section_path"][0] == "Part I"
    scores = [i["score"] for i in found["items"]]
    assert all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    assert all(i["doi"] in (None, "10.1000/xyz123") for i in found["items"])


def test_unknown_citation_fields_are_null(projects, live_url, http):
    items = [{"id": f"bare-{i}", "text": "A chunk without citation metadata.", "embedding": embed(["bare"])[0].tolist(),
              "metadata": {"embed_model": HASH_MODEL}} for i in range(100)]
    store(http, live_url, "citeloom/clean-arch", items)
    (item,) = tool(http, live_url, "find_chunks", {"project": "citeloom/clean-arch", "query": "bare", "top_k": 1})["items"]
    assert {k: item[k] for k in ("citekey", "page_span", "section", "section_path", "doi", "full_text")} == \
        dict.fromkeys(("citekey", "page_span", "section", "section_path", "doi", "full_text"))


def test_render_text_is_trimmed_and_full_text_only_on_request(projects, live_url, http):
    long_text = ("Clean Architecture emphasizes the separation of concerns across layers. " * 60).strip()
    items = make_items("citeloom/clean-arch", 100, text_of_item=lambda i: long_text if i == 0 else TOPICS[i % 5])
    store(http, live_url, "citeloom/clean-arch", items)
    query = {"project": "citeloom/clean-arch", "query": "separation of concerns across layers", "top_k": 1}
    (default,) = tool(http, live_url, "find_chunks", query)["items"]
    assert len(long_text) > 1800
    assert len(default["render_text"]) <= 1800 and default["render_text"].endswith("…")
    assert default["full_text"] is None
    (short,) = tool(http, live_url, "find_chunks", {**query, "max_chars_per_chunk": 40,
                                                    "include_full_text": True})["items"]
    assert len(short["render_text"]) <= 40 and short["full_text"] == long_text


def test_top_k_is_capped_at_20(projects, live_url, http):
    store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 100))
    found = tool(http, live_url, "find_chunks", {"project": "citeloom/clean-arch", "query": "layers", "top_k": 50})
    assert found["count"] == 20


def test_filters_restrict_results_and_are_never_sql(projects, live_url, http):
    store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 100))
    base = {"project": "citeloom/clean-arch", "query": "domain entities use cases", "top_k": 20}
    tagged = tool(http, live_url, "find_chunks", {**base, "filters": {"tags": ["design"]}})["items"]
    assert tagged
    assert all(int(i["section"].split()[-1]) % 2 == 1 for i in tagged)
    sneaky = tool(http, live_url, "find_chunks", {**base, "filters": {"citekey": "x') OR true --"}})
    assert sneaky == {"items": [], "count": 0}
    unknown = call(http, url_of(live_url), "find_chunks", {**base, "filters": {"color": "red"}})
    assert unknown["error"]["code"] == -32602 and "unknown filter 'color'" in unknown["error"]["message"]


def test_query_hybrid_fuses_text_and_vectors(projects, live_url, http):
    store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 100))
    found = tool(http, live_url, "query_hybrid", {"project": "citeloom/clean-arch", "query": "dependency rule inward"})
    assert found["hybrid_enabled"] is True and found["count"] == 6
    assert "dependency rule" in found["items"][0]["render_text"]
    assert all(0 <= i["score"] <= 1 for i in found["items"])
    tagged = tool(http, live_url, "query_hybrid", {"project": "citeloom/clean-arch", "query": "dependency rule",
                                                   "filters": {"tags": "architecture"}, "top_k": 20})
    assert all(int(i["section"].split()[-1]) % 2 == 0 for i in tagged["items"])


# --- query embeddings ----------------------------------------------------------------------------------


def test_a_model_the_server_cannot_run_needs_query_embedding(transactional_db, index_root, live_url, http):
    from corpus.chunkstore import project_create

    project_create(project="citeloom/openai", embed_model="openai/text-embedding-3-small", dimensions=8)
    items = make_items("citeloom/openai", 100, model="openai/text-embedding-3-small", dims=8)
    store(http, live_url, "citeloom/openai", items)
    error = tool(http, live_url, "find_chunks", {"project": "citeloom/openai", "query": "layers"})["error"]
    assert error["code"] == "EMBEDDING_MISMATCH" and "send query_embedding" in error["message"]
    assert error["details"]["expected_model"] == "openai/text-embedding-3-small"
    vector = items[3]["embedding"]
    found = tool(http, live_url, "find_chunks", {"project": "citeloom/openai", "query": "layers", "top_k": 1,
                                                 "query_embedding": vector})
    assert found["items"][0]["id"] == "chunk-0003" and found["items"][0]["score"] == pytest.approx(1, abs=1e-4)
    wrong = tool(http, live_url, "query_hybrid", {"project": "citeloom/openai", "query": "layers",
                                                  "query_embedding": [0.1] * 7})["error"]
    assert wrong["code"] == "EMBEDDING_MISMATCH" and wrong["details"]["received_dimensions"] == 7


# --- error taxonomy ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "arguments"), [
    ("store_chunks", {"items": [], "final_batch": True}),
    ("find_chunks", {"query": "x"}),
    ("query_hybrid", {"query": "x"}),
    ("inspect_collection", {}),
])
def test_invalid_project(projects, live_url, http, name, arguments):
    arguments = {**arguments, "project": "citeloom/unknown"}
    if name == "store_chunks":
        arguments["items"] = make_items("citeloom/unknown", 1)
    headers = write_key() if name == "store_chunks" else None
    assert tool(http, live_url, name, arguments, headers=headers) == {"error": {
        "code": "INVALID_PROJECT",
        "message": "Project 'citeloom/unknown' not found. Available projects: ['citeloom/clean-arch', 'citeloom/ddd']",
        "details": {"project_id": "citeloom/unknown", "available_projects": ["citeloom/clean-arch", "citeloom/ddd"]},
    }}


def test_embedding_mismatch_unless_migration(projects, live_url, http):
    store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 100))
    other = make_items("citeloom/clean-arch", 100, prefix="v2", model="fastembed/bge-small-en-v1.5", dims=16)
    error = store(http, live_url, "citeloom/clean-arch", other)["error"]
    assert error["code"] == "EMBEDDING_MISMATCH"
    assert error["details"] == {"project_id": "citeloom/clean-arch", "expected_model": HASH_MODEL,
                                "expected_dimensions": DIMS, "received_model": "fastembed/bge-small-en-v1.5",
                                "received_dimensions": 16}
    same_model_other_size = make_items("citeloom/clean-arch", 100, prefix="v3", dims=32)
    assert store(http, live_url, "citeloom/clean-arch", same_model_other_size)["error"]["code"] == "EMBEDDING_MISMATCH"
    migrated = store(http, live_url, "citeloom/clean-arch", other, allow_model_migration=True)
    assert migrated["chunks_written"] == 100 and migrated["embed_model"] == "fastembed/bge-small-en-v1.5"
    assert "100 chunk(s) of the old model were removed" in migrated["warnings"][0]
    info = tool(http, live_url, "inspect_collection", {"project": "citeloom/clean-arch", "sample": 1})
    assert (info["size"], info["embed_model"], info["dimensions"]) == (100, "fastembed/bge-small-en-v1.5", 16)
    assert info["sample"][0]["id"].startswith("v2-")


def test_mixed_models_in_one_batch_are_a_mismatch(projects, live_url, http):
    items = make_items("citeloom/clean-arch", 100)
    items[5]["metadata"]["embed_model"] = "other/model"
    assert store(http, live_url, "citeloom/clean-arch", items)["error"]["code"] == "EMBEDDING_MISMATCH"


def test_hybrid_not_supported(projects, live_url, http):
    assert tool(http, live_url, "query_hybrid", {"project": "citeloom/ddd", "query": "aggregates"}) == {"error": {
        "code": "HYBRID_NOT_SUPPORTED",
        "message": "Hybrid search is not enabled for project 'citeloom/ddd'; use find_chunks",
        "details": {"project_id": "citeloom/ddd", "hybrid_enabled": False},
    }}


def test_index_unavailable(projects, live_url, http, any_index_root):
    store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 100))
    versions = storage.join(any_index_root, "proj-citeloom-clean-arch", "store", "chunks.lance", "_versions")
    for name in storage.list_children(versions):
        storage.write_bytes(storage.join(versions, name), b"not a manifest")
    for name, arguments in (("inspect_collection", {}), ("find_chunks", {"query": "layers"})):
        error = tool(http, live_url, name, {"project": "citeloom/clean-arch", **arguments})["error"]
        assert error["code"] == "INDEX_UNAVAILABLE", error
        assert error["details"] == {"project_id": "citeloom/clean-arch"}


def test_timeouts_are_the_seeds_and_return_timeout(projects, live_url, http, settings, monkeypatch):
    assert settings.CITELOOM_TIMEOUTS == {"store_chunks": 15, "find_chunks": 8, "query_hybrid": 15,
                                          "inspect_collection": 5, "list_projects": 2}
    from retrieval.chunkstore.store import ChunkStore

    store(http, live_url, "citeloom/clean-arch", make_items("citeloom/clean-arch", 100))
    settings.CITELOOM_TIMEOUTS = {**settings.CITELOOM_TIMEOUTS, "find_chunks": 0.2, "list_projects": 0.2}
    original = ChunkStore.vector_search
    monkeypatch.setattr(ChunkStore, "vector_search", lambda self, *a, **k: (time.sleep(1.5), original(self, *a, **k))[1])
    started = time.monotonic()
    error = tool(http, live_url, "find_chunks", {"project": "citeloom/clean-arch", "query": "layers"})["error"]
    assert time.monotonic() - started < 1.4
    assert error == {"code": "TIMEOUT", "message": "find_chunks exceeded its 0.2 s time limit",
                     "details": {"tool": "find_chunks", "timeout_seconds": 0.2, "project_id": "citeloom/clean-arch"}}
    import corpus.chunkstore

    monkeypatch.setattr(corpus.chunkstore, "project_list", lambda: time.sleep(1.5) or [])
    monkeypatch.setattr("mcp_endpoint.profiles.citeloom.project_list", corpus.chunkstore.project_list)
    error = tool(http, live_url, "list_projects", {})["error"]
    assert error["code"] == "TIMEOUT" and error["details"] == {"tool": "list_projects", "timeout_seconds": 0.2}


def test_an_unexpected_failure_keeps_the_error_shape(projects, live_url, http, monkeypatch):
    from retrieval.chunkstore.store import ChunkStore

    def boom(self, sample=0):
        raise RuntimeError("secret detail /etc/passwd")

    monkeypatch.setattr(ChunkStore, "inspect", boom)
    error = tool(http, live_url, "inspect_collection", {"project": "citeloom/ddd"})["error"]
    assert error == {"code": "INTERNAL_ERROR",
                     "message": "inspect_collection failed with an internal error; the server log has details",
                     "details": {"tool": "inspect_collection", "project_id": "citeloom/ddd"}}


def test_store_chunks_needs_the_write_scope(projects, live_url, http, settings):
    from corpus.apikeys import create_api_key

    settings.MCP_AUTH_REQUIRED = True
    _, reader = create_api_key("reader", ["read"])
    _, writer = create_api_key("writer", ["read", "write"])
    items = make_items("citeloom/clean-arch", 100)
    refused = call(http, url_of(live_url), "store_chunks", {"project": "citeloom/clean-arch", "items": items},
                   headers={"Authorization": f"Bearer {reader}"})["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "Tool 'store_chunks' needs an API key with the 'write' scope."
    written = tool(http, live_url, "store_chunks", {"project": "citeloom/clean-arch", "items": items},
                   headers={"Authorization": f"Bearer {writer}"})
    assert written["chunks_written"] == 100
    found = tool(http, live_url, "find_chunks", {"project": "citeloom/clean-arch", "query": "layers"},
                 headers={"Authorization": f"Bearer {reader}"})
    assert found["count"] == 6

    async def official(client):
        return await client.call_tool("store_chunks", {"project": "citeloom/clean-arch", "items": items})

    through_client = with_client(url_of(live_url), official, headers={"Authorization": f"Bearer {reader}"})
    assert through_client.is_error is True and "'write' scope" in text_of(through_client)
    anonymous = profile_fixtures.rpc(http, url_of(live_url), "tools/list")
    assert anonymous.status_code == 401 and "`Authorization: Bearer <key>`" in anonymous.json()["error"]["message"]


def test_a_garbage_key_cannot_store_even_when_auth_is_optional(projects, live_url, http):
    items = make_items("citeloom/clean-arch", 100)
    for header in ("Bearer garbage", "Bearer", "garbage"):
        response = profile_fixtures.rpc(http, url_of(live_url), "tools/call",
                                        {"name": "store_chunks", "arguments": {"project": "citeloom/clean-arch",
                                                                               "items": items}},
                                        headers={"Authorization": header})
        assert response.status_code == 401 and response.json()["error"]["message"].startswith("Unauthorized: ")
    anonymous = call(http, url_of(live_url), "store_chunks", {"project": "citeloom/clean-arch", "items": items})
    assert anonymous["result"]["isError"] is True and "'write' scope" in anonymous["result"]["content"][0]["text"]
    assert tool(http, live_url, "inspect_collection", {"project": "citeloom/clean-arch"})["size"] == 0


def test_a_key_limited_to_a_project_sees_and_writes_only_that_project(projects, live_url, http):
    store(http, live_url, "citeloom/ddd", make_items("citeloom/ddd", 100))
    limited = write_key([projects["clean"].name])
    listed = tool(http, live_url, "list_projects", {}, headers=limited)
    assert [p["id"] for p in listed["projects"]] == ["citeloom/clean-arch"]
    for name, arguments in (("find_chunks", {"query": "aggregates"}), ("inspect_collection", {}),
                            ("store_chunks", {"items": make_items("citeloom/ddd", 100, prefix="intruder")})):
        error = tool(http, live_url, name, {**arguments, "project": "citeloom/ddd"}, headers=limited)["error"]
        assert error["code"] == "INVALID_PROJECT"
        assert error["details"]["available_projects"] == ["citeloom/clean-arch"]
    assert tool(http, live_url, "inspect_collection", {"project": "citeloom/ddd"})["size"] == 100
    written = tool(http, live_url, "store_chunks", {"project": "citeloom/clean-arch",
                                                    "items": make_items("citeloom/clean-arch", 100)}, headers=limited)
    assert written["chunks_written"] == 100


# --- isolation ------------------------------------------------------------------------------------------------


def test_projects_are_isolated(projects, live_url, http):
    clean = make_items("citeloom/clean-arch", 100, prefix="shared")
    ddd = make_items("citeloom/ddd", 100, prefix="shared",
                     text_of_item=lambda i: f"Aggregates guard the invariants of bounded contexts ({i}).")
    store(http, live_url, "citeloom/clean-arch", clean)
    store(http, live_url, "citeloom/ddd", ddd)  # the same chunk IDs, in another project
    clean_texts = {i["text"] for i in clean}
    ddd_texts = {i["text"] for i in ddd}
    for query in ("entities value objects", "aggregates bounded contexts", "dependency rule"):
        in_ddd = tool(http, live_url, "find_chunks", {"project": "citeloom/ddd", "query": query, "top_k": 20,
                                                      "include_full_text": True})
        assert in_ddd["count"] == 20 and {i["full_text"] for i in in_ddd["items"]} <= ddd_texts
        in_clean = tool(http, live_url, "query_hybrid", {"project": "citeloom/clean-arch", "query": query,
                                                         "top_k": 20, "include_full_text": True})
        assert {i["full_text"] for i in in_clean["items"]} <= clean_texts
    for project in ("citeloom/ddd", "citeloom/clean-arch"):
        info = tool(http, live_url, "inspect_collection", {"project": project, "sample": 5})
        assert info["size"] == 100 and all(s["project"] == project for s in info["sample"])
    # An item claiming another project is stored in the one it was sent to.
    stray = make_items("citeloom/ddd", 100, prefix="stray")
    written = store(http, live_url, "citeloom/clean-arch", stray)
    assert "metadata.project 'citeloom/ddd' is not 'citeloom/clean-arch'" in written["warnings"][0]
    assert tool(http, live_url, "inspect_collection", {"project": "citeloom/ddd"})["size"] == 100


# --- the official client --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_official_client(projects, live_url, mode):
    items = make_items("citeloom/clean-arch", 100)

    async def work(client):
        tools = (await client.list_tools()).tools
        stored = await client.call_tool("store_chunks", {"project": "citeloom/clean-arch", "items": items})
        found = await client.call_tool("find_chunks", {"project": "citeloom/clean-arch", "query": "use cases"})
        fused = await client.call_tool("query_hybrid", {"project": "citeloom/clean-arch", "query": "use cases"})
        info = await client.call_tool("inspect_collection", {"project": "citeloom/clean-arch", "sample": 2})
        listed = await client.call_tool("list_projects", {})
        refused = await client.call_tool("query_hybrid", {"project": "citeloom/ddd", "query": "x"})
        return tools, stored, found, fused, info, listed, refused

    tools, stored, found, fused, info, listed, refused = with_client(url_of(live_url), work, mode=mode,
                                                                     headers=write_key())
    assert [t.name for t in tools] == ["store_chunks", "find_chunks", "query_hybrid", "inspect_collection",
                                       "list_projects"]
    assert tools[0].annotations.read_only_hint is False
    assert stored.structured_content["chunks_written"] == 100
    assert found.structured_content["count"] == 6
    assert fused.structured_content["hybrid_enabled"] is True
    assert len(info.structured_content["sample"]) == 2
    assert len(listed.structured_content["projects"]) == 2
    assert refused.is_error is True
    assert json.loads(text_of(refused))["error"]["code"] == "HYBRID_NOT_SUPPORTED"
    assert refused.structured_content["error"]["code"] == "HYBRID_NOT_SUPPORTED"


# --- the store on its own --------------------------------------------------------------------------------------


def _chunks(n: int, model: str = HASH_MODEL):
    from retrieval.chunkstore.store import StoredChunk

    vectors = embed([TOPICS[i % 5] for i in range(n)])
    return [StoredChunk(f"c{i}", TOPICS[i % 5], vectors[i], model, {"zotero": {"citekey": f"k{i}"}}) for i in range(n)]


@pytest.mark.slow
def test_every_store_object_sees_every_write(tmp_path):
    """Another worker (another ChunkStore on the same directory) sees a write at once, and so does a fresh process."""
    from retrieval.chunkstore.store import ChunkStore

    path = tmp_path / "store"
    reader, writer = ChunkStore(path), ChunkStore(path)
    assert reader.count() == 0
    writer.upsert(_chunks(10), dimensions=DIMS)
    assert reader.count() == 10
    writer.upsert(_chunks(15), dimensions=DIMS)
    assert reader.count() == 15
    code = f"from retrieval.chunkstore.store import ChunkStore; print(ChunkStore({str(path)!r}).count())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "15"


def test_plan_where_quotes_values():
    from retrieval.chunkstore.store import plan_where
    from retrieval.errors import InvalidArgument

    assert plan_where({"tags": ["a", "b'c"], "zotero.citekey": "k"}) == \
        "array_has_any(`tags`, ['a', 'b''c']) AND `citekey` IN ('k')"
    assert plan_where(None) is None
    with pytest.raises(InvalidArgument):
        plan_where({"tags": 3})


def test_trim():
    from mcp_endpoint.profiles.citeloom import trim

    assert trim("short", 10) == "short"
    assert trim("one two three four five", 12) == "one two…"
    assert len(trim("x" * 50, 10)) == 10
