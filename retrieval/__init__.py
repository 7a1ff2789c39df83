"""The docsmcp engine: parse, chunk, embed, index and search markdown. Plain Python, no Django."""

from .lazyimports import defer_namespace_client
from .memory import tune_allocators

defer_namespace_client()
tune_allocators()
