"""Deltas between two runs: per metric (overall and per category) and per case. Pure functions.

A case's score is `metrics.case_score`: 1/rank over every round followed (0 when never found),
or for a zero-result case 1 when it got no hits. Cases are matched by name, so a baseline on an
older copy of the suite still compares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .metrics import compare_scores

STATUSES = ("worse", "better", "same", "new", "removed")


def diff_numbers(before: Any, after: Any) -> Any:
    """after - before for every numeric leaf both have (dicts recursively); None where either lacks it."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out = {}
        for key in after:
            if key in before:
                d = diff_numbers(before[key], after[key])
                if d is not None:
                    out[key] = d
        return out or None
    if isinstance(before, bool) or isinstance(after, bool):
        return None
    if isinstance(before, int | float) and isinstance(after, int | float):
        return round(after - before, 4)
    return None


def metric_delta(before: Mapping, after: Mapping) -> dict:
    """Run metrics (`{"overall", "by_category"[, "by_corpus"]}`) of after minus before; `n` and counts are
    left out."""

    def clean(d):
        if isinstance(d, dict):
            return {k: clean(v) for k, v in d.items() if k not in ("n", "cases", "passed", "errors")}
        return d

    return {
        "overall": clean(diff_numbers(before.get("overall") or {}, after.get("overall") or {})) or {},
        "by_category": {
            cat: clean(diff_numbers((before.get("by_category") or {}).get(cat) or {}, group)) or {}
            for cat, group in (after.get("by_category") or {}).items()
            if cat in (before.get("by_category") or {})
        },
        **({"by_corpus": {
            name: clean(diff_numbers((before.get("by_corpus") or {}).get(name) or {}, group)) or {}
            for name, group in after["by_corpus"].items() if name in (before.get("by_corpus") or {})
        }} if after.get("by_corpus") else {}),
    }


def case_statuses(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, str]:
    """{case name: better|worse|same|new|removed} from two {case name: score} maps."""
    names = list(after) + [n for n in before if n not in after]
    return {n: compare_scores(before.get(n), after.get(n)) for n in names}


def case_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict:
    statuses = case_statuses(before, after)
    out: dict[str, Any] = {s: [n for n, st in statuses.items() if st == s] for s in STATUSES if s != "same"}
    out["same"] = sum(1 for st in statuses.values() if st == "same")
    return out


def run_delta(*, baseline_id: int, before_metrics: Mapping, after_metrics: Mapping, before_latency: Mapping,
              after_latency: Mapping, before_scores: Mapping[str, float], after_scores: Mapping[str, float]) -> dict:
    return {
        "baseline": baseline_id,
        "metrics": metric_delta(before_metrics, after_metrics),
        "latency": diff_numbers(before_latency or {}, after_latency or {}) or {},
        "cases": case_delta(before_scores, after_scores),
    }


def embedding_note(before: Mapping | None, after: Mapping | None) -> str:
    """A warning when two runs measured builds embedded differently: the delta then mixes the change of
    embeddings (or their loss) with whatever else changed. Specs are builds' `embedding` (None: full-text only)."""
    def describe(spec: Mapping | None) -> str:
        if not spec:
            return "no embeddings (full-text only)"
        return f"{spec.get('provider')}/{spec.get('model')} ({spec.get('dimensions')} dims)"

    if describe(before) == describe(after):
        return ""
    return (f"The compared runs measured builds with different embeddings: {describe(before)} vs "
            f"{describe(after)}. Their differences include the change of embeddings.")
