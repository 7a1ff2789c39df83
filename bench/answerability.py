#!/usr/bin/env python
"""How well the coverage verdict tells questions the docs answer from those they do not.

    python bench/answerability.py --provider none --work /tmp/ans/none     # full text only
    python bench/answerability.py --provider local --work /tmp/ans/local   # with the local model
    python bench/answerability.py ... --dump evidence.jsonl               # each question's evidence, for calibration
    python bench/answerability.py --fit none.jsonl local.jsonl             # fit the verdict's models to dumps
    python bench/answerability.py --provider none --work /tmp/ans/held --held-out   # and PowerShell, not fitted on

Builds (or reuses, with a kept `--work`) the three corpora of bench/cross_corpus.py: Kubernetes and the
Python docs from ../shared/bench, and the sample corpus. Then asks each question of one corpus, in
process, and counts the verdicts per set:

- answerable: each corpus's own dev questions (Kubernetes, Python docs; the sample suite's identifier,
  paraphrase and filtered cases, with their filters);
- out-of-domain: each corpus's dev questions asked of the other corpora (Python coding questions of
  Kubernetes, and so on);
- near-miss: on-topic questions the docs never cover: ../shared/bench/answerability/sample-nearmiss.jsonl
  and the sample suite's `unanswered` and `zero-result` cases, asked of the sample corpus, and
  bench/answerability/k8s-nearmiss.jsonl (Kubernetes-ecosystem tools the Kubernetes docs never
  document) asked of Kubernetes.

Prints one table: per set and corpus, how many questions were judged covered / partial / not covered,
and the goals (out-of-domain not covered >= 95%; near-miss not covered or partial >= 70% and not covered
>= 50%; answerable not covered <= 5%). Exit code 0 either way: it measures, it does not judge.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cross_corpus  # noqa: E402  (bench/cross_corpus.py: the corpora and how they are built)

NEAR_MISS = {
    "sample": [SHARED / "answerability" / "sample-nearmiss.jsonl"],
    "k8s": [ROOT / "bench" / "answerability" / "k8s-nearmiss.jsonl"],
}
SAMPLE_UNANSWERABLE = {"unanswered", "zero-result"}
GOALS = {"out-of-domain": "not covered >= 95%", "near-miss": "not covered or partial >= 70%, not covered >= 50%",
         "answerable": "not covered <= 5%"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# A corpus the models were not fitted on (--held-out): PowerShell 7.5's reference, with its known-item questions.
HELD_OUT = ("powershell", SHARED / "scale" / "corpus-1", SHARED / "scale" / "queries.jsonl",
            "PowerShell 7.5 documentation: cmdlet reference (parameters, examples) and conceptual articles")


def question_sets(corpora=cross_corpus.CORPORA) -> list[tuple[str, str, str, dict]]:
    """(set, asked corpus, question, filters) for every question."""
    own: dict[str, list[tuple[str, dict]]] = {}
    near: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for name, _source, cases, _description in corpora:
        if cases.suffix == ".json":
            suite = json.loads(cases.read_text(encoding="utf-8"))
            own[name] = [(c["query"], c.get("filters") or {}) for c in suite
                         if c.get("category") not in SAMPLE_UNANSWERABLE]
            near[name] += [(c["query"], c.get("filters") or {}) for c in suite
                           if c.get("category") in SAMPLE_UNANSWERABLE]
        else:
            own[name] = [(c["query"], c.get("filters") or {}) for c in _jsonl(cases)]
        for path in NEAR_MISS.get(name, []):
            near[name] += [(c["query"], {}) for c in _jsonl(path)]
    out = []
    for name, questions in own.items():
        out += [("answerable", name, q, f) for q, f in questions]
        for other in own:
            if other != name:
                out += [("out-of-domain", other, q, {}) for q, _f in questions]
    for name, questions in near.items():
        out += [("near-miss", name, q, f) for q, f in questions]
    return out


def _logistic(features: np.ndarray, labels: np.ndarray, weights: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Weighted logistic regression by Newton's method: the coefficients, bias last."""
    x = np.hstack([features, np.ones((len(features), 1))])
    beta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        gradient = x.T @ (weights * (labels - p)) - ridge * beta
        hessian = -(x.T * (weights * p * (1 - p))) @ x - ridge * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def _design(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features (coverage.features_of: with the cosine when the dump has one), labels (1: answerable) and
    weights that give answerable and unanswerable questions equal say, and near-miss questions as much as
    out-of-domain ones (they are far fewer)."""
    from retrieval.search.coverage import Evidence, features_of

    semantic = any(r["cosine"] is not None for r in rows)  # a question with no hit has no cosine: 0
    fields = ("lexical", "cosine", "terms", "runner_up", "absent")
    features = np.array([features_of(Evidence(**{**{f: r.get(f, 0.0) for f in fields},
                                                 "cosine": (r["cosine"] or 0.0) if semantic else None}))
                         for r in rows], dtype=float)
    labels = np.array([r["set"] == "answerable" for r in rows], dtype=float)
    share = Counter(r["set"] for r in rows)
    weights = np.array([0.5 / share[r["set"]] if r["set"] != "answerable" else 1.0 / share[r["set"]]
                        for r in rows]) * len(rows)
    return features, labels, weights


ANSWERABLE_FLAGGED = 0.04  # the share of answerable questions the fitted model puts below `partial`


def _calibrated(features: np.ndarray, labels: np.ndarray, weights: np.ndarray, partial: float) -> np.ndarray:
    """The logistic model, its bias moved so that ANSWERABLE_FLAGGED of the answerable questions score
    below `partial`: the verdict's cut is chosen by the error it may make on questions the docs answer."""
    beta = _logistic(features, labels, weights)
    z = np.hstack([features, np.ones((len(features), 1))]) @ beta
    beta[-1] += math.log(partial / (1 - partial)) - float(np.quantile(z[labels == 1], ANSWERABLE_FLAGGED))
    return beta


def fit(paths: list[str], partial: float, covered: float) -> int:
    """Fits each dump's logistic model, prints its coefficients, and the verdicts they give on the questions
    fitted and, fitted on one half of the questions (alternate lines), on the other half."""
    for path in paths:
        rows = _jsonl(Path(path))
        features, labels, weights = _design(rows)
        beta = _calibrated(features, labels, weights, partial)
        names = "lexical, log(1 + terms), runner-up, absent" + (", cosine" if features.shape[1] == 5 else "")
        print(f"# {path}: {len(rows)} questions; coefficients {', '.join(f'{b:.3f}' for b in beta)} "
              f"({names}, bias)")
        halves = [np.arange(len(rows)) % 2 == k for k in (0, 1)]
        for label, train, test in (("all", np.ones(len(rows), bool), np.ones(len(rows), bool)),
                                   ("held-out half A", halves[0], halves[1]),
                                   ("held-out half B", halves[1], halves[0])):
            coefficients = _calibrated(features[train], labels[train], weights[train], partial)
            x = np.hstack([features[test], np.ones((int(test.sum()), 1))])
            p = 1.0 / (1.0 + np.exp(-x @ coefficients))
            sets = np.array([r["set"] for r in rows])[test]
            line = []
            for kind in ("answerable", "out-of-domain", "near-miss"):
                mine = p[sets == kind]
                line.append(f"{kind} n={len(mine)} not covered {np.mean(mine < partial):.3f} "
                            f"not covered or partial {np.mean(mine < covered):.3f}")
            print(f"  {label:<16} " + "; ".join(line))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", default="none", choices=["none", "local"])
    parser.add_argument("--work", help="directory for the database and builds, kept and reused")
    parser.add_argument("--dump", help="write each question's evidence and verdict to this JSONL file")
    parser.add_argument("--held-out", action="store_true", help="add PowerShell 7.5 (../shared/bench/scale/"
                        "corpus-1), which the models were not fitted on, as a fourth corpus")
    parser.add_argument("--fit", nargs="+", metavar="DUMP", help="fit the verdict's logistic models to dumps "
                                                                 "made with --dump, and print them")
    args = parser.parse_args(argv)
    if args.fit:
        from retrieval.search.coverage import DEFAULT_THRESHOLDS

        return fit(args.fit, DEFAULT_THRESHOLDS.partial, DEFAULT_THRESHOLDS.covered)
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="docsmcp-bench-ans-"))
    work.mkdir(parents=True, exist_ok=True)
    cross_corpus._configure(work, args.provider)
    import django

    django.setup()
    from django.core.management import call_command
    from tqdm import tqdm

    from corpus.serving import active_index, corpus_cards, embedder_for, resolve
    from corpus.serving.elsewhere import judged_among_corpora
    from retrieval.search.coverage import COVERAGE_DEPTH, coverage_of, evidence, hit_text
    from retrieval.search.engine import SearchRequest, search
    from retrieval.search.filters import plan_filters
    from retrieval.search.ranking import rank
    from retrieval.search.routing import affinity

    call_command("migrate", verbosity=0)
    corpora = (*cross_corpus.CORPORA, HELD_OUT) if args.held_out else cross_corpus.CORPORA
    for name, source, _cases, description in corpora:
        cross_corpus._build(name, source, description, args.provider)
    questions = question_sets(corpora)
    for name, *_rest in corpora:  # every corpus open, as serve's warming leaves a worker (the verdict among them)
        active_index(name)
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    counts_together: dict[tuple[str, str], Counter] = defaultdict(Counter)  # the corpora served together
    costs: dict[str, list[float]] = {"search": [], "verdict": []}
    shares: dict[str, dict[str, float]] = {}  # the question's share of list_corpora's evidence, per corpus
    dump = open(args.dump, "w", encoding="utf-8") if args.dump else None  # noqa: SIM115
    try:
        for kind, name, query, filters in tqdm(questions, desc="questions", unit="q", file=sys.stderr,
                                               disable=not sys.stderr.isatty()):
            index = active_index(name)
            embedder = embedder_for(index)
            started = time.thread_time()
            result = search(index, SearchRequest(query, filters), embedder=embedder, cursor_secret=b"bench")
            searched = time.thread_time()
            ranking = rank(index, query, plan_filters(index.metadata, filters), embedder=embedder)
            top = [p for p, _ in ranking.items[:COVERAGE_DEPTH]]
            texts = [hit_text(h.title, h.breadcrumb, h.heading, h.content) for h in result.hits[:len(top)]]
            again = time.thread_time()
            found = evidence(index, query, top, ranking.query_vector, texts if len(texts) == len(top) else None)
            coverage = coverage_of(found)
            together = judged_among_corpora(resolve(name), query, coverage, ranking.query_vector)
            counts_together[(kind, name)][together.verdict] += 1
            counts_together[(kind, "all")][together.verdict] += 1
            costs["search"].append(searched - started)
            costs["verdict"].append(time.thread_time() - again)
            counts[(kind, name)][coverage.verdict] += 1
            counts[(kind, "all")][coverage.verdict] += 1
            if dump:
                if query not in shares:
                    shares[query] = {card.name: card.score for card in corpus_cards(query)}
                affinities = {other: affinity(active_index(other), ranking.query_vector)
                              for other, *_rest in corpora} if ranking.query_vector is not None else {}
                dump.write(json.dumps({"set": kind, "corpus": name, "query": query, **asdict(found),
                                       "score": coverage.score, "verdict": coverage.verdict,
                                       "shares": shares[query], "affinities": affinities,
                                       "together": together.verdict}) + "\n")
    finally:
        if dump:
            dump.close()
    print(f"# provider {args.provider}; {len(questions)} questions")
    _table("each corpus alone (its own hits)", counts)
    _table("the corpora served together (a closer corpus of the server counts: `elsewhere`)", counts_together)
    search_ms, verdict_ms = (1000 * float(np.median(costs[k])) for k in ("search", "verdict"))
    print(f"# CPU per question, median: the whole search {search_ms:.2f} ms, of which the verdict "
          f"{verdict_ms:.2f} ms ({100 * verdict_ms / search_ms:.1f}%)")
    return 0


def _table(title: str, counts: dict[tuple[str, str], Counter]) -> None:
    print(f"# {title}")
    print(f"{'set':<14} {'corpus':<7} {'n':>5} | {'covered':>8} {'partial':>8} {'not cov.':>8} | goal")
    for kind in ("answerable", "out-of-domain", "near-miss"):
        for name in ("all", *sorted({n for k, n in counts if k == kind and n != "all"})):
            c = counts.get((kind, name))
            if not c:
                continue
            n = sum(c.values())
            pct = {v: 100.0 * c[v] / n for v in ("covered", "partial", "not_covered")}
            print(f"{kind:<14} {name:<7} {n:>5} | {pct['covered']:>7.1f}% {pct['partial']:>7.1f}% "
                  f"{pct['not_covered']:>7.1f}% | {GOALS[kind] if name == 'all' else ''}")


if __name__ == "__main__":
    sys.exit(main())
