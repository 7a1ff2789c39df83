"""How alike two questions are, and how gap questions are grouped. Pure functions, no Django.

Gap grouping (`pair_similarity` and `cluster`, below) embeds with the bundled local model, takes the
questions' shared domain out of the cosine, adds the overlap of their rarer words, and clusters by
average linkage. Without a model (an install without onnxruntime): the larger of the token-set
Jaccard (after a light suffix strip, so "deploy" meets "deployment") and the character trigram
Jaccard discounted by 0.8 (typos and glued words), which keeps "kubernetes helm chart" and "helm
charts on kubernetes" together and "rate limits" apart from "retry limits".

`assign`, a leader clustering (Hartigan, "Clustering Algorithms", 1975, ch. 3: each text joins the
most similar group above the threshold or starts one; order-dependent), was the grouping before;
bench/gap_groups.py keeps it as the baseline it is measured against.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("docsmcp.insights")

TEXT_THRESHOLD = 0.4  # text similarity at which two questions are one gap (no model)
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


# --- grouping a batch: average linkage over a hybrid similarity ------------------------------------------
#
# Measured on bench/answerability/gap-intents-*.jsonl (bench/gap_groups.py, docs/BENCHMARKS.md): the
# leader clustering above with the local model's raw cosine at 0.72 put paraphrases together at recall
# 0.24 (sample) and 0.11 (Kubernetes). Two things lift it. Gap questions of one corpus share its domain,
# so their raw cosines are all high ("... on Kubernetes"): taking the pool's mean vector out (shrunk for a
# small pool, where the mean is mostly the questions themselves) leaves what tells them apart. And a
# shared rare word ("Karpenter", "Klarna") is strong evidence the cosine of a small model underrates:
# the IDF-weighted overlap of the questions' words is added with weight GROUP_WORD_WEIGHT.
GROUP_WORD_WEIGHT = 0.4
GROUP_THRESHOLD = 0.37
GROUP_SHRINK = 20  # pool size at which half of the mean is taken out


def _idf(token_sets: Sequence[frozenset[str]]) -> dict[str, float]:
    df: dict[str, int] = {}
    for toks in token_sets:
        for word in toks:
            df[word] = df.get(word, 0) + 1
    n = len(token_sets)
    return {word: float(np.log(1 + n / d)) for word, d in df.items()}


def word_overlap(texts: Sequence[str]) -> np.ndarray:
    """IDF-weighted Jaccard of every pair's words, IDF over the batch itself; as matrix products, so a
    worker's run of 800 questions takes milliseconds, not a Python loop over 320,000 pairs."""
    toks = [tokens(t) for t in texts]
    idf = _idf(toks)
    vocab = {word: i for i, word in enumerate(idf)}
    n = len(texts)
    has = np.zeros((n, len(vocab)), dtype=np.float32)
    for row, words in enumerate(toks):
        has[row, [vocab[w] for w in words]] = 1.0
    weights = np.array([idf[w] for w in vocab], dtype=np.float32)
    shared = (has * weights) @ has.T
    own = has @ weights
    union = own[:, None] + own[None, :] - shared
    return np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)


def pair_similarity(texts: Sequence[str], vectors: np.ndarray | None) -> np.ndarray:
    """Similarity of every pair of `texts`: the hybrid above with vectors, else `text_similarity`."""
    n = len(texts)
    if vectors is None:
        sigs = [TextSignature.of(t) for t in texts]
        out = np.zeros((n, n), dtype=np.float32)
        for i in range(n):
            for j in range(i, n):
                out[i, j] = out[j, i] = text_similarity(sigs[i], sigs[j])
        return out
    vecs = np.asarray(vectors, dtype=np.float32)
    vecs = vecs - vecs.mean(axis=0) * (n / (n + GROUP_SHRINK))
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = vecs / np.where(norms > 0, norms, 1.0)
    return vecs @ vecs.T + GROUP_WORD_WEIGHT * word_overlap(texts)


def cluster(similarity: np.ndarray, *, threshold: float, fixed: Sequence[Sequence[int]] = ()) -> list[list[int]]:
    """Average-linkage agglomerative clustering (UPGMA, Sokal & Michener 1958) of the rows of `similarity`,
    stopping when no two clusters average `threshold`. Order-independent, unlike `assign`: the same
    questions make the same groups whatever order they arrived in.

    `fixed`: clusters that already exist (a stored group's members). They start together and two of them
    never merge, so a stored group keeps its ID and its members; new texts join them or each other.
    Returns clusters as lists of row indices, the fixed ones first (in their order).
    """
    n = similarity.shape[0]
    in_fixed = {i for members in fixed for i in members}
    clusters = [list(m) for m in fixed] + [[i] for i in range(n) if i not in in_fixed]
    k = len(clusters)
    if k == 0:
        return []
    sizes = np.array([len(c) for c in clusters], dtype=np.float64)
    member = np.zeros((k, n), dtype=np.float64)
    for c, rows in enumerate(clusters):
        member[c, rows] = 1.0
    link = (member @ similarity.astype(np.float64) @ member.T) / np.outer(sizes, sizes)
    is_fixed = np.zeros(k, dtype=bool)
    is_fixed[: len(fixed)] = True
    blocked = np.outer(is_fixed, is_fixed) | np.eye(k, dtype=bool)
    link[blocked] = -np.inf
    alive = np.ones(k, dtype=bool)
    while True:
        flat = int(np.argmax(link))
        a, b = divmod(flat, k)
        if not np.isfinite(link[a, b]) or link[a, b] < threshold:
            break
        a, b = min(a, b), max(a, b)  # keep the lower index: a fixed cluster keeps its place
        merged = (sizes[a] * link[a] + sizes[b] * link[b]) / (sizes[a] + sizes[b])
        clusters[a] += clusters[b]
        sizes[a] += sizes[b]
        is_fixed[a] = is_fixed[a] or is_fixed[b]
        alive[b] = False
        link[a, :], link[:, a] = merged, merged
        link[b, :], link[:, b] = -np.inf, -np.inf
        link[a, a] = -np.inf
        if is_fixed[a]:
            link[a, is_fixed], link[is_fixed, a] = -np.inf, -np.inf
    return [clusters[c] for c in range(k) if alive[c]]


def grouping_provider():
    """The bundled local model (retrieval/embeddings/local.py), whatever the corpus was built with: grouping
    runs off the request path, and the model ships in the package, so a full-text corpus groups by meaning
    too and nothing is sent to a paid API. None when it cannot load (the caller groups by text)."""
    import importlib.util

    from retrieval.embeddings import get_provider

    if importlib.util.find_spec("onnxruntime") is None:
        return None
    try:
        return get_provider("local")
    except Exception as exc:  # an install without onnxruntime or the weights: grouping by text still works
        log.warning("insights: the bundled model cannot load (%s: %s); questions are grouped by text",
                    type(exc).__name__, exc)
        return None
