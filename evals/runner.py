"""Run cases through a target and score them. No Django: the service stores what this returns.

Per case: `search_docs {query, limit: 10, ...filters}`; while an expected chunk (or file) has
not shown up and the result has a `next_cursor`, call again with the cursor, up to
`max_rounds` calls. Then `get_doc` on the top hit, timed. Ranking metrics at k <= 10 read the
first call only (as the shared harness does); ranks and rounds read every call made.

Coverage: each reply's verdict (covered / partial / not_covered, retrieval/search/coverage.py) is kept per
case. An answerable case fails when its question is flagged `not_covered` (or, with `require_covered`, is
not `covered`, and with `max_rank`, when the expected item is further down); a case with `answerable`
false passes when the verdict is `not_covered` or `partial` (counted apart). A server that gives no
verdict is judged as before: a case that expects nothing passes when it gets no hits.

Runs across corpora (scope `all`: /mcp/ without a `corpus` argument; `named`: with the case's own
corpus as `corpus`) count a hit only when it comes from the case's corpus, since the same path can
exist in two corpora, and ask `list_corpora` the case's query to see whether the case's corpus comes
first (corpus resolution).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import metrics as m
from .targets import (
    GET_DOC_TOOL,
    LIST_CORPORA_TOOL,
    SEARCH_TOOL,
    Target,
    TargetError,
    ToolFailed,
    hit_chunk_id,
    hit_file,
    parse_corpora_result,
)
from .targets import parse_search_result as parse_page

PAGE_SIZE = 10
Progress = Callable[[int, int], None]


class CaseLike(Protocol):
    name: str
    category: str
    query: str
    filters: dict
    expected_chunk_ids: list
    expected_files: list
    corpus: str
    # optional (older case objects lack them): answerable (default: it expects something), max_rank, require_covered


@dataclass
class CaseOutcome:
    name: str
    category: str
    query: str
    zero_result: bool
    passed: bool = False
    chunk_rank: int | None = None
    file_rank: int | None = None
    rounds: int | None = None
    file_rounds: int | None = None
    calls: int = 0
    hit_count: int = 0
    top_hits: list[str] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    get_doc_ms: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    corpus: str = ""
    # {"expected", "first", "rank"}: where list_corpora put the case's corpus (rank None: not listed)
    resolution: dict[str, Any] | None = None
    list_corpora_ms: float | None = None
    coverage: str = ""  # the first search's verdict; "" when the target gave none
    coverage_score: float | None = None
    why: str = ""  # why a case that found its page still failed (verdict, rank limit)

    @property
    def has_chunks(self) -> bool:
        return self.metrics.get("chunk") is not None

    @property
    def has_files(self) -> bool:
        return self.metrics.get("file") is not None

    @property
    def rank(self) -> int | None:
        return self.chunk_rank if self.has_chunks else self.file_rank

    @property
    def score(self) -> float:
        return m.case_score(zero_result=self.zero_result, passed=self.passed, rank=self.rank,
                            verdict_ok=not self.why.startswith(VERDICT_FAILURE))


def expected_files_for(case: CaseLike) -> list[str]:
    """The case's expected files, or, when it names only chunks, the files of those chunks."""
    if case.expected_files:
        return list(case.expected_files)
    return list(dict.fromkeys(m.file_of(c) for c in case.expected_chunk_ids))


def _foreign(hit: dict, corpus: str) -> bool:
    theirs = hit.get("corpus")
    return bool(corpus) and isinstance(theirs, str) and bool(theirs) and theirs != corpus


def _keys(hit: dict, corpus: str) -> tuple[str, str]:
    """A hit's chunk ID and file, marked `[other] ` when it comes from a corpus other than `corpus`,
    so that it matches nothing the case expects and shows where it came from."""
    if _foreign(hit, corpus):
        return f"[{hit['corpus']}] {hit_chunk_id(hit)}", f"[{hit['corpus']}] {hit_file(hit)}"
    return hit_chunk_id(hit), hit_file(hit)


def resolve_corpus(target: Target, query: str, expected: str) -> dict[str, Any]:
    """Ask list_corpora the case's query: {"expected", "first", "rank"} (rank None: not listed)."""
    names = parse_corpora_result(target.call(LIST_CORPORA_TOOL, {"query": query}))
    return {"expected": expected, "first": names[0] if names else None,
            "rank": names.index(expected) + 1 if expected in names else None}


NOT_COVERED, PARTIAL, COVERED = "not_covered", "partial", "covered"
VERDICT_FAILURE = "the search said"  # how a failure on the verdict (not on the rank) starts


