"""Which corpora a search across many ranks in full.

A full ranking costs about the same in every corpus, however small (four full-text queries,
the vector leg and the priors: 9 ms of CPU at 303 chunks, mostly Lance's fixed cost per
query), so ranking 20 corpora costs 20 searches. Routing first scores every candidate
corpus with cheap signals and ranks in full only the best few:

- the corpus's profile (name, description, page titles, build summary: list_corpora's BM25
  ranking, retrieval/corpus_summary.py), which reads no index;
- its affinity: the best cosine between the query and any of its chunks, one matrix product
  over the vectors already in memory (0.1 ms at 303 chunks, about 2.4 ms at 124.5k).
  Cosines compare only between corpora embedded by the same model, so each model's
  corpora are scaled among themselves;
- its lexical match: how much likelier the query's words and identifiers are in its text than in all
  candidates' (their shares of the (term, chunk) pairs in the build's lexicon, plus a share of the
  profile: corpus_summary.match_scores), for corpora without a semantic model's vectors.

Among a semantic model's corpora the affinity decides (scaled to [0, 1] over the candidates of
one model); the profile, scaled the same way, adds PROFILE_WEIGHT of it: enough to break near ties,
not to overturn a clear lead. Among three corpora (Kubernetes, Python docs and the sample) a weight
of 0.5 did overturn them (the profile's BM25 over page titles favours corpora of many pages) and
cost the sample 0.049 of MRR@10; at 0.1 each corpus stayed within 0.03 of asking it alone. Between
two corpora the weight never decides: on Kubernetes and the sample embedded with the local model,
ranking only the closest corpus put the question's corpus first for 97% of questions and kept
each corpus's MRR@10 within 0.01 of asking it alone (merging both corpora's rankings lost 0.11 on
Kubernetes). Word-hash cosines route badly (the question's corpus left out of the two ranked for
19% of questions on four real corpora), so corpora with word-hash or no vectors are routed by
their lexical match instead: the `keep` best of those too (docs/BENCHMARKS.md). A corpus with neither (a build made before lexicons) is always ranked.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from .index import Index
from .ranking import WORD_HASH_PROVIDERS

PROFILE_WEIGHT = 0.1


def affinity(index: Index, query_vector: np.ndarray | None) -> float | None:
    """The best cosine between the query and any chunk of `index`; None without vectors of a semantic model
    or a query vector."""
    if query_vector is None or not index.has_vectors:
        return None
    if (index.metadata.embedding or {}).get("provider") in WORD_HASH_PROVIDERS:
        return None  # word-hash vectors match words, not meaning: no better a router than the profile
    vectors = index.vectors()
    query = np.asarray(query_vector, dtype=np.float32).ravel()
    if vectors.dims != query.shape[0] or not len(index.catalog().id_order):
        return None
    return float(vectors.dots(query).max(initial=-1.0))


def _scaled(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]


def route(profile: Sequence[float], affinities: Sequence[float | None], models: Sequence[Hashable],
          keep: int, lexical: Sequence[float | None] | None = None,
          profile_weight: float = PROFILE_WEIGHT) -> list[int]:
    """Positions of the candidates to rank in full, in their original order: the `keep` best of those
    routed by a semantic model's vectors, the `keep` best of those routed by their lexical match, and
    every candidate with neither (nothing cheap tells whether it holds the answer).

    `profile[i]` is candidate i's profile score (0: no query word in it), `affinities[i]` its best
    cosine (None: no vectors), `models[i]` the embedding model that cosine comes from, and
    `lexical[i]` its lexical match (None: its build has no lexicon; -inf: no query term in it).
    """
    count = len(profile)
    if keep <= 0 or count <= keep:
        return list(range(count))
    lexical = lexical if lexical is not None else [None] * count
    scores: dict[int, float] = {}
    for model in dict.fromkeys(models):
        members = [i for i in range(count) if models[i] == model and affinities[i] is not None]
        if len(members) < 2:
            continue
        for i, value in zip(members, _scaled([affinities[i] for i in members]), strict=True):
            scores[i] = value
    chosen = set(range(count))
    if len(scores) > keep:
        top = max(profile[i] for i in scores)
        if top > 0:
            for i in scores:
                scores[i] += profile_weight * profile[i] / top
        chosen -= set(sorted(scores, key=lambda i: (-scores[i], i))[keep:])
    worded = [i for i in range(count) if i not in scores and lexical[i] is not None]
    if len(worded) > keep:
        chosen -= set(sorted(worded, key=lambda i: (-lexical[i], i))[keep:])
    return sorted(chosen)
