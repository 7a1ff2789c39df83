"""Embeddings from an OpenAI-compatible HTTP API (OpenAI itself, or a local server speaking its protocol)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

import numpy as np

from retrieval.errors import EmbeddingError

from .base import EmbeddingProvider

DEFAULT_MODEL = "text-embedding-3-small"
# Given to the SDK explicitly: left None, it would read OPENAI_BASE_URL from the environment itself.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Longest wait taken from a Retry-After header, so a server asking for an hour cannot stall a build that long.
MAX_RETRY_AFTER = 120.0
MAX_BACKOFF = 30.0


def _is_retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _retry_after(headers) -> float | None:
    """Seconds the server asked us to wait, from retry-after-ms or retry-after (seconds form; an HTTP date
    falls back to our own backoff)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name) if headers is not None else None
        if raw is None:
            continue
        try:
            seconds = float(raw) * scale
        except ValueError:
            continue
        if seconds >= 0:
            return min(seconds, MAX_RETRY_AFTER)
    return None


def _server_message(exc) -> str:
    """The API's own explanation (e.g. 'Incorrect API key provided'), which is what the operator needs."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", None) or exc)


class OpenAIEmbeddingProvider(EmbeddingProvider):
    """Batches run concurrently on a thread pool; each batch retries 429/5xx/connection errors itself with
    exponential backoff and jitter, so one slow batch does not restart the others."""

    name = "openai"

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 128,
        concurrency: int = 4,
        max_retries: int = 6,
        timeout: float = 60.0,
        retry_base_delay: float = 0.5,
    ):
        if batch_size < 1 or concurrency < 1 or max_retries < 0:
            raise EmbeddingError(
                f"openai embeddings need batch_size >= 1, concurrency >= 1 and max_retries >= 0 "
                f"(got {batch_size}, {concurrency}, {max_retries})"
            )
        if dimensions is not None and int(dimensions) < 1:
            raise EmbeddingError(f"openai embeddings need dimensions >= 1 when given, got {dimensions}")
        if not api_key:  # the caller's (a server's OPENAI_API_KEY setting); the environment is not read here
            raise EmbeddingError(
                "the openai embedding provider needs an API key: set OPENAI_API_KEY on the server, or pass the "
                "api_key option (any non-empty value for a local server that ignores it)"
            )
        base_url = base_url or DEFAULT_BASE_URL
        # The SDK's own retries are off: ours honour Retry-After per batch and report in our error types.
        import openai  # on use: a web worker that never calls the API need not hold its 14 MB

        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)
        self.base_url = str(self._client.base_url)
        self.model = model
        self.batch_size = int(batch_size)
        self.concurrency = int(concurrency)
        self.max_retries = int(max_retries)
        self.retry_base_delay = float(retry_base_delay)
        self._requested_dimensions = int(dimensions) if dimensions is not None else None
        self._dimensions = self._requested_dimensions
        self._dimensions_lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        """Known from the option or the first response; otherwise one tiny request finds out, because an
        index's spec and compatibility checks need the number before anything else is embedded."""
        if self._dimensions is None:
            self.embed_batch([" "])
        assert self._dimensions is not None
        return self._dimensions

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        # The API rejects empty strings outright; a single space embeds as "nothing" instead.
        payload = [text if text else " " for text in texts]
        options: dict[str, object] = {"model": self.model, "input": payload}
        if self._requested_dimensions is not None:
            options["dimensions"] = self._requested_dimensions
        response = self._call_with_retries(options)
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise EmbeddingError(
                f"embeddings API at {self.base_url} returned {len(data)} vectors for {len(texts)} inputs"
            )
        try:
            vectors = np.asarray([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embeddings API at {self.base_url} returned malformed vectors: {exc}"
            ) from exc
        self._learn_dimensions(vectors.shape[1] if vectors.ndim == 2 else 0)
        return vectors

    def run_batches(
        self, texts: list[str], batches: list[list[int]]
    ) -> Iterator[tuple[list[int], np.ndarray]]:
        if self.concurrency == 1 or len(batches) == 1:
            yield from super().run_batches(texts, batches)
            return
        executor = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="openai-embed")
        try:
            pending: dict[Future, list[int]] = {
                executor.submit(self.embed_batch, [texts[i] for i in indices]): indices for indices in batches
            }
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    indices = pending.pop(future)
                    yield indices, future.result()
        finally:
            # On failure, drop queued batches instead of paying for them; running ones finish their request.
            executor.shutdown(wait=True, cancel_futures=True)

    def _learn_dimensions(self, width: int) -> None:
        with self._dimensions_lock:
            if self._dimensions is None:
                self._dimensions = width
        if width != self._dimensions:
            raise EmbeddingError(
                f"embeddings API at {self.base_url} returned {width}-dimensional vectors for model {self.model}, "
                f"expected {self._dimensions}"
            )

    def _call_with_retries(self, options: dict[str, object]):
        import openai

        attempt = 0
        while True:
            try:
                response = self._client.embeddings.create(**options)
            except openai.APIStatusError as exc:
                if not _is_retryable_status(exc.status_code):
                    raise EmbeddingError(
                        f"embeddings API at {self.base_url} refused the request (HTTP {exc.status_code}): "
                        f"{_server_message(exc)}"
                    ) from exc
                failure: Exception = exc
                wait_for = _retry_after(exc.response.headers)
            except openai.APIConnectionError as exc:
                failure, wait_for = exc, None
            except (openai.OpenAIError, ValueError) as exc:
                raise EmbeddingError(
                    f"embeddings API at {self.base_url} gave an unusable answer: {exc}"
                ) from exc
            else:
                if not response.data:
                    raise EmbeddingError(f"embeddings API at {self.base_url} returned no vectors")
                return response
            if attempt >= self.max_retries:
                raise EmbeddingError(
                    f"embeddings API at {self.base_url} still failing after {attempt + 1} attempts: "
                    f"{_describe_failure(failure)}"
                ) from failure
            if wait_for is None:
                ceiling = min(MAX_BACKOFF, self.retry_base_delay * 2**attempt)
                wait_for = ceiling / 2 + random.uniform(0, ceiling / 2)
            time.sleep(wait_for)
            attempt += 1


def _describe_failure(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    if status is not None:
        return f"HTTP {status}: {_server_message(exc)}"
    return f"{type(exc).__name__}: {exc}"
