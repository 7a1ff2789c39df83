"""Reads of the query log for the insights pages and REST API: aggregated in SQL, a fixed number of
queries whatever the number of records (tests/insights/test_insights.py counts them).

A "search" is a record without a read target; a "read" opened a chunk or page (`target`). Eval runs'
calls (`is_eval`) are left out unless asked for.

"Unanswered" is the search's coverage verdict (retrieval/search/coverage.py, stored by the query log):
`not_covered`, and `partial` counted apart. Records made before verdicts existed have none; for them
the older rule stands in: zero-hit (it returned nothing) or low-score (its best hit scored under the
corpus's threshold, settings {"low_score": ...}, else DOCSMCP_INSIGHTS_LOW_SCORE). The pages say so.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connections, transaction
from django.db.models import Case, CharField, Count, F, Max, Min, Q, QuerySet, When, Window
from django.db.models.fields.json import KT
from django.db.models.functions import RowNumber, TruncDay
from django.utils import timezone

from corpus.models import BuildRun, Corpus, Feedback, QueryRecord

MAX_DAYS = 366
TOP_N = 20


@dataclass(frozen=True)
class Period:
    """Which records a page or an endpoint looks at."""

    corpus: str  # the corpus's own name (records name the corpus without its version)
    version: str = ""
    days: int = 30
    include_eval: bool = False
    low_score: float = 0.4
    until: datetime = field(default_factory=timezone.now)

    @property
    def since(self) -> datetime:
        return self.until - timedelta(days=self.days)


def low_score_threshold(corpus: Corpus) -> float:
    value = (corpus.family.settings or {}).get("low_score")
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return settings.DOCSMCP_INSIGHTS_LOW_SCORE


def period_for(corpus: Corpus, *, version: str = "", days: int = 30, include_eval: bool = False) -> Period:
    days = max(1, min(int(days), MAX_DAYS))
    if not version and corpus.version_of_id:
        version = corpus.version
    return Period(corpus=corpus.family.name, version=version, days=days, include_eval=include_eval,
                  low_score=low_score_threshold(corpus))


def records(period: Period) -> QuerySet:
    qs = QueryRecord.objects.filter(corpus=period.corpus, at__gte=period.since, at__lte=period.until)
    if not period.include_eval:
        qs = qs.filter(is_eval=False)
    if period.version:
        qs = qs.filter(version=period.version)
    return qs


SEARCH = Q(target="")
ZERO = SEARCH & Q(hits=0, is_error=False)


def _low(period: Period) -> Q:
    return SEARCH & Q(hits__gt=0, top_score__lt=period.low_score)


NOT_COVERED = SEARCH & Q(coverage=QueryRecord.NOT_COVERED)
PARTIAL = SEARCH & Q(coverage=QueryRecord.PARTIAL)
COVERED = SEARCH & Q(coverage=QueryRecord.COVERED)
UNJUDGED = SEARCH & Q(coverage="")  # made before verdicts (or by a writer that had none)


def _old_unanswered(period: Period) -> Q:
    """The fallback for records without a verdict: zero-hit or low-score."""
    return UNJUDGED & (ZERO | _low(period))


def unanswered_q(period: Period) -> Q:
    return NOT_COVERED | PARTIAL | _old_unanswered(period)


def unanswered(period: Period) -> QuerySet:
    """Searches the docs did not answer (verdict not_covered or partial; older records: zero-hit or
    low-score), with a query text."""
    return records(period).filter(unanswered_q(period)).exclude(query="")


# Searches by verdict; `unjudged` have none (older records), `old_unanswered` are those of them the
# zero-hit/low-score rule counts as unanswered.
VERDICT_KEYS = ("covered", "partial", "not_covered", "unjudged", "old_unanswered")


# --- the questions gap groups are made of ---------------------------------------------------------------

PER_CALLER = 50  # distinct questions of one anonymous caller considered per period: it cannot fill the list
PER_KEY = 500  # of a caller with an API key or token: keys are handed out by the admin, and a team's own agent
               # (one key) may well ask hundreds of real questions
MAX_CANDIDATES = 2000  # distinct questions considered per period, the strongest signal first
MAX_ROWS = 20_000  # (question, caller) rows read per period, the most asked first
KEYED_WEIGHT = 2.0  # a caller with an API key or a token (named) weighs two anonymous clients


def caller_of(key_name: str, client: str) -> str:
    """Who asked: the API key's or token's name, else the anonymous client (its MCP clientInfo or User-Agent).
    Records keep no network address, so anonymous callers sharing a client string count as one."""
    return f"key:{key_name}" if key_name else f"anonymous:{client}"


@dataclass
class Candidate:
    """One question of the period the docs did not answer, with who asked it and how."""

    query: str
    calls: int = 0  # unanswered searches of it
    not_covered: int = 0
    partial: int = 0
    unjudged: int = 0  # older searches without a verdict, unanswered by the zero-hit/low-score rule
    missing: int = 0  # docs_feedback reports with verdict "missing"
    votes: float = 0.0  # signal: each caller has one vote (a named one two) split over what it asked
    callers: set[str] = field(default_factory=set)
    first: datetime | None = None
    last: datetime | None = None

    @property
    def verdict(self) -> str:
        return QueryRecord.PARTIAL if self.partial and not (self.not_covered or self.unjudged or self.missing) \
            else QueryRecord.NOT_COVERED


def _capped(qs: QuerySet, **counts) -> list[dict]:
    """Per (question, caller) rows of `qs`: at most PER_KEY questions per caller (its most asked, then its
    latest), in one scan; `rank` is the question's place among its caller's."""
    rank = Window(RowNumber(), partition_by=[F("key_name"), F("client")], order_by=[F("n").desc(), F("last").desc()])
    rows = (qs.values("query", "key_name", "client").annotate(n=Count("id"), first=Min("at"), last=Max("at"), **counts)
            .annotate(rank=rank).filter(rank__lte=PER_KEY).order_by("-n", "-last"))
    return list(rows[:MAX_ROWS])


def gap_candidates(period: Period) -> list[Candidate]:
    """The period's unanswered questions and docs_feedback `missing` reports, strongest signal first: asked by
    more callers, by named callers (API keys, tokens) over anonymous ones, asked again over asked once. A
    caller's vote is split over everything it asked (up to PER_KEY questions counted), so 600 one-off
    questions from one address weigh what one question from one caller weighs; and an anonymous caller's
    questions past its PER_CALLER most asked are left out, so it cannot crowd others out. Two queries
    whatever the traffic."""
    searches = unanswered(period)
    reports = feedback(period).filter(verdict=Feedback.MISSING).exclude(query="").order_by()
    search_rows = _capped(searches, nc=Count("id", filter=Q(coverage=QueryRecord.NOT_COVERED)),
                          p=Count("id", filter=Q(coverage=QueryRecord.PARTIAL)))
    report_rows = _capped(reports)
    totals: dict[str, int] = defaultdict(int)
    for row in (*search_rows, *report_rows):
        totals[caller_of(row["key_name"], row["client"])] += row["n"]
    found: dict[str, Candidate] = {}
    for rows, is_report in ((search_rows, False), (report_rows, True)):
        for row in rows:
            if not row["key_name"] and row["rank"] > PER_CALLER:
                continue
            who = caller_of(row["key_name"], row["client"])
            c = found.get(row["query"]) or found.setdefault(row["query"], Candidate(query=row["query"]))
            if is_report:
                c.missing += row["n"]
            else:
                c.calls += row["n"]
                c.not_covered += row["nc"]
                c.partial += row["p"]
                c.unjudged += row["n"] - row["nc"] - row["p"]
            c.votes += (KEYED_WEIGHT if row["key_name"] else 1.0) * row["n"] / totals[who]
            c.callers.add(who)
            c.first = min(c.first, row["first"]) if c.first else row["first"]
            c.last = max(c.last, row["last"]) if c.last else row["last"]
    ranked = sorted(found.values(), key=lambda c: (-c.votes, -(c.calls + c.missing), -c.last.timestamp(), c.query))
    return ranked[:MAX_CANDIDATES]


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
                       low=Count("id", filter=_low(period)), errors=Count("id", filter=Q(is_error=True)),
                       covered=Count("id", filter=COVERED), partial=Count("id", filter=PARTIAL),
                       not_covered=Count("id", filter=NOT_COVERED), unjudged=Count("id", filter=UNJUDGED),
                       old_unanswered=Count("id", filter=_old_unanswered(period))).order_by())
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
                .annotate(calls=Count("id"), zero=Count("id", filter=ZERO), low=Count("id", filter=_low(period)),
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


# --- feedback -----------------------------------------------------------------------------------------


def feedback(period: Period, *, include_dismissed: bool = False) -> QuerySet:
    qs = Feedback.objects.filter(corpus=period.corpus, at__gte=period.since, at__lte=period.until)
    if period.version:
        qs = qs.filter(version=period.version)
    if not include_dismissed:
        qs = qs.filter(dismissed_at__isnull=True)
    return qs.order_by("-at", "-pk")


def feedback_by_page(period: Period, limit: int = 15) -> list[dict]:
    """Per page, the count of each verdict; the pages with most complaints first."""
    rows = feedback(period).order_by().values("filepath", "verdict").annotate(n=Count("id"))
    pages: dict[str, dict] = defaultdict(lambda: dict.fromkeys(Feedback.VERDICTS, 0))
    for r in rows:
        pages[r["filepath"] or ""][r["verdict"]] += r["n"]
    out = [{"page": page, "verdicts": counts, "total": sum(counts.values()),
            "negative": sum(n for v, n in counts.items() if v != Feedback.HELPFUL)} for page, counts in pages.items()]
    return sorted(out, key=lambda r: (-r["negative"], -r["total"], r["page"]))[:limit]


# --- REST lists -------------------------------------------------------------------------------------


def query_list(*, corpus: Corpus, version: str = "", since: datetime | None = None, zero_hits: bool | None = None,
               tool: str | None = None, include_eval: bool = False, coverage: str | None = None) -> QuerySet:
    """Logged calls of a corpus, newest first (a QuerySet, for pagination)."""
    qs = QueryRecord.objects.filter(corpus=corpus.family.name)
    version = version or (corpus.version if corpus.version_of_id else "")
    if version:
        qs = qs.filter(version=version)
    if since is not None:
        qs = qs.filter(at__gte=since)
    if not include_eval:
        qs = qs.filter(is_eval=False)
    if tool:
        qs = qs.filter(tool=tool)
    if zero_hits is True:
        qs = qs.filter(ZERO)
    elif zero_hits is False:
        qs = qs.exclude(ZERO)
    if coverage:
        qs = qs.filter(SEARCH & Q(coverage="" if coverage == "none" else coverage))
    return qs.order_by("-at", "-pk")


def feedback_list(*, corpus: Corpus, since: datetime | None = None, verdict: str | None = None,
                  include_dismissed: bool = False) -> QuerySet:
    qs = Feedback.objects.filter(corpus=corpus.family.name)
    if corpus.version_of_id:
        qs = qs.filter(version=corpus.version)
    if since is not None:
        qs = qs.filter(at__gte=since)
    if verdict:
        qs = qs.filter(verdict=verdict)
    if not include_dismissed:
        qs = qs.filter(dismissed_at__isnull=True)
    return qs.order_by("-at", "-pk")


def feedback_get(*, corpus: Corpus, feedback_id: int) -> Feedback:
    from .errors import FeedbackNotFound

    item = Feedback.objects.filter(corpus=corpus.family.name, pk=feedback_id).first()
    if item is None:
        raise FeedbackNotFound(f"feedback #{feedback_id} not found in corpus {corpus.family.name!r}; list its "
                               f"feedback (GET /api/v1/corpora/{corpus.family.name}/feedback) to find the ID")
    return item


def corpora_overview(days: int = 7) -> list[dict]:
    """Per visible corpus: calls, zero-hit share and feedback over the last `days` days, open gaps."""
    from corpus.selectors import corpus_list

    from .models import Gap

    since = timezone.now() - timedelta(days=days)
    names = [c.name for c in corpus_list() if not c.version_of_id]
    calls = {r["corpus"]: r for r in QueryRecord.objects.filter(corpus__in=names, at__gte=since, is_eval=False)
             .values("corpus").annotate(calls=Count("id"), searches=Count("id", filter=SEARCH),
                                        zero=Count("id", filter=ZERO), last=Max("at"),
                                        not_covered=Count("id", filter=NOT_COVERED),
                                        old=Count("id", filter=UNJUDGED & ZERO))}
    fb = dict(Feedback.objects.filter(corpus__in=names, at__gte=since, dismissed_at__isnull=True)
              .values("corpus").annotate(n=Count("id")).values_list("corpus", "n"))
    gaps = dict(Gap.objects.filter(corpus__in=names, status=Gap.OPEN).order_by().values("corpus")
                .annotate(n=Count("id"))
                .values_list("corpus", "n"))
    out = []
    for name in names:
        c = calls.get(name) or {}
        searches = c.get("searches") or 0
        out.append({"corpus": name, "calls": c.get("calls", 0), "searches": searches,
                    "zero_share": (c.get("zero", 0) / searches) if searches else None, "last": c.get("last"),
                    "not_covered_share": ((c.get("not_covered", 0) + c.get("old", 0)) / searches) if searches else None,
                    "feedback": fb.get(name, 0), "open_gaps": gaps.get(name, 0)})
    return out
