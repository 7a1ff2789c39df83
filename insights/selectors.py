"""Reads of the query log for the insights pages and REST API: aggregated in SQL, a fixed number of
queries whatever the number of records (tests/insights/test_insights.py counts them).

A "search" is a record without a read target; a "read" opened a chunk or page (`target`). Eval runs'
calls (`is_eval`) are left out unless asked for.

"Unanswered" is the search's coverage verdict (retrieval/search/coverage.py, stored by the query log):
`not_covered`, and `partial` counted apart. Records made before verdicts existed have none; for them
the older rule stands in: zero-hit (it returned nothing) or low-score (its best hit scored under the
corpus's threshold, settings {"low_score": ...}, else DOCSMCP_INSIGHTS_LOW_SCORE). The pages say so.

This module holds the period and the record filters every read shares, and the REST lists of calls
and corpora; the reads by subject are `traffic`, `gap_candidates` and `feedback_reads`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from corpus.models import Corpus, Feedback, QueryRecord

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


def low_q(period: Period) -> Q:
    return SEARCH & Q(hits__gt=0, top_score__lt=period.low_score)


NOT_COVERED = SEARCH & Q(coverage=QueryRecord.NOT_COVERED)
PARTIAL = SEARCH & Q(coverage=QueryRecord.PARTIAL)
COVERED = SEARCH & Q(coverage=QueryRecord.COVERED)
UNJUDGED = SEARCH & Q(coverage="")  # made before verdicts (or by a writer that had none)


def old_unanswered_q(period: Period) -> Q:
    """The fallback for records without a verdict: zero-hit or low-score."""
    return UNJUDGED & (ZERO | low_q(period))


def unanswered_q(period: Period) -> Q:
    return NOT_COVERED | PARTIAL | old_unanswered_q(period)


def unanswered(period: Period) -> QuerySet:
    """Searches the docs did not answer (verdict not_covered or partial; older records: zero-hit or
    low-score), with a query text."""
    return records(period).filter(unanswered_q(period)).exclude(query="")


# Searches by verdict; `unjudged` have none (older records), `old_unanswered` are those of them the
# zero-hit/low-score rule counts as unanswered.
VERDICT_KEYS = ("covered", "partial", "not_covered", "unjudged", "old_unanswered")


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
