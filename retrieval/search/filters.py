"""Taxonomy filters: validated against the build's metadata, then turned into one SQL `WHERE`.

Only canonical values the build discovered are accepted (exact, case-sensitive): a filter an
agent guessed (`Python`, `py`) fails loudly with the allowed values instead of silently
matching nothing. The allowed keys and values are always read from `metadata.json`, never
typed by hand.

Auto-include (the build pipeline contract section 4, generalised): for each manifest rule
`{"when": W, "unless": U, "include": {K: V}}` that applies (W filtered, U not), the clause
becomes `(<all filters>) OR (<filters except W> AND K = V ...)`. With the seed's rule and
`language=typescript` that is `(language = 'typescript') OR (scope = 'global-guide')`. Key
names come from the rule; several applicable rules each add one disjunct.

SQL safety: column names are `m_<key>` for keys that exist in the metadata (the manifest only
admits identifier keys) and are back-quoted; values are single-quoted with quotes doubled. No
clause text is ever taken from the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from retrieval.errors import InvalidFilter
from retrieval.format.layout import sql_string, taxonomy_column
from retrieval.format.metadata import BuildMetadata


@dataclass(frozen=True)
class FilterPlan:
    """What a search's filters mean for this build."""

    filters: dict[str, str]  # validated, sorted by key
    where: str | None  # the pushed-down clause; None when unfiltered
    auto_included: tuple[dict[str, str], ...] = ()  # `include` parts of the rules that applied

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.filters)


def allowed_filters(metadata: BuildMetadata) -> dict[str, tuple[str, ...]]:
    return {key: field.values for key, field in metadata.taxonomy.items()}


def _describe_allowed(allowed: Mapping[str, tuple[str, ...]]) -> str:
    if not allowed:
        return "this corpus has no taxonomy, so no filters are accepted"
    return "; ".join(f"{key}: {', '.join(values) or '(no values)'}" for key, values in sorted(allowed.items()))


def validate_filters(metadata: BuildMetadata, filters: Mapping[str, object] | None) -> dict[str, str]:
    """Returns the filters sorted by key; raises InvalidFilter naming what is allowed.

    None values are dropped (a JSON `null` means "no filter" for that key, like omitting it).
    """
    allowed = allowed_filters(metadata)
    out: dict[str, str] = {}
    for key, value in (filters or {}).items():
        if value is None:
            continue
        if key not in allowed:
            raise InvalidFilter(f"Unknown filter {key!r}. Allowed filters: {_describe_allowed(allowed)}.")
        if not isinstance(value, str) or value not in allowed[key]:
            raise InvalidFilter(f"Unknown value {value!r} for filter {key!r}; use one of: "
                                f"{', '.join(allowed[key])} (exact, case-sensitive).")
        out[key] = value
    return dict(sorted(out.items()))


def _equals(key: str, value: str) -> str:
    return f"`{taxonomy_column(key)}` = {sql_string(value)}"


def _conjunction(filters: Mapping[str, str]) -> str | None:
    if not filters:
        return None
    return " AND ".join(_equals(k, v) for k, v in sorted(filters.items()))


def plan_filters(metadata: BuildMetadata, filters: Mapping[str, object] | None) -> FilterPlan:
    """Validates `filters` and builds the clause, auto-include rules applied."""
    checked = validate_filters(metadata, filters)
    return FilterPlan(checked, *_where(metadata, checked))


def _where(metadata: BuildMetadata, filters: dict[str, str]) -> tuple[str | None, tuple[dict[str, str], ...]]:
    base = _conjunction(filters)
    if base is None:
        return None, ()
    disjuncts = [base]
    applied: list[dict[str, str]] = []
    for rule in metadata.auto_include:
        if rule.when not in filters or rule.unless in filters:
            continue
        widened = {k: v for k, v in filters.items() if k != rule.when}
        widened.update(rule.include)
        clause = _conjunction(widened)
        if clause is not None and clause not in disjuncts:
            disjuncts.append(clause)
            applied.append(dict(rule.include))
    if len(disjuncts) == 1:
        return base, ()
    return " OR ".join(f"({d})" for d in disjuncts), tuple(applied)


def plain_where(filters: Mapping[str, str]) -> str | None:
    """The bare conjunction, no auto-include: a chunk it matches matches these filters under any rule.

    Zero-result hints rely on that: a chunk found with every filter but K, carrying K = v,
    proves that `filters with K = v` has a match.
    """
    return _conjunction(filters)


def describe_filters(filters: Mapping[str, str]) -> str:
    """`scope 'sdk-specific'` / `language 'go' and scope 'sdk-specific'`, as in the docs tool contract's hint."""
    parts = [f"{key} {value!r}" for key, value in sorted(filters.items())]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
