"""Readers' feedback as the insights pages and the REST API read it: per period, per page, listed."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Count, QuerySet

from corpus.models import Corpus, Feedback

from .selectors import Period


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
