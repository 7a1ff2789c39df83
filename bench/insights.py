#!/usr/bin/env python
"""How long the insights pages and REST endpoints take with 100,000 logged calls.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/docsmcp .venv/bin/python bench/insights.py
    .venv/bin/python bench/insights.py --records 100000 --repeat 5

Creates a throw-away test database (test_<name> beside DATABASE_URL's, migrated, dropped at the
end), builds the sample corpus (hash embeddings) under a temporary directory, records `--records`
calls over 30 days (searches of a few thousand distinct questions, a share of them zero-hit or
low-score, reads, eval-run calls) and 2,000 feedback items, then requests each page and endpoint
as a staff user through Django's test client: the first corpus page load (which queues the grouping
of every unanswered text not grouped yet, and groups none itself) and the grouping run a worker then
makes, separately; then `--repeat` warm loads of each. Prints one line per URL: median and max
milliseconds, with the corpus page's aggregate cache off, then on.

`--flood 600` then replays issue #47's flood: 600 distinct junk questions judged not covered, from
one anonymous client within 11 s, and prints the next page load, the worker's grouping run, and
where the period's strongest real group ranks in the list before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from retrieval.boot import boot  # noqa: E402

boot()  # as the server and the build worker do

TOPICS = ["retry", "backoff", "webhook", "signature", "payment", "refund", "currency", "pagination", "rate limit",
          "idempotency", "api key", "sdk", "python", "typescript", "error", "timeout", "invoice", "customer"]
MISSING = ["kubernetes", "helm", "graphql", "terraform", "okta", "saml", "blockchain", "ios", "android", "kafka",
           "grpc", "oauth device flow", "soc2", "hipaa", "data residency"]
FORMS = ["how do I {0}", "{0} example", "configure {0}", "{0} {1}", "what is {0}", "{0} with {1} in production",
         "troubleshoot {0} {1}", "{1} and {0}"]


def _questions(rng: random.Random, words: list[str], n: int) -> list[str]:
    """Up to `n` distinct questions over `words` and the corpus's topics."""
    pool = sorted({form.format(a, b) for form in FORMS for a in words or TOPICS for b in TOPICS if a != b})
    rng.shuffle(pool)
    return pool[:n]


