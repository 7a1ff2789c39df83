"""Gap groups: the questions a corpus's docs do not answer, grouped by meaning, with IDs that stay put.

Two halves, so a page view never pays for grouping:

- **grouping, off the request path** (`group_pending`, run by the `insights.group_gaps` task in a Celery
  worker or `manage.py serve`'s embedded one): takes the unanswered questions of the last GROUP_DAYS
  (gap_candidates.gap_candidates: searches judged `not_covered` or `partial`, older records by the
  zero-hit/low-score rule, and docs_feedback `missing` reports; strongest signal first, at most
  PER_CALLER per caller), and puts the ones no group holds yet into groups: embedded with the bundled
  local model whatever the corpus was built with (text similarity where it cannot load), compared with
  the stored groups' members and each other, and clustered by average linkage (insights/similarity.py).
  A new question joins a stored group or makes a new one; a stored group keeps its ID, its decisions
  and its links. At most MAX_NEW questions per run: a flood costs the worker a bounded run, not a page.
- **the list, on the request path** (`gap_list`): a fixed number of queries whatever the traffic (the
  candidates, their groups, the groups), ranked by signal (gap_candidates.gap_candidates, summed and ranked
  in the database; reused while the corpus has no new record, gap_candidates.recent_gap_candidates). Questions
  not grouped yet are counted as pending and a grouping run is queued (at most one a minute per corpus).

Changing the corpus's `gap_similarity` regroups its open groups that have no eval case or fix: the next
run dissolves them and groups their questions again. A dismissed or closed group stays hidden until a
question of it arrives after that decision; then it is open again. A group whose fix was applied is
closed by the first complete build after the approval (`settle`, run when a build ends and when a gap is read),
not by a visit to the corpus page.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import connections, transaction

from corpus.models import BuildRun, Corpus, FixProposal, QueryRecord

from .gap_candidates import Candidate, gap_candidates, recent_gap_candidates
from .models import Gap, GapQuery
from .selectors import Period, period_for
from .similarity import GROUP_THRESHOLD, TEXT_THRESHOLD, cluster, grouping_provider, pair_similarity

log = logging.getLogger("docsmcp.insights")

GROUP_DAYS = 90  # the questions a grouping run looks at
MAX_NEW = 500  # questions grouped per run, the strongest signal first
MAX_GROUPS = 300  # stored groups a run compares new questions with, the most recently seen
MAX_MEMBERS = 12  # of each stored group's questions, compared with the new ones
EXAMPLES = 5
TEXT_METHOD = "text"
SCHEDULE_EVERY = 60  # seconds between grouping runs queued by page views, per corpus
_VECTOR_CACHE_SIZE = 20_000
_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_vectors_lock = threading.Lock()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


@dataclass
class GapView:
    """A group as one period shows it."""

    gap: Gap
    count: int  # unanswered searches
    distinct: int
    examples: list[dict]  # {"query", "count"}, most asked first
    first_seen: datetime
    last_seen: datetime
    not_covered: int = 0
    partial: int = 0
    unjudged: int = 0  # older searches without a verdict (zero-hit or low-score)
    missing: int = 0  # docs_feedback "missing" reports
    callers: int = 0
    signal: float = 0.0

    @property
    def id(self) -> int:
        return self.gap.pk

    @property
    def verdict(self) -> str:
        return QueryRecord.PARTIAL if self.partial and not (self.not_covered or self.unjudged or self.missing) \
            else QueryRecord.NOT_COVERED


@dataclass
class GapList:
    groups: list[GapView]
    pending: int  # unanswered questions of the period no group holds yet (a grouping run is queued)
    unjudged: bool  # some searches of the period have no verdict: the zero-hit/low-score rule stood in


@dataclass
class GroupingReport:
    grouped: int
    new_groups: int
    regrouped: int  # open groups dissolved because gap_similarity or the method changed
    method: str


def _embed(provider, method: str, texts: list[str]) -> np.ndarray:
    """Vectors of `texts`, from a process-wide cache: a run embeds only texts it has not seen."""
    with _vectors_lock:
        found = {t: _vectors[(method, t)] for t in texts if (method, t) in _vectors}
    missing = list(dict.fromkeys(t for t in texts if t not in found))
    if missing:
        found.update(zip(missing, np.asarray(provider.embed(missing), dtype=np.float32), strict=True))
        with _vectors_lock:
            for text in missing:
                _vectors[(method, text)] = found[text]
            while len(_vectors) > _VECTOR_CACHE_SIZE:
                _vectors.popitem(last=False)
    return np.stack([found[t] for t in texts])


def _method() -> tuple[str, object | None]:
    provider = grouping_provider()
    if provider is None:
        return TEXT_METHOD, None
    return f"embedding:{provider.name}/{provider.model}", provider


def gap_similarity(corpus: Corpus, method: str) -> float:
    """The corpus's `gap_similarity` setting, else the calibrated default of the method."""
    value = (corpus.family.settings or {}).get("gap_similarity")
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return TEXT_THRESHOLD if method == TEXT_METHOD else GROUP_THRESHOLD


