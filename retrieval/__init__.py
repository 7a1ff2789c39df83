"""The docsmcp engine: parse, chunk, embed, index and search markdown. Plain Python, no Django.

May import: nothing else in the project. The apps build on the engine, never the other way round,
so it can be tested and timed on its own. Each subpackage's own list says what it may use of the
others.
"""

from .lazyimports import defer_namespace_client
from .memory import tune_allocators

defer_namespace_client()
tune_allocators()
