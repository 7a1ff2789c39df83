"""How a build reports its stages and learns it was cancelled; every stage module takes both."""

from __future__ import annotations

from collections.abc import Callable

# (stage, done, total): "chunk", "embed", "write", "index", "mapped"
Progress = Callable[[str, int, int], None]
# asked between units of work; True stops the build with BuildCancelled
Cancelled = Callable[[], bool]


