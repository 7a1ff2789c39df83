"""Ranking and latency metrics: small pure functions, no Django.

Binary relevance, the definitions of the shared harness (`../shared/bench/harness/mcp_eval.py`),
so a run here and a run of the harness against the same server give the same numbers:

    hit@k      1 if a relevant item is in the top k, else 0
    mrr@10     1 / rank of the first relevant item in the top 10, else 0
    recall@k   |relevant items in the top k| / |relevant|
    ndcg@k     DCG@k / IDCG@k, DCG@k = sum over relevant items at ranks i <= k of 1 / log2(i + 1)
               (each relevant item counted once), IDCG@k = sum_{i=1..min(|relevant|, k)} 1 / log2(i + 1)
               (Jarvelin & Kekalainen 2002, binary gains)

File level: the hit list is mapped to file paths; a file takes the rank of its first hit and
later hits from the same file count for nothing (ranks stay hit ranks, not distinct-file ranks).
`docs/evals.md` has the worked examples the unit tests check.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

CUTOFFS = (1, 5, 10)
METRIC_KEYS = ("mrr@10", "ndcg@5", "ndcg@10", "recall@5", "recall@10", "hit@1", "hit@5", "hit@10")
HEADLINE_KEYS = ("mrr@10", "ndcg@10", "recall@10", "hit@1", "hit@5")
MATCH_MODES = ("exact", "leaf")

Ranked = Sequence[str | None]  # the item at each hit rank; None = a hit that can never be relevant


# --- matching ----------------------------------------------------------------------------------


def leaf(chunk_id: str) -> tuple[str, str]:
    """(file, last heading-path segment): 'a.md#x/y-2' -> ('a.md', 'y-2'); a whole-file ID -> '_preamble'."""
    path, _, fragment = chunk_id.partition("#")
    return path, fragment.rsplit("/", 1)[-1] or "_preamble"


def match_chunks(chunks: Sequence[str], expected: Iterable[str], mode: str = "exact") -> list[str]:
    """Map each hit to the expected ID it stands for.

    exact: only identical IDs match. leaf: a hit also matches an expected ID in the same file
    whose last heading segment is the same (chunk-ID schemes differ in the ancestors they put
    in the path, e.g. a `_preamble/` segment, not in the section a chunk starts at).
    """
    if mode not in MATCH_MODES:
        raise ValueError(f"unknown match mode {mode!r}; use one of {', '.join(MATCH_MODES)}")
    expected = set(expected)
    if mode == "exact":
        return list(chunks)
    by_leaf = {leaf(e): e for e in expected}
    return [c if c in expected else by_leaf.get(leaf(c), c) for c in chunks]


def file_of(chunk_id: str) -> str:
    return chunk_id.split("#", 1)[0]


def file_ranking(files: Sequence[str]) -> list[str | None]:
    """A file keeps the rank of its first hit; its later hits become None (they add nothing)."""
    seen: set[str] = set()
    out: list[str | None] = []
    for f in files:
        out.append(None if f in seen else f)
        seen.add(f)
    return out


# --- ranking metrics ---------------------------------------------------------------------------


def _relevant_ranks(ranked: Ranked, relevant: set[str], k: int | None = None) -> list[int]:
    """1-based ranks (within the top k) of relevant items, each item counted at its first rank."""
    counted: set[str] = set()
    ranks = []
    for i, item in enumerate(ranked[:k] if k else ranked, start=1):
        if item is None or item not in relevant or item in counted:
            continue
        counted.add(item)
        ranks.append(i)
    return ranks


def first_relevant_rank(ranked: Ranked, relevant: Iterable[str]) -> int | None:
    """Rank of the first relevant item anywhere in `ranked` (no cutoff), None if absent."""
    ranks = _relevant_ranks(ranked, set(relevant))
    return ranks[0] if ranks else None


def hit_at(ranked: Ranked, relevant: Iterable[str], k: int) -> float:
    return 1.0 if _relevant_ranks(ranked, set(relevant), k) else 0.0


def mrr_at(ranked: Ranked, relevant: Iterable[str], k: int = 10) -> float:
    ranks = _relevant_ranks(ranked, set(relevant), k)
    return 1.0 / ranks[0] if ranks else 0.0


def recall_at(ranked: Ranked, relevant: Iterable[str], k: int) -> float:
    relevant = set(relevant)
    if not relevant:
        raise ValueError("recall needs at least one relevant item")
    return len(_relevant_ranks(ranked, relevant, k)) / len(relevant)


def dcg(ranks: Iterable[int]) -> float:
    return sum(1.0 / math.log2(i + 1) for i in ranks)


def ndcg_at(ranked: Ranked, relevant: Iterable[str], k: int) -> float:
    relevant = set(relevant)
    ideal = dcg(range(1, min(len(relevant), k) + 1))
    return dcg(_relevant_ranks(ranked, relevant, k)) / ideal if ideal else 0.0


def rank_metrics(ranked: Ranked, relevant: Iterable[str]) -> dict[str, float | int | None]:
    """Every metric of METRIC_KEYS for one ranked list, plus `first_rank` within the top 10."""
    relevant = set(relevant)
    ranks10 = _relevant_ranks(ranked, relevant, 10)
    return {
        "mrr@10": mrr_at(ranked, relevant, 10),
        "ndcg@5": ndcg_at(ranked, relevant, 5),
        "ndcg@10": ndcg_at(ranked, relevant, 10),
        "recall@5": recall_at(ranked, relevant, 5),
        "recall@10": recall_at(ranked, relevant, 10),
        "hit@1": hit_at(ranked, relevant, 1),
        "hit@5": hit_at(ranked, relevant, 5),
        "hit@10": hit_at(ranked, relevant, 10),
        "first_rank": ranks10[0] if ranks10 else None,
    }


def first_relevant_round(pages: Sequence[Ranked], relevant: Iterable[str]) -> int | None:
    """Rounds to the right item: the 1-based page (search call) where a relevant item first shows."""
    relevant = set(relevant)
    for n, page in enumerate(pages, start=1):
        if any(item is not None and item in relevant for item in page):
            return n
    return None


# --- aggregates --------------------------------------------------------------------------------


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(rows: Sequence[dict | None]) -> dict | None:
    """Means of METRIC_KEYS over the rows that have this level (None rows are left out), plus n."""
    rows = [r for r in rows if r is not None]
    if not rows:
        return None
    out: dict = {"n": len(rows)}
    for key in METRIC_KEYS:
        out[key] = round(sum(r[key] for r in rows) / len(rows), 4)
    return out


def rounds_summary(rounds: Sequence[int | None]) -> dict | None:
    """Of the cases with expectations: share found within the rounds followed, mean rounds when found."""
    if not rounds:
        return None
    found = [r for r in rounds if r is not None]
    return {"found": round(len(found) / len(rounds), 4),
            "mean_rounds": round(mean(found), 4) if found else None}


# --- latency -----------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default): position (n - 1) * p / 100."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def latency_summary(values: Sequence[float]) -> dict | None:
    """p50/p95/p99, mean and max of latencies in ms, rounded to 0.01 ms; None for no calls."""
    if not values:
        return None
    out = {f"p{p}": round(percentile(values, p), 2) for p in (50, 95, 99)}
    out.update({"mean": round(sum(values) / len(values), 2), "max": round(max(values), 2), "n": len(values)})
    return out


# --- comparing two results of one case ---------------------------------------------------------


def case_score(*, zero_result: bool, passed: bool, rank: int | None, verdict_ok: bool = True) -> float:
    """One number per case for better/worse: 1/rank over every round followed (0 if never found, or when
    its coverage verdict failed it); a case the docs do not answer scores 1 when it passed, else 0."""
    if zero_result:
        return 1.0 if passed else 0.0
    return 1.0 / rank if rank and verdict_ok else 0.0


# --- coverage ----------------------------------------------------------------------------------


def coverage_summary(cases: Sequence[tuple[bool, str]]) -> dict | None:
    """How well the coverage verdict tells answerable questions from the others, over (answerable, verdict)
    pairs; cases without a verdict ("") are left out, and None when no case has one.

    The flag is `not_covered` ("these docs do not answer this"), the truth is the case's `answerable`:
        precision  of the cases flagged not_covered, the share that are not answerable
        recall     of the cases that are not answerable, the share flagged not_covered
    `_partial` variants count `partial` as a flag too; `answerable_flagged` is the share of answerable cases
    flagged not_covered (what an agent is wrongly told). Counts per verdict are in `answerable` and
    `unanswerable`."""
    judged = [(answerable, verdict) for answerable, verdict in cases if verdict]
    if not judged:
        return None
    counts = {side: {v: sum(1 for a, verdict in judged if a == (side == "answerable") and verdict == v)
                     for v in ("covered", "partial", "not_covered")} for side in ("answerable", "unanswerable")}

    def ratio(num: int, den: int) -> float | None:
        return round(num / den, 4) if den else None

    yes, no = counts["answerable"], counts["unanswerable"]
    n_yes, n_no = sum(yes.values()), sum(no.values())
    return {
        "n": len(judged), "answerable": yes, "unanswerable": no,
        "precision": ratio(no["not_covered"], no["not_covered"] + yes["not_covered"]),
        "recall": ratio(no["not_covered"], n_no),
        "precision_partial": ratio(no["not_covered"] + no["partial"],
                                   no["not_covered"] + no["partial"] + yes["not_covered"] + yes["partial"]),
        "recall_partial": ratio(no["not_covered"] + no["partial"], n_no),
        "answerable_flagged": ratio(yes["not_covered"], n_yes),
    }


def compare_scores(before: float | None, after: float | None, tolerance: float = 1e-6) -> str:
    """'better' | 'worse' | 'same' | 'new' | 'removed'."""
    if before is None:
        return "new"
    if after is None:
        return "removed"
    if after > before + tolerance:
        return "better"
    if after < before - tolerance:
        return "worse"
    return "same"


def resolution_summary(ranks: Sequence[int | None]) -> dict | None:
    """Corpus resolution over the cases that measured it: `accuracy` is the share whose corpus
    `list_corpora` ranked first, `mrr` the mean 1/rank of it (0 when it was not listed)."""
    if not ranks:
        return None
    n = len(ranks)
    return {"n": n, "accuracy": round(sum(r == 1 for r in ranks) / n, 4),
            "mrr": round(sum(1 / r for r in ranks if r) / n, 4)}
