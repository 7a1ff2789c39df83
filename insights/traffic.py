"""A period's traffic for the corpus page: calls per day, per build and per tool, the top queries and
the pages read, in a fixed number of queries and cached briefly.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connections, transaction
from django.db.models import Case, CharField, Count, F, Max, Q, When
from django.db.models.fields.json import KT
from django.db.models.functions import TruncDay
from django.utils import timezone

from corpus.models import BuildRun

from .selectors import (
    COVERED,
    NOT_COVERED,
    PARTIAL,
    SEARCH,
    TOP_N,
    UNJUDGED,
    VERDICT_KEYS,
    ZERO,
    Period,
    low_q,
    old_unanswered_q,
    records,
    unanswered_q,
)


@dataclass
class Traffic:
    """What one scan of a period's records tells: totals, a row per day, per build and per tool."""

    summary: dict
    days: list[dict]
    builds: list[dict]
    tools: list[dict]


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def traffic(period: Period) -> Traffic:
    """One GROUP BY (day, build, tool, surface) over the period, folded in Python: the page's totals,
    calls per day, the trend across builds and the tools, for the price of one scan of the records."""
    query = (records(period).annotate(day=TruncDay("at")).values("day", "build_id", "tool", "surface")
             .annotate(calls=Count("id"), searches=Count("id", filter=SEARCH), zero=Count("id", filter=ZERO),
                       low=Count("id", filter=low_q(period)), errors=Count("id", filter=Q(is_error=True)),
                       covered=Count("id", filter=COVERED), partial=Count("id", filter=PARTIAL),
                       not_covered=Count("id", filter=NOT_COVERED), unjudged=Count("id", filter=UNJUDGED),
                       old_unanswered=Count("id", filter=old_unanswered_q(period))).order_by())
    with transaction.atomic(using=query.db):
        if connections[query.db].vendor == "postgresql":
            # The planner cannot tell how few (day, build, tool) groups there are and sorts every row,
            # spilling to disk with the default 4 MB; this query's own allowance lets it sort in memory.
            with connections[query.db].cursor() as cursor:
                cursor.execute("SET LOCAL work_mem = '32MB'")
        rows = list(query)
    keys = ("calls", "searches", "zero", "low", "errors", *VERDICT_KEYS)
    total = dict.fromkeys(keys, 0)
    by_day: dict = defaultdict(lambda: dict.fromkeys(keys, 0))
    by_build: dict = {}
    by_tool: dict = defaultdict(int)
    for r in rows:
        for k in keys:
            total[k] += r[k]
            by_day[r["day"].date()][k] += r[k]
        by_tool[(r["tool"], r["surface"])] += r["calls"]
        if r["build_id"] and r["searches"]:
            b = by_build.setdefault(r["build_id"], {"build_id": r["build_id"], "searches": 0, "zero": 0, "low": 0,
                                                    **dict.fromkeys(VERDICT_KEYS, 0),
                                                    "first": r["day"], "last": r["day"]})
            for k in ("searches", "zero", "low", *VERDICT_KEYS):
                b[k] += r[k]
            b["first"], b["last"] = min(b["first"], r["day"]), max(b["last"], r["day"])
    summary = {**total, "reads": total["calls"] - total["searches"],
               "zero_share": _share(total["zero"], total["searches"]),
               "low_share": _share(total["low"], total["searches"]),
               **{f"{k}_share": _share(total[k], total["searches"]) for k in VERDICT_KEYS}}
    start = timezone.localdate(period.since)
    days = []
    for n in range(period.days + 1):
        day = start + timedelta(days=n)
        d = by_day.get(day) or {}
        days.append({"day": day, "calls": d.get("calls", 0), "searches": d.get("searches", 0), "zero": d.get("zero", 0),
                     "low": d.get("low", 0), **{k: d.get(k, 0) for k in VERDICT_KEYS}})
    made = dict(BuildRun.objects.filter(build_id__in=list(by_build)).values_list("build_id", "created_at"))
    builds = sorted(by_build.values(), key=lambda b: (b["first"], made.get(b["build_id"]) or b["first"]))[-60:]
    for b in builds:
        b["zero_share"], b["low_share"] = b["zero"] / b["searches"], b["low"] / b["searches"]
        for k in VERDICT_KEYS:
            b[f"{k}_share"] = b[k] / b["searches"]
    tools = [{"tool": t, "surface": surface, "calls": n}
             for (t, surface), n in sorted(by_tool.items(), key=lambda kv: (-kv[1], kv[0]))][:20]
    return Traffic(summary=summary, days=days, builds=builds, tools=tools)


def summary(period: Period) -> dict:
    return traffic(period).summary


def per_day(period: Period) -> list[dict]:
    """One row per day of the period (days without calls included): searches, reads, zero-hit, low-score, and
    searches per verdict."""
    return traffic(period).days


def build_trend(period: Period) -> list[dict]:
    """Per build served during the period, oldest first: the share of its searches per verdict (and zero-hit,
    low-score)."""
    return traffic(period).builds


def top_queries(period: Period, limit: int = TOP_N) -> list[dict]:
    return list(records(period).filter(SEARCH).exclude(query="").values("query")
                .annotate(calls=Count("id"), zero=Count("id", filter=ZERO), low=Count("id", filter=low_q(period)),
                          not_covered=Count("id", filter=NOT_COVERED), partial=Count("id", filter=PARTIAL),
                          unanswered=Count("id", filter=unanswered_q(period)), last=Max("at"))
                .order_by("-calls", "-last")[:limit])


def cached_aggregates(period: Period) -> dict:
    """The corpus page's traffic, top queries and pages, kept DOCSMCP_INSIGHTS_CACHE_SECONDS (default 30) in
    the cache: an author going back and forth between a corpus and its gaps does not rescan the records."""
    seconds = settings.DOCSMCP_INSIGHTS_CACHE_SECONDS
    raw = f"{period.corpus}\0{period.version}\0{period.days}\0{period.include_eval}\0{period.low_score}"
    key = "insights:" + hashlib.sha256(raw.encode()).hexdigest()
    value = cache.get(key) if seconds > 0 else None
    if value is None:
        value = {"traffic": traffic(period), "top_queries": top_queries(period), "pages": page_reads(period)}
        if seconds > 0:
            cache.set(key, value, seconds)
    return value


def page_of(chunk_or_path: str) -> str:
    return chunk_or_path.split("#", 1)[0]


def page_reads(period: Period, limit: int = 10) -> dict:
    """Pages by reads (get_doc and every read tool) and by how often they led a search's hits, in one scan.

    `least`: pages that searches put first but agents rarely opened, fewest reads per appearance first.
    """
    item = Case(When(target="", then=KT("top__0__0")), default=F("target"), output_field=CharField())
    rows = (records(period).filter(is_error=False).filter(~SEARCH | Q(hits__gt=0)).annotate(item=item)
            .values("item").annotate(reads=Count("id", filter=~SEARCH), shown=Count("id", filter=SEARCH))
            .order_by("-reads", "-shown")[:5000])
    by_page: dict[str, dict] = defaultdict(lambda: {"reads": 0, "shown": 0})
    for row in rows:
        if row["item"]:
            page = by_page[page_of(row["item"])]
            page["reads"] += row["reads"]
            page["shown"] += row["shown"]
    found = [{"page": page, **v} for page, v in by_page.items()]
    most = sorted((r for r in found if r["reads"]), key=lambda r: (-r["reads"], r["page"]))[:limit]
    least = sorted((r for r in found if r["shown"]), key=lambda r: (r["reads"] / r["shown"], -r["shown"], r["page"]))
    return {"most": most, "least": least[:limit]}
