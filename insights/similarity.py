"""How alike two questions are, with or without an embedding model. Pure functions, no Django.

With vectors: cosine of L2-normalised embeddings. Without (an FTS-only corpus): the larger of the
token-set Jaccard (after a light suffix strip, so "deploy" meets "deployment") and the character
trigram Jaccard discounted by 0.8 (typos and glued words), which keeps "kubernetes helm chart" and
"helm charts on kubernetes" together and "rate limits" apart from "retry limits".

`assign` is a leader clustering (Hartigan, "Clustering Algorithms", 1975, ch. 3): each text joins
the most similar existing group above the threshold or starts a new one. It is order-dependent, so
callers feed the most asked texts first: they become the representatives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

TEXT_THRESHOLD = 0.4
# Cosine similarity above which two questions are one gap, per embedding provider (a corpus's
# settings {"gap_similarity": 0.8} override it). The hash provider hashes words, so it is close to
# the token overlap; semantic models put paraphrases high.
EMBEDDING_THRESHOLDS = {"hash": 0.4, "local": 0.72, "openai": 0.6}
DEFAULT_EMBEDDING_THRESHOLD = 0.7
_STOPWORDS = ("a an and are as at be by can do does for from how i in is it my of on or the to what when where "
              "which who why with you your we our this that there should would could will use using get set")
STOPWORDS = frozenset(_STOPWORDS.split(" "))
_SUFFIXES = ("ments", "ment", "ings", "ing", "ies", "es", "ed", "s")
_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> frozenset[str]:
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        out.add(word)
    return frozenset(out)


def trigrams(text: str) -> frozenset[str]:
    squashed = " ".join(_WORD.findall(text.lower()))
    padded = f"  {squashed} "
    return frozenset(padded[i:i + 3] for i in range(len(padded) - 2))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class TextSignature:
    tokens: frozenset[str]
    trigrams: frozenset[str]

    @classmethod
    def of(cls, text: str) -> TextSignature:
        return cls(tokens(text), trigrams(text))


def text_similarity(a: TextSignature, b: TextSignature) -> float:
    return max(jaccard(a.tokens, b.tokens), 0.8 * jaccard(a.trigrams, b.trigrams))


def embedding_threshold(provider: str) -> float:
    return EMBEDDING_THRESHOLDS.get(provider, DEFAULT_EMBEDDING_THRESHOLD)


@dataclass
class Group:
    """A group while texts are being assigned: `key` is the caller's (a gap's ID, or None for a new one)."""

    key: object
    signatures: list[TextSignature] = field(default_factory=list)  # text mode: representative + examples
    centroid: np.ndarray | None = None  # embedding mode: unit mean vector
    size: int = 0
    members: list[int] = field(default_factory=list)  # indices of the texts assigned in this call


def assign(texts: Sequence[str], groups: list[Group], *, threshold: float,
           vectors: np.ndarray | None = None, new_key: Callable[[int], object] = lambda i: None) -> list[Group]:
    """Put each text into the most similar group (>= threshold) or a new one; returns every group,
    the given ones first. With `vectors` (one unit row per text) groups compare by centroid cosine,
    else by the best text similarity to any of their signatures."""
    for i, text in enumerate(texts):
        best, best_sim = None, threshold
        if vectors is not None:
            vec = vectors[i]
            for group in groups:
                if group.centroid is None:
                    continue
                sim = float(np.dot(group.centroid, vec))
                if sim >= best_sim:
                    best, best_sim = group, sim
        else:
            sig = TextSignature.of(text)
            for group in groups:
                sim = max((text_similarity(sig, s) for s in group.signatures), default=0.0)
                if sim >= best_sim:
                    best, best_sim = group, sim
        if best is None:
            best = Group(key=new_key(i))
            groups.append(best)
        best.members.append(i)
        if vectors is not None:
            vec = vectors[i]
            mean = vec if best.centroid is None else (best.centroid * best.size + vec) / (best.size + 1)
            norm = float(np.linalg.norm(mean))
            best.centroid = mean / norm if norm else mean
        elif len(best.signatures) < 8:
            best.signatures.append(TextSignature.of(text))
        best.size += 1
    return groups
