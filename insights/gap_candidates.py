"""The questions gap groups are made of: distinct unanswered searches of a period, weighed by who asked,
with no caller able to fill the list alone; summed in one SQL query and reused while the corpus
has no new record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.db.models import Count, F, Max, Min, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from corpus.models import Feedback, QueryRecord

from .feedback_reads import feedback
from .selectors import Period, unanswered

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


def _capped(qs: QuerySet, **counts) -> QuerySet:
    """Per (question, caller) rows of `qs`: at most PER_KEY questions per caller (its most asked, then its
    latest), in one scan; `rank` is the question's place among its caller's."""
    rank = Window(RowNumber(), partition_by=[F("key_name"), F("client")], order_by=[F("n").desc(), F("last").desc()])
    rows = (qs.values("query", "key_name", "client").annotate(n=Count("id"), first=Min("at"), last=Max("at"), **counts)
            .annotate(rank=rank).filter(rank__lte=PER_KEY).order_by("-n", "-last"))
    return rows[:MAX_ROWS]


# Per question, from the (question, caller) rows of both sources: each caller's total over all its rows (an
# anonymous caller's past PER_CALLER included: they still split its vote), then the rows that count. The
# database sums and ranks, so a page reads MAX_CANDIDATES rows at most, not every (question, caller) pair.
# Votes are ranked to 9 places: shares summed in another order must still tie.
_CANDIDATES_SQL = """
WITH s AS ({searches}), r AS ({reports}),
pairs AS (
    SELECT "query", "key_name", "client", "rank", "n", "nc", "p", 0 AS "m", "first", "last" FROM s
    UNION ALL
    SELECT "query", "key_name", "client", "rank", 0, 0, 0, "n", "first", "last" FROM r),
asked AS (
    SELECT pairs.*, CASE WHEN "key_name" <> '' THEN 'key:' || "key_name" ELSE 'anonymous:' || "client" END AS "caller"
    FROM pairs),
shared AS (SELECT asked.*, SUM("n" + "m") OVER (PARTITION BY "caller") AS "total" FROM asked),
questions AS (
    SELECT "query", SUM("n") AS "calls", SUM("nc") AS "nc", SUM("p") AS "p", SUM("m") AS "missing",
           SUM(CASE WHEN "key_name" <> '' THEN {keyed} ELSE 1.0 END * ("n" + "m") / "total") AS "votes",
           MIN("first") AS "first", MAX("last") AS "last", {callers} AS "callers"
    FROM shared
    WHERE "key_name" <> '' OR "rank" <= {per_caller}
    GROUP BY "query")
SELECT "query", "calls", "nc", "p", "missing", "votes", {first}, {last}, "callers" FROM questions
ORDER BY ROUND("votes", 9) DESC, "calls" + "missing" DESC, "last" DESC, "query"{bytewise}
LIMIT {limit}
"""


def _moment(value) -> datetime:
    """A time of the candidates query: epoch seconds (PostgreSQL: read faster than a timestamptz, and a
    double keeps microseconds), else the text SQLite keeps (UTC)."""
    if isinstance(value, str):
        moment = datetime.fromisoformat(value)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime.fromtimestamp(value, UTC)


def gap_candidates(period: Period) -> list[Candidate]:
    """The period's unanswered questions and docs_feedback `missing` reports, strongest signal first: asked by
    more callers, by named callers (API keys, tokens) over anonymous ones, asked again over asked once. A
    caller's vote is split over everything it asked (up to PER_KEY questions counted), so 600 one-off
    questions from one address weigh what one question from one caller weighs; and an anonymous caller's
    questions past its PER_CALLER most asked are left out, so it cannot crowd others out. One query whatever
    the traffic, aggregated in the database: at most MAX_CANDIDATES rows come back."""
    reports = feedback(period).filter(verdict=Feedback.MISSING).exclude(query="").order_by()
    searches, search_params = _capped(unanswered(period), nc=Count("id", filter=Q(coverage=QueryRecord.NOT_COVERED)),
                                      p=Count("id", filter=Q(coverage=QueryRecord.PARTIAL))).query.sql_with_params()
    reported, report_params = _capped(reports).query.sql_with_params()
    connection = connections[QueryRecord.objects.db]
    if connection.vendor == "postgresql":
        first, last = 'EXTRACT(EPOCH FROM "first")::float8', 'EXTRACT(EPOCH FROM "last")::float8'
        callers, bytewise = 'array_agg(DISTINCT "caller")', ' COLLATE "C"'
    else:
        first, last = '"first"', '"last"'
        callers, bytewise = 'json_group_array(DISTINCT "caller")', ""  # SQLite compares bytes already
    sql = _CANDIDATES_SQL.format(searches=searches, reports=reported, keyed=float(KEYED_WEIGHT), first=first,
                                 last=last, callers=callers, per_caller=int(PER_CALLER), bytewise=bytewise,
                                 limit=int(MAX_CANDIDATES))
    with connection.cursor() as cursor:
        cursor.execute(sql, (*search_params, *report_params))
        rows = cursor.fetchall()
    found = []
    for query, calls, nc, p, missing, votes, first_at, last_at, who in rows:
        calls, nc, p = int(calls), int(nc), int(p)
        found.append(Candidate(query=query, calls=calls, not_covered=nc, partial=p, unjudged=calls - nc - p,
                               missing=int(missing), votes=float(votes),
                               callers=set(json.loads(who) if isinstance(who, str) else who),  # SQLite: JSON
                               first=_moment(first_at), last=_moment(last_at)))
    return found


def _newest(corpus: str) -> tuple:
    """What changes when a corpus's gap candidates may: its newest record and feedback, its latest dismissal.
    Index lookups (QueryRecord's (corpus, id) index), whatever the size of the log."""
    records_table, feedback_table = QueryRecord._meta.db_table, Feedback._meta.db_table
    with connections[QueryRecord.objects.db].cursor() as cursor:
        cursor.execute(f'SELECT (SELECT MAX("id") FROM "{records_table}" WHERE "corpus" = %s), '
                       f'(SELECT MAX("id") FROM "{feedback_table}" WHERE "corpus" = %s), '
                       f'(SELECT MAX("dismissed_at") FROM "{feedback_table}" WHERE "corpus" = %s)',
                       [corpus, corpus, corpus])
        return tuple(str(v) for v in cursor.fetchone())


CANDIDATES_SECONDS = 600  # a page's candidates are reused this long while no record arrives: a record that


def recent_gap_candidates(period: Period) -> list[Candidate]:
    """`gap_candidates` of a period that ends now, reused while the corpus has no new record, feedback or
    dismissal (one indexed query to know): an author reloading the gap list with no new traffic does not
    rescan the log. DOCSMCP_INSIGHTS_CACHE_SECONDS=0 turns the reuse off."""
    if settings.DOCSMCP_INSIGHTS_CACHE_SECONDS <= 0:
        return gap_candidates(period)
    raw = (f"{period.corpus}\0{period.version}\0{period.days}\0{period.include_eval}\0{period.low_score}\0"
           + "\0".join(_newest(period.corpus)))
    key = "insights:gaps:" + hashlib.sha256(raw.encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = gap_candidates(period)
        cache.set(key, found, CANDIDATES_SECONDS)
    return found
