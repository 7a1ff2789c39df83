"""The docsmcp engine: parse, chunk, embed, index and search markdown. Plain Python, no Django."""

from .memory import tune_allocators

tune_allocators()