def _populate(n: int, rng: random.Random) -> None:
    from django.utils import timezone

    from corpus.models import Feedback, QueryRecord

    answered = _questions(rng, [], 1200)
    unanswered = _questions(rng, MISSING, 1500)
    pages = [f"guides/page{i}.md" for i in range(60)]
    now = timezone.now()
    builds = ["build-a", "build-b", "build-c"]
    rows = []
    for _ in range(n):
        at = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
        build = builds[min(2, int((now - at).total_seconds() // (10 * 86400)))]
        kind = rng.random()
        base = {"at": at, "corpus": "sample", "version": "3.2", "build_id": build, "profile": "docs",
                "surface": "http", "client": rng.choice(["claude-code/1.0", "cursor/0.45", "codex/0.2"]),
                "key_name": "ci", "latency_ms": rng.uniform(2, 40), "is_eval": rng.random() < 0.05}
        if kind < 0.3:
            page = rng.choice(pages)
            rows.append(QueryRecord(tool="get_doc", target=f"{page}#section-{rng.randint(1, 5)}", hits=1, **base))
        elif kind < 0.45:
            rows.append(QueryRecord(tool="search_docs", query=rng.choice(unanswered), hits=0, **base))
        else:
            score = rng.uniform(0.1, 1.0)
            top = [[f"{rng.choice(pages)}#s{j}", round(score - j * 0.05, 3)] for j in range(5)]
            rows.append(QueryRecord(tool="search_docs", query=rng.choice(answered), hits=10, top=top,
                                    top_score=score, **base))
        if len(rows) >= 5000:
            QueryRecord.objects.bulk_create(rows)
            rows = []
    QueryRecord.objects.bulk_create(rows)
    Feedback.objects.bulk_create([
        Feedback(at=now - timedelta(seconds=rng.uniform(0, 30 * 86400)), corpus="sample",
                 verdict=rng.choice(Feedback.VERDICTS), filepath=(page := rng.choice(pages)), chunk_id=f"{page}#s1",
                 query=rng.choice(answered), comment="the example is out of date" if rng.random() < 0.5 else "")
        for _ in range(2000)], batch_size=1000)


def _flood(n: int, timed, corpus) -> None:
    from django.core.cache import cache
    from django.utils import timezone

    from corpus.models import QueryRecord
    from insights import selectors
    from insights.gaps import gap_list, group_pending

    period = selectors.period_for(corpus)
    before = gap_list(corpus=corpus, period=period).groups
    top = before[0].gap.pk if before else None
    now = timezone.now()
    QueryRecord.objects.bulk_create([
        QueryRecord(at=now - timedelta(seconds=11 * i / n), corpus="sample", version="3.2", build_id="build-c",
                    profile="docs", tool="search_docs", surface="http", query=f"zq{i} junk{i * 7} xx{i * 13}", hits=0,
                    top=[], coverage="not_covered", coverage_score=0.0, latency_ms=2.0, client="flood/1.0")
        for i in range(n)], batch_size=1000)
    cache.clear()  # a grouping run may be queued again
    print(f"flood: {n} distinct junk questions from one client in 11 s")
    print(f"  {'/insights/sample/ (next load: queues the grouping)':70} {timed('/insights/sample/'):8.0f} ms")
    print(f"  {'/api/v1/corpora/sample/gaps':70} {timed('/api/v1/corpora/sample/gaps'):8.0f} ms")
    start = time.perf_counter()
    report = group_pending(corpus)
    print(f"  {'the worker grouping run (' + str(report.grouped) + ' questions)':70} "
          f"{(time.perf_counter() - start) * 1000:8.0f} ms")
    print(f"  {'/insights/sample/ (after the run)':70} {timed('/insights/sample/'):8.0f} ms")
    after = gap_list(corpus=corpus, period=selectors.period_for(corpus)).groups  # a period that holds the flood
    rank = next((i for i, v in enumerate(after) if v.gap.pk == top), None)
    junk = sum(1 for v in after if v.gap.representative.startswith("zq"))
    print(f"  strongest real group before the flood ranks {None if rank is None else rank + 1} of {len(after)} after "
          f"it; junk groups listed: {junk}; first junk group at rank "
          f"{next((i + 1 for i, v in enumerate(after) if v.gap.representative.startswith('zq')), None)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the test database afterwards (to EXPLAIN queries)")
    parser.add_argument("--flood", type=int, default=0, help="junk questions from one caller, replayed at the end")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/docsmcp")
    os.environ["DOCSMCP_QUERY_LOG"] = "off"
    os.environ["CELERY_BROKER_URL"] = ""
    work = Path(tempfile.mkdtemp(prefix="bench-insights-"))
    os.environ["DOCSMCP_INDEX_ROOT"] = str(work / "indexes")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    settings.ALLOWED_HOSTS = ["*"]
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        from django.contrib.auth import get_user_model

        from corpus.models import BuildRun, Corpus
        from retrieval.embeddings import get_provider
        from retrieval.format.metadata import read_metadata
        from retrieval.ingest.build import BuildRequest, build_index

        out = work / "sample-build"
        build_index(BuildRequest(ROOT / "corpus" / "sample_docs", out, "sample-build", "sample",
                                 provider=get_provider("hash"), workers=1))
        metadata = read_metadata(out)
        corpus = Corpus.objects.create(name="sample", source_dir=str(ROOT / "corpus" / "sample_docs"),
                                       version="3.2", settings={"embedding_provider": "hash"})
        build = BuildRun.objects.create(corpus=corpus, build_id=metadata.build_id, kind=BuildRun.KIND_FULL,
                                        status=BuildRun.COMPLETE, index_path=str(out), embedding_provider="hash",
                                        embedding=metadata.embedding, stats=metadata.stats)
        corpus.active_build = build  # build_activate would also tell serving processes (a broker): none here
        corpus.save(update_fields=["active_build"])
        t0 = time.perf_counter()
        _populate(args.records, random.Random(7))
        print(f"recorded {args.records} calls in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        user = get_user_model().objects.create_superuser("bench", "bench@example.com", "x")
        client = Client()
        client.force_login(user)

        def timed(url: str) -> float:
            start = time.perf_counter()
            response = client.get(url)
            elapsed = (time.perf_counter() - start) * 1000
            assert response.status_code == 200, (url, response.status_code, response.content[:300])
            return elapsed

        print(f"{'/insights/sample/ (first load: queues the grouping)':70} {timed('/insights/sample/'):8.0f} ms")
        from corpus.models import Corpus as CorpusModel
        from insights.gaps import group_pending
        from insights.models import Gap

        start = time.perf_counter()
        report = group_pending(CorpusModel.objects.get(name="sample"))
        print(f"{'the worker grouping run (' + str(report.grouped) + ' questions, ' + report.method + ')':70} "
              f"{(time.perf_counter() - start) * 1000:8.0f} ms")

        gap = Gap.objects.filter(corpus="sample").order_by("-count").first()
        urls = ["/insights/", "/insights/sample/", "/insights/sample/?days=7", "/insights/sample/?days=365&eval=1",
                f"/insights/sample/gaps/{gap.pk}/", "/api/v1/corpora/sample/queries",
                "/api/v1/corpora/sample/queries?zero_hits=true&tool=search_docs",
                "/api/v1/corpora/sample/feedback", "/api/v1/corpora/sample/gaps"]
        print(f"{Gap.objects.count()} gap groups; {args.repeat} warm loads each: median / max", file=sys.stderr)
        from insights import selectors
        from insights.feedback_reads import feedback_by_page
        from insights.gaps import gap_list
        from insights.traffic import page_reads, top_queries, traffic

        period = selectors.period_for(CorpusModel.objects.get(name="sample"))
        parts = {"traffic": traffic, "top_queries": top_queries,
                 "page_reads": page_reads, "feedback_by_page": feedback_by_page,
                 "gap_list": lambda p: gap_list(corpus=CorpusModel.objects.get(name="sample"), period=p)}
        for label, fn in parts.items():
            start = time.perf_counter()
            fn(period)
            print(f"  {label:20} {(time.perf_counter() - start) * 1000:7.0f} ms (30 days)", file=sys.stderr)
        for seconds in (0, 30):
            settings.DOCSMCP_INSIGHTS_CACHE_SECONDS = seconds
            print(f"DOCSMCP_INSIGHTS_CACHE_SECONDS={seconds}" + (" (every load recomputes)" if not seconds else ""))
            for url in urls:
                times = [timed(url) for _ in range(args.repeat)]
                print(f"  {url:70} {statistics.median(times):8.0f} ms  (max {max(times):.0f})")
        if args.flood:
            _flood(args.flood, timed, CorpusModel.objects.get(name="sample"))
    finally:
        if args.keep:
            print(f"kept database {connection.settings_dict['NAME']}", file=sys.stderr)
        else:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