def _stale_groups(name: str, method: str, threshold: float):
    """Open groups made another way, with nothing an author did to them: the next run regroups them."""
    return (Gap.objects.filter(corpus=name, status=Gap.OPEN, eval_case__isnull=True, fix_proposal__isnull=True)
            .exclude(method=method, threshold=threshold))


def group_pending(corpus: Corpus, *, days: int = GROUP_DAYS) -> GroupingReport:
    """Group the unanswered questions no group holds yet (at most MAX_NEW, strongest first). Run off the
    request path; one run per corpus at a time."""
    name = corpus.family.name
    method, provider = _method()
    threshold = gap_similarity(corpus, method)
    with transaction.atomic():
        Corpus.objects.select_for_update().filter(pk=corpus.family.pk).first()  # one grouping per corpus
        _, deleted = _stale_groups(name, method, threshold).delete()
        regrouped = deleted.get(Gap._meta.label, 0)
        candidates = gap_candidates(period_for(corpus, days=days))
        owned = set(GapQuery.objects.filter(corpus=name, digest__in=[digest(c.query) for c in candidates])
                    .values_list("digest", flat=True))
        new = [c for c in candidates if digest(c.query) not in owned][:MAX_NEW]
        if not new:
            return GroupingReport(grouped=0, new_groups=0, regrouped=regrouped, method=method)
        stored = list(Gap.objects.filter(corpus=name, method=method).order_by("-last_seen", "-pk")[:MAX_GROUPS])
        members: dict[int, list[str]] = {g.pk: [] for g in stored}
        for gap_id, text in (GapQuery.objects.filter(gap__in=stored).order_by("gap_id", "pk")
                             .values_list("gap_id", "text")):
            if len(members[gap_id]) < MAX_MEMBERS:
                members[gap_id].append(text)
        texts: list[str] = []
        fixed: list[list[int]] = []
        for gap in stored:
            own = members[gap.pk] or [gap.representative]
            fixed.append(list(range(len(texts), len(texts) + len(own))))
            texts += own
        first_new = len(texts)
        texts += [c.query for c in new]
        vectors = None
        if provider is not None:
            try:
                vectors = _embed(provider, method, texts)
            except Exception as exc:  # a model that cannot run now costs grouping quality, not the run
                log.warning("insights: embedding %d questions of %s failed (%s); grouping by text", len(texts),
                            name, exc)
                method, threshold = TEXT_METHOD, gap_similarity(corpus, TEXT_METHOD)
        clusters = cluster(pair_similarity(texts, vectors), threshold=threshold, fixed=fixed)
        rows, created = [], 0
        for n, rows_of in enumerate(clusters):
            joined = [new[i - first_new] for i in sorted(rows_of) if i >= first_new]  # strongest first
            if not joined:
                continue
            if n < len(stored):
                gap = stored[n]
                gap.size += len(joined)
                gap.save(update_fields=["size", "updated_at"])
            else:
                lead = joined[0]  # candidates come strongest first: the representative is the most asked
                gap = Gap.objects.create(corpus=name, representative=lead.query[:2000], method=method,
                                         threshold=threshold, size=len(joined), verdict=lead.verdict,
                                         first_seen=lead.first, last_seen=lead.last)
                created += 1
            rows += [GapQuery(gap=gap, corpus=name, digest=digest(c.query), text=c.query) for c in joined]
        GapQuery.objects.bulk_create(rows, batch_size=500, ignore_conflicts=True)
    log.info("insights: grouped %d questions of %s (%d new groups, %d regrouped, %s)", len(new), name, created,
             regrouped, method)
    return GroupingReport(grouped=len(new), new_groups=created, regrouped=regrouped, method=method)


