"""Identifier terms: `client.list_users()`, `max_connections`, `RateLimitError`, `Get-ChildItem`.

LanceDB's default FTS tokenizer splits on `_` and `.` and stems, so `get_queryset` becomes
`get OR queryset` and loses to any chunk that merely mentions both words. Chunks therefore
carry a second text column holding each compound identifier whole (and its dotted parts),
indexed with a whitespace tokenizer and no stemming; queries run the same extraction, so
both sides agree on what an identifier is.
"""

from __future__ import annotations

import re

_CANDIDATE = re.compile(r"[A-Za-z_$@][\w$@]*(?:(?:\.|::|->|-)[A-Za-z_$@0-9][\w$@]*)*")
_SPLIT = re.compile(r"\.|::|->")
MAX_TERM = 80


def _is_compound(token: str) -> bool:
    """Has a separator (`_ . :: -> -`) inside, or mixed case beyond a capitalised word (camelCase)."""
    if "_" in token.strip("_") or "." in token or "-" in token or ":" in token:
        return True
    return not (token.islower() or token.isupper() or token.istitle())


def identifier_terms(text: str) -> list[str]:
    """Lowercased compound identifiers in order of appearance, each followed by its dotted parts."""
    out: list[str] = []
    for token in _CANDIDATE.findall(text):
        token = token.strip(".-")
        if len(token) < 3 or len(token) > MAX_TERM or not _is_compound(token):
            continue
        out.append(token.lower())
        parts = [p for p in _SPLIT.split(token) if p]
        if len(parts) > 1:
            out.extend(p.lower() for p in parts if len(p) >= 3 and _is_compound(p))
    return out


def identifier_text(*texts: str) -> str:
    """Distinct identifier terms joined by spaces: the value of the chunk's `ident` column."""
    seen: dict[str, None] = {}
    for text in texts:
        for term in identifier_terms(text):
            seen.setdefault(term, None)
    return " ".join(seen)