def verdict_failure(verdict: str, *, require_covered: bool) -> str:
    """Why an answerable case fails on its verdict, or "" when the verdict lets it pass."""
    if verdict == NOT_COVERED:
        return f"{VERDICT_FAILURE} the docs do not cover it (not_covered)"
    if require_covered and verdict != COVERED:
        return f"{VERDICT_FAILURE} {verdict or 'nothing about coverage'}, and this case needs covered"
    return ""


def run_case(target: Target, case: CaseLike, *, match: str = "exact", max_rounds: int = 3,
             extra_filters: dict | None = None, time_get_doc: bool = True, scope: str = "corpus") -> CaseOutcome:
    exp_chunks = list(case.expected_chunk_ids or [])
    exp_files = expected_files_for(case)
    zero = not getattr(case, "answerable", bool(exp_chunks or exp_files)) or not (exp_chunks or exp_files)
    max_rank = getattr(case, "max_rank", None)
    require_covered = bool(getattr(case, "require_covered", False))
    corpus = getattr(case, "corpus", "") or ""
    out = CaseOutcome(case.name, case.category or "", case.query, zero_result=zero, corpus=corpus)
    arguments = {"query": case.query, "limit": PAGE_SIZE, **(extra_filters or {}), **(case.filters or {})}
    across = scope != "corpus" and bool(corpus)
    if scope == "named" and corpus:
        arguments["corpus"] = corpus
    top: dict | None = None  # the first hit, which get_doc reads
    own_first = 0  # hits of the first page from the case's corpus (all of them unless across)
    chunk_pages: list[list[str]] = []
    file_pages: list[list[str]] = []
    cursor = None
    for _ in range(max(1, max_rounds)):
        args = {**arguments, "cursor": cursor} if cursor else arguments
        started = time.perf_counter()
        try:
            page = parse_page(target.call(SEARCH_TOOL, args))
        except (TargetError, ToolFailed) as exc:
            out.search_ms.append((time.perf_counter() - started) * 1000)
            out.error = f"search_docs: {exc}"[:1000]
            break
        out.search_ms.append((time.perf_counter() - started) * 1000)
        keys = [_keys(h, corpus if across else "") for h in page.hits]
        if not chunk_pages:
            own_first = sum(not _foreign(h, corpus if across else "") for h in page.hits)
            if page.coverage is not None:
                out.coverage, out.coverage_score = page.coverage["verdict"], page.coverage["score"]
        if top is None and page.hits:
            top = page.hits[0]
        chunks = [k[0] for k in keys]
        out.top_hits.extend(chunks)
        chunk_pages.append(m.match_chunks(chunks, exp_chunks, match))
        file_pages.append([k[1] for k in keys])
        found_chunk = not exp_chunks or m.first_relevant_round(chunk_pages, exp_chunks)
        found_file = not exp_files or m.first_relevant_round(file_pages, exp_files)
        if zero or (found_chunk and found_file) or not page.next_cursor:
            break
        cursor = page.next_cursor
    out.calls = len(out.search_ms)
    out.hit_count = len(chunk_pages[0]) if chunk_pages else 0
    first_chunks = chunk_pages[0] if chunk_pages else []
    first_files = file_pages[0] if file_pages else []
    all_chunks = [c for page in chunk_pages for c in page]
    all_files = [f for page in file_pages for f in page]
    if zero:
        if out.coverage and scope != "all":
            out.passed = not out.error and out.coverage in (NOT_COVERED, PARTIAL)
        else:  # no verdict, or one for every corpus at once: across corpora another may answer what this one does not
            out.passed = not out.error and own_first == 0
        out.metrics = {"chunk": None, "file": None, "unanswerable": 1.0 if out.passed else 0.0}
    else:
        out.metrics = {
            "chunk": m.rank_metrics(first_chunks, exp_chunks) if exp_chunks else None,
            "file": m.rank_metrics(m.file_ranking(first_files), exp_files) if exp_files else None,
        }
        if exp_chunks:
            out.chunk_rank = m.first_relevant_rank(all_chunks, exp_chunks)
            out.rounds = m.first_relevant_round(chunk_pages, exp_chunks)
        out.file_rank = m.first_relevant_rank(m.file_ranking(all_files), exp_files)
        out.file_rounds = m.first_relevant_round(file_pages, exp_files)
        if out.rank is not None and max_rank is not None and out.rank > max_rank:
            out.why = f"found at rank {out.rank}, and this case needs it within the first {max_rank}"
        out.why = verdict_failure(out.coverage, require_covered=require_covered) or out.why
        out.passed = not out.error and out.rank is not None and not out.why
    if time_get_doc and top is not None and target.has_tool(GET_DOC_TOOL):
        started = time.perf_counter()
        doc_args: dict[str, Any] = {"chunk_id": hit_chunk_id(top)}
        if isinstance(top.get("corpus"), str) and top["corpus"]:
            doc_args["corpus"] = top["corpus"]
        try:
            result = target.call(GET_DOC_TOOL, doc_args)
            if result.get("isError"):
                raise ToolFailed(" ".join(b.get("text", "") for b in result.get("content") or []
                                          if isinstance(b, dict))[:300])
        except (TargetError, ToolFailed) as exc:
            out.error = "; ".join(filter(None, [out.error, f"get_doc: {exc}"[:500]]))
            out.passed = False
        out.get_doc_ms = (time.perf_counter() - started) * 1000
    if across and not zero and target.has_tool(LIST_CORPORA_TOOL):  # a case no corpus answers has no right one
        started = time.perf_counter()
        try:
            out.resolution = resolve_corpus(target, case.query, corpus)
        except (TargetError, ToolFailed) as exc:
            out.resolution = {"expected": corpus, "first": None, "rank": None}
            out.error = "; ".join(filter(None, [out.error, f"list_corpora: {exc}"[:500]]))
            out.passed = False
        out.list_corpora_ms = (time.perf_counter() - started) * 1000
        out.metrics["resolution"] = out.resolution
    return out