def schedule_grouping(corpus: Corpus) -> bool:
    """Queue a grouping run for the corpus unless one was queued in the last SCHEDULE_EVERY seconds. A queue
    that cannot be reached leaves the questions pending (the page says so), never fails the page."""
    from corpus.errors import TaskQueueUnavailable
    from corpus.queue import enqueue

    lock = f"insights:group:{corpus.family.pk}"
    if not cache.add(lock, 1, SCHEDULE_EVERY):
        return False
    try:
        enqueue("insights.group_gaps", corpus.family.pk)
    except TaskQueueUnavailable as exc:
        log.warning("insights: grouping the gaps of %s not queued: %s", corpus.family.name, exc)
        cache.delete(lock)
        return False
    return True


def gap_list(*, corpus: Corpus, period: Period, statuses: tuple[str, ...] = (Gap.OPEN,),
             verdict: str | None = None) -> GapList:
    """The period's gap groups in `statuses` (and of `verdict`, when given), strongest signal first: a fixed
    number of queries, no grouping. Queues a grouping run when questions are waiting for one."""
    name = period.corpus
    candidates = recent_gap_candidates(period)
    by_digest = {digest(c.query): c for c in candidates}
    owner = _owners(name, list(by_digest))
    pending = sum(1 for d in by_digest if d not in owner)
    if (pending or _needs_regroup(corpus)) and schedule_grouping(corpus) and settings.CELERY_TASK_ALWAYS_EAGER:
        # the run happened inside this call (tasks run inline: tests, one-off scripts): list its groups
        owner = _owners(name, list(by_digest))
        pending = sum(1 for d in by_digest if d not in owner)
    grouped: dict[int, list[Candidate]] = {}
    for d, c in by_digest.items():
        if d in owner:
            grouped.setdefault(owner[d], []).append(c)
    gaps = Gap.objects.filter(pk__in=list(grouped)).select_related("fix_proposal", "eval_case", "eval_case__suite")
    views, changed = [], []
    for gap in gaps:
        view = _view(gap, grouped[gap.pk])
        if _update(gap, view):
            changed.append(gap)
        if gap.status in statuses and (verdict is None or view.verdict == verdict):
            views.append(view)
    if changed:
        Gap.objects.bulk_update(changed, ["count", "distinct_queries", "examples", "first_seen", "last_seen",
                                          "status", "status_at", "verdict", "callers", "missing_reports",
                                          "updated_at"])
    views.sort(key=lambda v: (-v.signal, -(v.count + v.missing), -v.last_seen.timestamp(), v.gap.pk))
    return GapList(groups=views, pending=pending, unjudged=any(c.unjudged for c in candidates))


def _owners(corpus: str, digests: list[str]) -> dict[str, int]:
    """The group of each question that has one, by digest. On PostgreSQL the digests go as one array: two
    thousand `IN` parameters cost more to compile and send than the lookup itself."""
    connection = connections[GapQuery.objects.db]
    if connection.vendor != "postgresql":
        return dict(GapQuery.objects.filter(corpus=corpus, digest__in=digests).values_list("digest", "gap_id"))
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "digest", "gap_id" FROM "{GapQuery._meta.db_table}" '
                       'WHERE "corpus" = %s AND "digest" = ANY(%s)', [corpus, digests])
        return dict(cursor.fetchall())


