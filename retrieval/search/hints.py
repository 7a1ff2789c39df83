"""Zero-result hints (the docs tool contract `hint`, the build pipeline contract "Guided Discovery").

When a filtered search finds nothing, the agent's next move should be a search that works.
For each filter key K the query is rerun cheaply (the full-text and identifier legs, small
depth, all keys at once on the loop) with every filter except K, as a bare conjunction.
Each chunk found carries some value v of K, which proves that the same search with K = v
has a match; those values are `suggested_filters[K]`. When no filter can be changed to give
a match, or the search had no filters, the hint says that the corpus has no match for the
query and suggests rephrasing it.

Only lexical legs are consulted: a vector leg returns neighbours for any query, so it cannot
tell "documented for another value" from "not documented".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .filters import FilterPlan, describe_filters, plain_where
from .index import Index
from .legs import IDENT, TEXT, lexical_queries, submit_lexical

HINT_DEPTH = 50


@dataclass(frozen=True)
class SearchHint:
    message: str
    suggested_filters: dict[str, list[str]] = field(default_factory=dict)


def _no_match(query: str, plan: FilterPlan) -> SearchHint:
    if plan.filters:
        return SearchHint(f"0 results found for {describe_filters(plan.filters)}. The corpus has no match for "
                          "this query under any filter value; rephrase it with other words or fewer terms.")
    return SearchHint(f"0 results found for query {query!r}. The corpus has no match for it; "
                      "rephrase it with other words or fewer terms.")


def zero_hit_hint(index: Index, query: str, plan: FilterPlan) -> SearchHint:
    queries = lexical_queries(query, (TEXT, IDENT), keywords="keywords" in index.fts_columns)
    if not plan.filters or not queries:
        return _no_match(query, plan)
    keys = list(plan.filters)
    wheres = [plain_where({k: v for k, v in plan.filters.items() if k != key}) for key in keys]

    pending = [submit_lexical(index, queries, where, HINT_DEPTH) for where in wheres]
    catalog = index.catalog()
    suggested: dict[str, list[str]] = {}
    for key, legs in zip(keys, pending, strict=True):
        outcomes = [f.result() for f in legs]
        positions = sorted({int(p) for outcome in outcomes if outcome.rowids is not None
                            for p in catalog.positions(outcome.rowids)})
        values = set(catalog.column(index.column(key), positions)) - {None, plan.filters[key]}
        if values:
            suggested[key] = sorted(values)
    if not suggested:
        return _no_match(query, plan)
    found = "; for ".join(f"{key}: {', '.join(values)}" for key, values in suggested.items())
    advice = "with one of those values" if len(plan.filters) == 1 else "changing one filter to one of those values"
    return SearchHint(f"0 results found for {describe_filters(plan.filters)}. Matches exist for {found}; "
                      f"search again {advice} (see suggested_filters), or without the filter.", suggested)
