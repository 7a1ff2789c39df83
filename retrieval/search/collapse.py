"""Collapse near-duplicate variants across the values of a `vector_collapse` taxonomy key.

SDK docs repeat one page per language (`sdks/python/errors.md#.../ratelimiterror`,
`sdks/typescript/errors.md#.../ratelimiterror`): without a language filter they would fill a
page with the same answer. When the manifest marks a key `vector_collapse` and the search
does not filter on it, a hit is dropped when a better-ranked kept hit has a different,
non-null value of that key and either
  (a) the same structure: equal chunk ID once path segments equal to either value are
      masked (`sdks/*/errors.md#error-handling/ratelimiterror`), or
  (b) the same heading text (case-insensitive) and vector cosine above 0.97, when the index
      has vectors: variants whose files are laid out differently.
Chunks without a value for the key (global guides) are never dropped. Limiting (b) to equal
headings keeps the comparison cheap (no all-pairs similarity) and avoids collapsing two
different sections that merely read alike. The best-ranked variant survives, so the answer
stays the one the ranking preferred; the agent can filter to get another language's page.
The build pipeline contract calls dynamic collapse UX-hostile as a replacement for filters; here it only
applies when the agent chose not to filter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .catalog import Catalog
from .vectors import Vectors

COLLAPSE_COSINE = 0.97


def structural_key(chunk_id: str, value: str) -> str:
    """The chunk ID with path segments (or file stems) equal to `value`, any case, replaced by `*`."""
    path, sep, fragment = chunk_id.partition("#")
    lowered = value.lower()

    def mask(segment: str) -> str:
        stem, dot, ext = segment.partition(".")
        return "*" + dot + ext if stem.lower() == lowered else segment

    return "/".join(mask(seg) for seg in path.split("/")) + sep + fragment


def collapse_variants(ranked: Sequence[tuple[int, float]], catalog: Catalog, column: str,
                      vectors: Vectors | None = None,
                      threshold: float = COLLAPSE_COSINE) -> list[tuple[int, float]]:
    """`ranked` (position, score) best first, minus variants of better-ranked hits (rules above)."""
    if not ranked:
        return []
    positions = [p for p, _ in ranked]
    values = catalog.column(column, positions)
    headings = catalog.column("heading", positions)
    chunk_ids = catalog.column("chunk_id", positions)
    kept: list[tuple[int, float]] = []
    by_structure: dict[str, set[str]] = {}
    by_heading: dict[str, list[tuple[int, str]]] = {}
    for (position, score), value, heading, chunk_id in zip(ranked, values, headings, chunk_ids, strict=True):
        if value is None:
            kept.append((position, score))
            continue
        key = structural_key(chunk_id, value)
        if by_structure.get(key, set()) - {value}:
            continue
        heading_key = (heading or "").strip().lower()
        if vectors is not None and heading_key:
            rivals = [p for p, v in by_heading.get(heading_key, []) if v != value]
            if rivals and float(np.max(vectors.rows(rivals) @ vectors.rows([position])[0])) > threshold:
                continue
        kept.append((position, score))
        by_structure.setdefault(key, set()).add(value)
        by_heading.setdefault(heading_key, []).append((position, value))
    return kept