def _needs_regroup(corpus: Corpus) -> bool:
    """True when open groups were made with another similarity or method than a run would use now. Cheap: the
    method is the local model's name when it is installed (nothing is loaded to know it)."""
    method = _method()[0]
    return _stale_groups(corpus.family.name, method, gap_similarity(corpus, method)).exists()


def _view(gap: Gap, members: list[Candidate]) -> GapView:
    members = sorted(members, key=lambda c: (-(c.calls + c.missing), c.query))
    callers = set().union(*(c.callers for c in members))
    return GapView(gap=gap, count=sum(c.calls for c in members), distinct=len(members),
                   examples=[{"query": c.query, "count": c.calls + c.missing} for c in members[:EXAMPLES]],
                   first_seen=min(c.first for c in members), last_seen=max(c.last for c in members),
                   not_covered=sum(c.not_covered for c in members), partial=sum(c.partial for c in members),
                   unjudged=sum(c.unjudged for c in members), missing=sum(c.missing for c in members),
                   callers=len(callers), signal=round(sum(c.votes for c in members), 6))


def gaps_refresh(*, corpus: Corpus, period: Period, statuses: tuple[str, ...] = (Gap.OPEN,)) -> list[GapView]:
    """Group what is pending now, in this process, then list: for scripts, benches and tests. Pages and the
    API call `gap_list`, which leaves grouping to a worker."""
    group_pending(corpus, days=max(period.days, GROUP_DAYS))
    return gap_list(corpus=corpus, period=period, statuses=statuses).groups


def _update(gap: Gap, view: GapView) -> bool:
    """Fold a period's view into the stored group; reopen or close it. True when anything changed."""
    fields = ("count", "distinct_queries", "examples", "first_seen", "last_seen", "status", "verdict", "callers",
              "missing_reports")
    before = tuple(getattr(gap, f) for f in fields)
    gap.count, gap.distinct_queries, gap.examples = view.count, view.distinct, view.examples
    gap.verdict, gap.callers, gap.missing_reports = view.verdict, view.callers, view.missing
    gap.first_seen = min(gap.first_seen, view.first_seen) if gap.first_seen else view.first_seen
    gap.last_seen = max(gap.last_seen, view.last_seen) if gap.last_seen else view.last_seen
    _settle_one(gap)
    if gap.status in (Gap.DISMISSED, Gap.CLOSED) and gap.status_at and view.last_seen > gap.status_at:
        gap.status, gap.closed_by = Gap.OPEN, ""  # new questions since the decision: the author should look again
    return before != tuple(getattr(gap, f) for f in fields)


def _closing_build(gap: Gap) -> BuildRun | None:
    proposal = gap.fix_proposal
    if gap.status != Gap.OPEN or proposal is None or proposal.status != FixProposal.APPLIED \
            or proposal.decided_at is None:
        return None
    return (BuildRun.objects.filter(corpus_id=proposal.corpus_id, status=BuildRun.COMPLETE,
                                    finished_at__gte=proposal.decided_at).order_by("finished_at").first())


def _settle_one(gap: Gap) -> bool:
    """Close an open group whose applied fix has been built, unless it was asked again since that build."""
    build = _closing_build(gap)
    if build is None or (gap.last_seen and gap.last_seen > build.finished_at):
        return False
    gap.status, gap.status_at, gap.closed_by = Gap.CLOSED, build.finished_at, build.build_id
    return True


def settle(corpus_name: str) -> int:
    """Close the corpus's open groups whose fixes a complete build now serves; called when a build ends."""
    open_with_fix = list(Gap.objects.filter(corpus=corpus_name, status=Gap.OPEN, fix_proposal__isnull=False)
                         .select_related("fix_proposal"))
    closed = [g for g in open_with_fix if _settle_one(g)]
    if closed:
        Gap.objects.bulk_update(closed, ["status", "status_at", "closed_by", "updated_at"])
    return len(closed)


def settle_gap(gap: Gap) -> Gap:
    """The group as it stands now: closed if a build served its fix since the last page view."""
    if _settle_one(gap):
        gap.save(update_fields=["status", "status_at", "closed_by", "updated_at"])
    return gap

