"""Gap groups: the corpus's unanswered questions grouped by meaning, recomputed when they are shown.

`gaps_refresh` takes the distinct texts of the period's zero-hit and low-score searches (the most
recent MAX_TEXTS), looks up the group each known text already belongs to (GapQuery), and assigns
only the new texts: embedded with the corpus's query embedder (the same model its index was built
with) when it has one, else compared by text similarity (insights/similarity.py). A new text joins
the most similar group, old or new, above the threshold, or starts its own group. So a group keeps
its ID, its decisions and its links while it grows.

A dismissed or closed group (closed: its fix proposal was applied) stays hidden until a query of it
arrives after that decision; then it is open again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import Count, Max, Min

from corpus.models import Corpus, FixProposal

from . import served
from .models import Gap, GapQuery
from .selectors import Period, unanswered
from .similarity import TEXT_THRESHOLD, Group, TextSignature, assign, embedding_threshold

log = logging.getLogger("docsmcp.insights")

MAX_TEXTS = 500  # distinct unanswered texts clustered per refresh, the most recent
MAX_GROUPS = 2000  # existing groups a new text is compared with, the most recently seen
EXAMPLES = 5
TEXT_METHOD = "text"
_VECTOR_CACHE_SIZE = 20_000
_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_vectors_lock = threading.Lock()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


@dataclass
class GapView:
    """A group as one period shows it."""

    gap: Gap
    count: int
    distinct: int
    examples: list[dict]  # {"query", "count"}, most asked first
    first_seen: datetime
    last_seen: datetime

    @property
    def id(self) -> int:
        return self.gap.pk


def _embed(provider, method: str, texts: list[str]) -> np.ndarray:
    """Unit vectors of `texts`, from a process-wide cache: a page view embeds only texts never seen."""
    with _vectors_lock:
        found = {t: _vectors[(method, t)] for t in texts if (method, t) in _vectors}
    missing = [t for t in texts if t not in found]
    if missing:
        found.update(zip(missing, np.asarray(provider.embed(missing), dtype=np.float32), strict=True))
        with _vectors_lock:
            for text in missing:
                _vectors[(method, text)] = found[text]
            while len(_vectors) > _VECTOR_CACHE_SIZE:
                _vectors.popitem(last=False)
    return np.stack([found[t] for t in texts])


def gap_similarity(corpus: Corpus, method: str) -> float:
    value = (corpus.family.settings or {}).get("gap_similarity")
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return TEXT_THRESHOLD if method == TEXT_METHOD else embedding_threshold(method.split(":", 1)[1].split("/")[0])


def _assign_new(corpus: Corpus, name: str, new: list[str]) -> None:
    """Group the texts no group holds yet (most asked first), creating groups as needed."""
    index = served.active_index(corpus.family.name)
    provider = served.embedder(index)
    method = f"embedding:{provider.name}/{provider.model}" if provider is not None else TEXT_METHOD
    vectors = None
    if provider is not None:
        try:
            vectors = _embed(provider, method, new)
        except Exception as exc:  # a provider that cannot embed now costs the grouping quality, not the page
            log.warning("insights: embedding %d queries of %s failed (%s); grouping by text", len(new), name, exc)
            method, vectors = TEXT_METHOD, None
    threshold = gap_similarity(corpus, method)
    existing = list(Gap.objects.filter(corpus=name, method=method).order_by("-last_seen", "-pk")[:MAX_GROUPS])
    groups = [Group(key=g, size=g.size,
                    centroid=np.asarray(g.centroid, dtype=np.float32) if g.centroid else None,
                    signatures=[TextSignature.of(t) for t in [g.representative, *(e["query"] for e in g.examples)]])
              for g in existing]
    known = len(groups)
    groups = assign(new, groups, threshold=threshold, vectors=vectors)
    members: list[GapQuery] = []
    changed: list[Gap] = []
    for n, group in enumerate(groups):
        if not group.members:
            continue
        if n >= known:
            gap = Gap.objects.create(corpus=name, representative=new[group.members[0]][:2000], method=method,
                                     size=group.size)
        else:
            gap = group.key
            gap.size = group.size
            changed.append(gap)
        if vectors is not None:
            gap.centroid = [round(float(v), 6) for v in group.centroid]
            if n >= known:
                changed.append(gap)
        members += [GapQuery(gap=gap, corpus=name, digest=digest(new[i]), text=new[i]) for i in group.members]
    if changed:
        Gap.objects.bulk_update(changed, ["size", "centroid"])
    GapQuery.objects.bulk_create(members, batch_size=500, ignore_conflicts=True)


def gaps_refresh(*, corpus: Corpus, period: Period, statuses: tuple[str, ...] = (Gap.OPEN,)) -> list[GapView]:
    """The period's gap groups in `statuses`, most asked first; new texts are grouped and stored."""
    name = period.corpus
    rows = list(unanswered(period).values("query").annotate(n=Count("id"), first=Min("at"), last=Max("at"))
                .order_by("-last")[:MAX_TEXTS])
    if not rows:
        return []
    by_digest = {digest(r["query"]): r for r in rows}
    owner = dict(GapQuery.objects.filter(corpus=name, digest__in=list(by_digest)).values_list("digest", "gap_id"))
    new = [r["query"] for d, r in by_digest.items() if d not in owner]
    if new:
        new.sort(key=lambda t: -by_digest[digest(t)]["n"])
        with transaction.atomic():
            Corpus.objects.select_for_update().filter(pk=corpus.family.pk).first()  # one grouping per corpus
            _assign_new(corpus, name, new)
        owner = dict(GapQuery.objects.filter(corpus=name, digest__in=list(by_digest))
                     .values_list("digest", "gap_id"))
    grouped: dict[int, list[dict]] = {}
    for d, row in by_digest.items():
        if d in owner:
            grouped.setdefault(owner[d], []).append(row)
    gaps = Gap.objects.filter(pk__in=list(grouped)).select_related("fix_proposal", "eval_case", "eval_case__suite")
    views, changed = [], []
    for gap in gaps:
        rows_of = sorted(grouped[gap.pk], key=lambda r: (-r["n"], r["query"]))
        view = GapView(gap=gap, count=sum(r["n"] for r in rows_of), distinct=len(rows_of),
                       examples=[{"query": r["query"], "count": r["n"]} for r in rows_of[:EXAMPLES]],
                       first_seen=min(r["first"] for r in rows_of), last_seen=max(r["last"] for r in rows_of))
        if _update(gap, view):
            changed.append(gap)
        if gap.status in statuses:
            views.append(view)
    if changed:
        Gap.objects.bulk_update(changed, ["count", "distinct_queries", "examples", "first_seen", "last_seen",
                                          "status", "status_at", "updated_at"])
    return sorted(views, key=lambda v: (-v.count, -v.last_seen.timestamp(), v.gap.pk))


def _update(gap: Gap, view: GapView) -> bool:
    """Fold a period's view into the stored group; reopen or close it. True when anything changed."""
    before = (gap.count, gap.distinct_queries, gap.examples, gap.first_seen, gap.last_seen, gap.status)
    gap.count, gap.distinct_queries, gap.examples = view.count, view.distinct, view.examples
    gap.first_seen = min(gap.first_seen, view.first_seen) if gap.first_seen else view.first_seen
    gap.last_seen = max(gap.last_seen, view.last_seen) if gap.last_seen else view.last_seen
    proposal = gap.fix_proposal
    if gap.status == Gap.OPEN and proposal is not None and proposal.status == FixProposal.APPLIED \
            and proposal.decided_at and view.last_seen <= proposal.decided_at:
        gap.status, gap.status_at = Gap.CLOSED, proposal.decided_at
    elif gap.status in (Gap.DISMISSED, Gap.CLOSED) and gap.status_at and view.last_seen > gap.status_at:
        gap.status = Gap.OPEN  # new queries since the decision: the author should look again
    return before != (gap.count, gap.distinct_queries, gap.examples, gap.first_seen, gap.last_seen, gap.status)
