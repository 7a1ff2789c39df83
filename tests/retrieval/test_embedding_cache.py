"""The persistent embedding cache: what survives, what is re-embedded, and what must never mix."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval import storage
from retrieval.embeddings import EmbeddingSpec, get_provider
from retrieval.embeddings import cache as cache_module
from retrieval.embeddings.cache import EmbeddingCache, cache_key, embed_with_cache
from retrieval.embeddings.feature_hash import HashEmbeddingProvider
from retrieval.errors import EmbeddingError, EmbeddingMismatch

SPEC = EmbeddingSpec("hash", "feature-hash-v1", 16)


class CountingHashProvider(HashEmbeddingProvider):
    """Counts texts that reach the backend, which is what a cache exists to avoid."""

    def __init__(self, dimensions: int = 16):
        super().__init__(dimensions=dimensions)
        self.embedded: list[str] = []

    def embed_batch(self, texts):
        self.embedded.extend(texts)
        return super().embed_batch(texts)


def unit_rows(n: int, dimensions: int = 16, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dimensions)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture(params=["local", "s3"])
def cache_root(request, tmp_path):
    """The cache on a local directory, then under an object-store root."""
    if request.param == "local":
        return tmp_path
    return storage.join(request.getfixturevalue("s3_index_root"), "embedding-cache")


def test_put_get_roundtrip_across_instances(cache_root):
    keys = [cache_key(f"text {i}", SPEC) for i in range(5)]
    vectors = unit_rows(5)
    EmbeddingCache(cache_root, SPEC).put_many(keys, vectors)

    reopened = EmbeddingCache(cache_root, SPEC)
    found = reopened.get_many([*keys, cache_key("never stored", SPEC)])
    assert set(found) == set(keys)
    for key, vector in zip(keys, vectors, strict=True):
        np.testing.assert_array_equal(found[key], vector)
        assert found[key].dtype == np.float32
    assert len(reopened) == 5


def test_a_reader_sees_writes_made_after_it_opened(tmp_path):
    reader = EmbeddingCache(tmp_path, SPEC)
    assert reader.get_many([cache_key("late", SPEC)]) == {}
    EmbeddingCache(tmp_path, SPEC).put_many([cache_key("late", SPEC)], unit_rows(1))
    assert list(reader.get_many([cache_key("late", SPEC)])) == [cache_key("late", SPEC)]


def test_cache_keeps_its_own_copy(tmp_path):
    cache = EmbeddingCache(tmp_path, SPEC)
    vectors = unit_rows(1)
    cache.put_many(["k"], vectors)
    vectors[:] = 0
    assert np.linalg.norm(cache.get_many(["k"])["k"]) == pytest.approx(1.0)


def test_put_rejects_vectors_of_the_wrong_shape(tmp_path):
    with pytest.raises(EmbeddingError):
        EmbeddingCache(tmp_path, SPEC).put_many(["a", "b"], unit_rows(2, dimensions=8))


def test_different_spec_gives_different_keys_and_storage(tmp_path):
    other = EmbeddingSpec("hash", "feature-hash-v1", 32)
    assert cache_key("same text", SPEC) != cache_key("same text", other)
    assert cache_key("same text", SPEC) != cache_key(
        "same text", EmbeddingSpec("local", "feature-hash-v1", 16)
    )
    assert cache_key("same text", SPEC) == cache_key(
        "same text", EmbeddingSpec("hash", "feature-hash-v1", 16)
    )
    EmbeddingCache(tmp_path, SPEC).put_many([cache_key("same text", SPEC)], unit_rows(1))
    assert len(EmbeddingCache(tmp_path, other)) == 0


def test_embed_with_cache_embeds_only_missing_texts(tmp_path):
    provider = CountingHashProvider()
    texts = [f"chunk {i} about topic {i % 5}" for i in range(50)]

    vectors, embedded = embed_with_cache(provider, texts, EmbeddingCache(tmp_path, provider.spec))
    assert embedded == 50
    np.testing.assert_allclose(vectors, provider.embed(texts), atol=1e-6)

    provider.embedded.clear()
    again, embedded = embed_with_cache(provider, texts, EmbeddingCache(tmp_path, provider.spec))
    assert embedded == 0 and provider.embedded == []
    np.testing.assert_array_equal(again, vectors)

    changed = [*texts[:10], "an edited chunk", *texts[11:]]
    result, embedded = embed_with_cache(provider, changed, EmbeddingCache(tmp_path, provider.spec))
    assert embedded == 1 and provider.embedded == ["an edited chunk"]
    np.testing.assert_allclose(result, provider.embed(changed), atol=1e-6)


def test_embed_with_cache_embeds_duplicates_once_and_keeps_order(tmp_path):
    provider = CountingHashProvider()
    texts = ["b text", "a text", "b text", "c text", "a text"]
    vectors, embedded = embed_with_cache(provider, texts, EmbeddingCache(tmp_path, provider.spec))
    assert embedded == 3 and sorted(provider.embedded) == ["a text", "b text", "c text"]
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_allclose(vectors, provider.embed(texts), atol=1e-6)


def test_embed_with_cache_reports_progress_to_the_total(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "EMBED_GROUP", 7)
    provider = CountingHashProvider()
    cache = EmbeddingCache(tmp_path, provider.spec)
    texts = [f"text {i}" for i in range(30)]
    embed_with_cache(provider, texts[:12], cache)
    seen: list[int] = []
    _, embedded = embed_with_cache(provider, texts, cache, progress=seen.append)
    assert embedded == 18
    assert seen[0] == 12 and seen[-1] == 30 and seen == sorted(seen)


def test_embed_with_cache_refuses_a_cache_of_another_spec(tmp_path):
    with pytest.raises(EmbeddingMismatch):
        embed_with_cache(get_provider("hash"), ["text"], EmbeddingCache(tmp_path, SPEC))


def test_embed_with_cache_for_fts_only_provider(tmp_path):
    provider = get_provider("none")
    vectors, embedded = embed_with_cache(provider, ["a", "b"], EmbeddingCache(tmp_path, provider.spec))
    assert vectors.shape == (2, 0) and embedded == 0


def test_interrupted_write_and_damaged_shard_lose_nothing_else(tmp_path):
    cache = EmbeddingCache(tmp_path, SPEC)
    cache.put_many(["kept"], unit_rows(1))
    # What a writer that died before its rename leaves behind, and a shard damaged on disk.
    (cache.directory / ".tmp-deadbeef.npz").write_bytes(b"PK\x03\x04 half a zip")
    (cache.directory / "shard-00000000000000000001-1-deadbeef.npz").write_bytes(b"garbage")
    reopened = EmbeddingCache(tmp_path, SPEC)
    assert list(reopened.get_many(["kept", "other"])) == ["kept"]
    reopened.put_many(["new"], unit_rows(1, seed=1))
    assert set(EmbeddingCache(tmp_path, SPEC).get_many(["kept", "new"])) == {"kept", "new"}


def test_compaction_merges_shards_without_losing_entries(cache_root, monkeypatch):
    monkeypatch.setattr(cache_module, "COMPACT_AT", 4)
    writer = EmbeddingCache(cache_root, SPEC)
    reader = EmbeddingCache(cache_root, SPEC)
    expected = {}
    for i in range(11):
        vectors = unit_rows(3, seed=i)
        keys = [f"key-{i}-{j}" for j in range(3)]
        writer.put_many(keys, vectors)
        expected.update(zip(keys, vectors, strict=True))
        if i == 2:
            assert len(reader) == 9  # a reader that loaded shards which compaction later deletes
    assert len([n for n in storage.list_children(writer.directory) if n.startswith("shard-")]) <= 5
    for cache in (reader, EmbeddingCache(cache_root, SPEC)):
        found = cache.get_many(list(expected))
        assert set(found) == set(expected)
        for key, vector in expected.items():
            np.testing.assert_array_equal(found[key], vector)


def test_hundred_thousand_keys_roundtrip(tmp_path):
    spec = EmbeddingSpec("hash", "feature-hash-v1", 8)
    keys = [cache_key(f"chunk {i}", spec) for i in range(100_000)]
    vectors = unit_rows(100_000, dimensions=8)
    EmbeddingCache(tmp_path, spec).put_many(keys, vectors)
    found = EmbeddingCache(tmp_path, spec).get_many(keys)
    assert len(found) == 100_000
    np.testing.assert_array_equal(found[keys[-1]], vectors[-1])
