"""Slugs and the collision rule that keeps chunk IDs unique within a file.

The build pipeline contract's algorithm: lowercase; drop everything but `[a-z0-9 -]`; spaces -> hyphens;
collapse hyphens. We also trim edge hyphens and fall back to `section` for headings that
slugify to nothing (`日本語`).

Collision rule (scoped to the parent heading, in document order): the first heading with a
slug keeps it; the Nth gets `-N`. The public implementation can still collide when a
heading's own slug equals a generated one (`Login`, `Login`, `Login 2` -> `login-2` twice).
We keep one set of taken slugs per parent and, when a candidate is taken, keep counting
(`login`, `login-2`, `login-2-2`), so an ID is never issued twice.
"""

from __future__ import annotations

import re

_STRIP = re.compile(r"[^a-z0-9 -]")
_SPACES = re.compile(r" +")
_HYPHENS = re.compile(r"-+")
RESERVED_PREAMBLE = "_preamble"


def slugify(text: str) -> str:
    slug = _STRIP.sub("", text.lower())
    slug = _HYPHENS.sub("-", _SPACES.sub("-", slug)).strip("-")
    return slug or "section"


class SlugScope:
    """Issues unique slugs among siblings: a dict of counters plus the set already issued."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.taken: set[str] = set()

    def issue(self, base: str) -> str:
        count = self.counts.get(base, 0) + 1
        candidate = base if count == 1 else f"{base}-{count}"
        while candidate in self.taken:
            count += 1
            candidate = f"{base}-{count}"
        self.counts[base] = count
        self.taken.add(candidate)
        return candidate


def unique_ids(ids: list[str]) -> list[str]:
    """Last line of defence for IDs built from parts (`-part-N`) that might equal a real slug."""
    seen: set[str] = set()
    out = []
    for chunk_id in ids:
        candidate, n = chunk_id, 1
        while candidate in seen:
            n += 1
            candidate = f"{chunk_id}-{n}"
        seen.add(candidate)
        out.append(candidate)
    return out