def run_cases(target: Target, cases: Sequence[CaseLike], *, match: str = "exact", max_rounds: int = 3,
              extra_filters: dict | None = None, progress: Progress | None = None,
              scope: str = "corpus") -> list[CaseOutcome]:
    """Every case in order. Exceptions other than per-case tool failures (and Ctrl-C) propagate."""
    total = len(cases)
    if progress:
        progress(0, total)
    outcomes = []
    for n, case in enumerate(cases, start=1):
        outcomes.append(run_case(target, case, match=match, max_rounds=max_rounds, extra_filters=extra_filters,
                                 scope=scope))
        if progress:
            progress(n, total)
    return outcomes


def _group(outcomes: Sequence[CaseOutcome]) -> dict:
    zero = [o for o in outcomes if o.zero_result]
    unanswerable = None
    if zero:
        unanswerable = {"n": len(zero), "accuracy": round(sum(o.passed for o in zero) / len(zero), 4),
                        "not_covered": sum(o.coverage == NOT_COVERED for o in zero),
                        "partial": sum(o.coverage == PARTIAL for o in zero)}
    group = {
        "cases": len(outcomes),
        "passed": sum(o.passed for o in outcomes),
        "pass_rate": round(sum(o.passed for o in outcomes) / len(outcomes), 4) if outcomes else None,
        "errors": sum(bool(o.error) for o in outcomes),
        "chunk": m.aggregate([o.metrics.get("chunk") for o in outcomes]),
        "file": m.aggregate([o.metrics.get("file") for o in outcomes]),
        "rounds": {
            "chunk": m.rounds_summary([o.rounds for o in outcomes if o.has_chunks]),
            "file": m.rounds_summary([o.file_rounds for o in outcomes if o.has_files]),
        },
        "unanswerable": unanswerable,
        "coverage": m.coverage_summary([(not o.zero_result, o.coverage) for o in outcomes]),
    }
    resolution = m.resolution_summary([o.resolution["rank"] for o in outcomes if o.resolution is not None])
    if resolution:
        group["resolution"] = resolution
    return group


def summarize(outcomes: Sequence[CaseOutcome]) -> dict:
    """{"overall": group, "by_category": {category: group}}, and "by_corpus" when cases name their
    corpus; a group is what `_group` returns."""
    categories = sorted({o.category for o in outcomes})
    out = {
        "overall": _group(outcomes),
        "by_category": {c or "(none)": _group([o for o in outcomes if o.category == c]) for c in categories},
    }
    corpora = sorted({o.corpus for o in outcomes if o.corpus})
    if corpora:
        out["by_corpus"] = {c: _group([o for o in outcomes if o.corpus == c]) for c in corpora}
    return out


def latency(outcomes: Iterable[CaseOutcome]) -> dict:
    outcomes = list(outcomes)
    out = {
        "search": m.latency_summary([ms for o in outcomes for ms in o.search_ms]),
        "search_first": m.latency_summary([o.search_ms[0] for o in outcomes if o.search_ms]),
        "get_doc": m.latency_summary([o.get_doc_ms for o in outcomes if o.get_doc_ms is not None]),
    }
    resolving = [o.list_corpora_ms for o in outcomes if o.list_corpora_ms is not None]
    if resolving:
        out["list_corpora"] = m.latency_summary(resolving)
    return out
