"""The insights pages and REST API over recorded calls: aggregates, gap groups and the actions on them.

Calls are recorded rows (bulk_create), as the query log's writer leaves them; the sample corpus is
the session's prebuilt index (hash embeddings), so gaps are grouped by its embedder.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.apikeys import create_api_key
from corpus.models import BuildRun, Corpus, Feedback, QueryRecord
from evals.models import EvalCase
from insights import selectors
from insights.feedback_reads import feedback_by_page
from insights.gaps import gaps_refresh
from insights.models import Gap
from insights.similarity import TextSignature, text_similarity
from insights.traffic import build_trend, page_reads, summary
from tests.api_helpers import assert_error, call

KUBERNETES = ["kubernetes helm chart", "helm charts on kubernetes", "deploy with helm on kubernetes"]
GRAPHQL = ["graphql mutation resolver", "how do I write a graphql mutation"]


def record(query: str = "", *, ago: timedelta = timedelta(hours=1), hits: int = 3, score: float | None = 0.9,
           target: str = "", tool: str = "search_docs", corpus: str = "sample", build: str = "sample-build",
           is_eval: bool = False, first: str = "guides/retries.md#retries") -> QueryRecord:
    return QueryRecord(at=timezone.now() - ago, corpus=corpus, version="3.2", build_id=build, profile="docs",
                       tool=tool, surface="http", query=query, target=target, hits=hits,
                       top=[[first, score]] if hits and not target else [], top_score=score if hits else None,
                       latency_ms=3.0, client="claude-code/1.0", key_name="ci", is_eval=is_eval)


def unanswered(queries: list[str], times: int = 1, **kw) -> list[QueryRecord]:
    return [record(q, hits=0, score=None, **kw) for q in queries for _ in range(times)]


@pytest.fixture(autouse=True)
def fresh_aggregates(settings):
    """Every load recomputes: a cached page of another test's rows must not answer this one's."""
    settings.DOCSMCP_INSIGHTS_CACHE_SECONDS = 0


@pytest.fixture
def traffic(sample_corpus):
    rows = [record("retry backoff") for _ in range(20)]
    rows += [record("RateLimitError", first="sdks/python/errors.md#error-handling/ratelimiterror") for _ in range(8)]
    rows += [record("payment intents", score=0.2, first="guides/payments.md#x") for _ in range(3)]  # low-score
    rows += unanswered(KUBERNETES, times=3) + unanswered(GRAPHQL, times=2)
    rows += [record(target="guides/retries.md#retries", tool="get_doc") for _ in range(6)]
    rows += [record(target="sdks/python/errors.md#error-handling", tool="get_doc")]
    rows += unanswered(["eval only question"], times=5, is_eval=True)
    rows += [record("retry backoff", ago=timedelta(days=40))]  # outside the default 30 days
    QueryRecord.objects.bulk_create(rows)
    Feedback.objects.bulk_create([
        Feedback(at=timezone.now(), corpus="sample", verdict="wrong", chunk_id="guides/retries.md#retries",
                 filepath="guides/retries.md", query="retry backoff", comment="the default is 5 retries, not 3"),
        Feedback(at=timezone.now(), corpus="sample", verdict="helpful", chunk_id="guides/retries.md#retries",
                 filepath="guides/retries.md", query="retry backoff"),
    ])
    return sample_corpus


@pytest.fixture
def admin_key(db):
    return create_api_key("authors", ["admin"])[1]


def test_text_similarity_keeps_paraphrases_together_and_topics_apart():
    def sim(a, b):
        return text_similarity(TextSignature.of(a), TextSignature.of(b))

    assert sim("how to deploy on kubernetes", "kubernetes deployment") >= 0.4
    assert sim("webhook signature verification", "verify webhook signatures") >= 0.4
    assert sim("rate limits", "retry limits") < 0.4
    assert sim("graphql mutation resolver", "kubernetes helm chart") == 0


def test_pages_need_a_staff_login(client, traffic):
    for url in ["/insights/", "/insights/sample/", "/insights/sample/gaps/1/", "/insights/sample/feedback/1/"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_admin_index_and_eval_dashboards_link_the_insights(admin_client, db):
    assert 'href="/insights/"' in admin_client.get("/admin/").content.decode()
    assert 'href="/insights/"' in admin_client.get("/evals/").content.decode()


def test_summary_counts_zero_hit_and_low_score_searches_without_eval_runs(traffic):
    period = selectors.period_for(traffic)
    s = summary(period)
    assert (s["calls"], s["searches"], s["reads"]) == (20 + 8 + 3 + 13 + 7, 20 + 8 + 3 + 13, 7)
    assert (s["zero"], s["low"]) == (13, 3)
    assert s["zero_share"] == pytest.approx(13 / 44)
    with_eval = summary(selectors.period_for(traffic, include_eval=True))
    assert with_eval["zero"] == 18
    assert summary(selectors.period_for(traffic, days=60))["searches"] == 45


def test_the_low_score_threshold_is_a_corpus_setting(traffic):
    traffic.settings = {**traffic.settings, "low_score": 0.95}
    traffic.save()
    assert summary(selectors.period_for(traffic))["low"] == 31


def test_pages_most_and_least_read(traffic):
    pages = page_reads(selectors.period_for(traffic))
    assert pages["most"][0] == {"page": "guides/retries.md", "reads": 6, "shown": 20}
    least = {p["page"]: p for p in pages["least"]}
    assert least["guides/payments.md"]["reads"] == 0 and pages["least"][0]["page"] == "guides/payments.md"


def test_unanswered_questions_are_grouped_by_meaning_with_stable_ids(traffic):
    period = selectors.period_for(traffic)
    groups = gaps_refresh(corpus=traffic, period=period)
    assert [(g.count, g.distinct) for g in groups] == [(9, 3), (4, 2), (3, 1)]  # the last: low-score
    kube, graphql, payments = groups
    assert payments.gap.representative == "payment intents"
    # grouped by the bundled local model, whatever the corpus was built with (here: hash embeddings)
    assert kube.gap.representative in KUBERNETES and kube.gap.method == "embedding:local/all-MiniLM-L6-v2"
    assert {e["query"] for e in kube.examples} == set(KUBERNETES)
    assert "eval only question" not in {e["query"] for g in groups for e in g.examples}
    # a new paraphrase joins the existing group; its ID does not change
    QueryRecord.objects.bulk_create(unanswered(["helm chart kubernetes install"], times=2, ago=timedelta(minutes=5)))
    again = gaps_refresh(corpus=traffic, period=selectors.period_for(traffic))
    assert [(g.id, g.count) for g in again] == [(kube.id, 11), (graphql.id, 4), (payments.id, 3)]
    assert Gap.objects.count() == 3


def test_a_corpus_without_an_index_still_groups_by_meaning(db):
    Corpus.objects.create(name="plain", source_dir="/nowhere")
    QueryRecord.objects.bulk_create(unanswered(["how to deploy on kubernetes", "kubernetes deployment",
                                                 "rate limits"], corpus="plain"))
    groups = gaps_refresh(corpus=Corpus.objects.get(name="plain"),
                          period=selectors.period_for(Corpus.objects.get(name="plain")))
    assert sorted(g.distinct for g in groups) == [1, 2]
    assert {g.gap.method for g in groups} == {"embedding:local/all-MiniLM-L6-v2"}


def test_a_dismissed_gap_stays_hidden_until_new_queries_arrive(client, traffic, admin_key):
    kube = gaps_refresh(corpus=traffic, period=selectors.period_for(traffic))[0]
    response = call(client, "post", f"/corpora/sample/gaps/{kube.id}/dismiss", {"reason": "we do not ship helm"},
                    key=admin_key)
    assert response.status_code == 200 and response.json()["status"] == "dismissed"
    ids = [g["id"] for g in call(client, "get", "/corpora/sample/gaps", key=admin_key).json()["items"]]
    assert kube.id not in ids
    dismissed = call(client, "get", "/corpora/sample/gaps?status=dismissed", key=admin_key).json()["items"]
    assert [(g["id"], g["dismissed_reason"]) for g in dismissed] == [(kube.id, "we do not ship helm")]
    QueryRecord.objects.bulk_create([record("kubernetes helm chart", hits=0, score=None, ago=timedelta(0))])
    ids = [g["id"] for g in call(client, "get", "/corpora/sample/gaps", key=admin_key).json()["items"]]
    assert kube.id in ids


def test_dismissing_needs_a_reason(client, traffic, admin_key):
    kube = gaps_refresh(corpus=traffic, period=selectors.period_for(traffic))[0]
    assert_error(call(client, "post", f"/corpora/sample/gaps/{kube.id}/dismiss", {"reason": "  "}, key=admin_key),
                 400, message_contains="needs a reason")


def test_a_gap_becomes_an_eval_case_of_the_suite(client, traffic, admin_key):
    kube = gaps_refresh(corpus=traffic, period=selectors.period_for(traffic))[0]
    response = call(client, "post", f"/corpora/sample/gaps/{kube.id}/eval-case",
                    {"suite": "sample-gaps", "expected_files": ["guides/retries.md"]}, key=admin_key)
    assert response.status_code == 201, response.content
    case = EvalCase.objects.get(suite__name="sample-gaps")
    assert (case.name, case.query, case.expected_files, case.category) == (
        f"gap-{kube.id}", kube.gap.representative, ["guides/retries.md"], "gap")
    assert case.suite.corpus == traffic
    gap = call(client, "get", "/corpora/sample/gaps", key=admin_key).json()["items"][0]
    assert gap["eval_case"] == f"sample-gaps:gap-{kube.id}"


def test_an_eval_case_must_expect_a_page_of_the_corpus(client, traffic, admin_key):
    kube = gaps_refresh(corpus=traffic, period=selectors.period_for(traffic))[0]
    error = assert_error(call(client, "post", f"/corpora/sample/gaps/{kube.id}/eval-case",
                              {"suite": "gaps", "expected_files": ["retries.md"]}, key=admin_key), 400)
    assert "not a page of corpus 'sample': retries.md" in error["message"] and "guides/retries.md" in error["message"]
    assert_error(call(client, "post", "/corpora/sample/gaps/999999/eval-case",
                      {"suite": "gaps", "expected_files": ["guides/retries.md"]}, key=admin_key), 404, "gap_not_found")
    assert not EvalCase.objects.exists()


def test_query_texts_need_the_admin_scope(client, traffic, settings):
    _row, read_key = create_api_key("reader", ["read"])
    for path in ["/corpora/sample/queries", "/corpora/sample/feedback", "/corpora/sample/gaps"]:
        assert_error(call(client, "get", path, key=read_key), 403, "forbidden", "'admin' scope")
        assert_error(call(client, "get", path), 403, "forbidden")


def test_queries_endpoint_filters(client, traffic, admin_key):
    body = call(client, "get", "/corpora/sample/queries?zero_hits=true", key=admin_key).json()
    assert body["total"] == 13 and {i["hits"] for i in body["items"]} == {0}
    assert body["items"][0]["client"] == "claude-code/1.0" and body["items"][0]["key_name"] == "ci"
    assert call(client, "get", "/corpora/sample/queries?tool=get_doc", key=admin_key).json()["total"] == 7
    since = (timezone.now() - timedelta(days=60)).isoformat()
    all_calls = call(client, "get", f"/corpora/sample/queries?limit=1&since={since.replace('+', '%2B')}",
                     key=admin_key).json()
    assert all_calls["total"] == 52 and all_calls["has_more"] and len(all_calls["items"]) == 1
    assert call(client, "get", "/corpora/sample/queries?include_eval=true&zero_hits=true",
                key=admin_key).json()["total"] == 18
    assert_error(call(client, "get", "/corpora/nope/queries", key=admin_key), 404, "corpus_not_found")


def test_feedback_endpoint_and_dismissal(client, traffic, admin_key):
    items = call(client, "get", "/corpora/sample/feedback?verdict=wrong", key=admin_key).json()["items"]
    assert [(i["verdict"], i["comment"]) for i in items] == [("wrong", "the default is 5 retries, not 3")]
    response = call(client, "post", f"/corpora/sample/feedback/{items[0]['id']}/dismiss",
                    {"reason": "fixed in 3.3"}, key=admin_key)
    assert response.status_code == 200 and response.json()["dismissed_reason"] == "fixed in 3.3"
    assert call(client, "get", "/corpora/sample/feedback", key=admin_key).json()["total"] == 1
    case = call(client, "post", f"/corpora/sample/feedback/{items[0]['id']}/eval-case", {"suite": "from-feedback"},
                key=admin_key)
    assert case.status_code == 201 and case.json()["expected_files"] == ["guides/retries.md"]


def test_corpus_page_shows_the_period(admin_client, traffic):
    html = admin_client.get("/insights/sample/").content.decode()
    assert "calls per day" in html and html.count("<svg") >= 3
    assert "kubernetes" in html and "graphql" in html and "eval only question" not in html
    assert "guides/retries.md" in html and "the default is 5 retries" in html
    assert "searches by verdict, per build" in html and "logged before verdicts existed" in html
    assert "eval only question" in admin_client.get("/insights/sample/?eval=1").content.decode()
    index = admin_client.get("/insights/").content.decode()
    assert 'href="/insights/sample/"' in index


def test_corpus_page_is_bounded_in_queries(admin_client, traffic, django_assert_max_num_queries):
    admin_client.get("/insights/sample/")  # groups the new texts once
    QueryRecord.objects.bulk_create([record(f"q{i}") for i in range(500)] + unanswered(GRAPHQL, times=20))
    with django_assert_max_num_queries(24):
        assert admin_client.get("/insights/sample/").status_code == 200


def test_gap_page_lets_the_author_pick_the_page_from_search_hits(admin_client, traffic):
    kube = gaps_refresh(corpus=traffic, period=selectors.period_for(traffic))[0]
    html = admin_client.get(f"/insights/sample/gaps/{kube.id}/").content.decode()
    assert html.count('type="radio" name="filepath"') >= 2 and kube.gap.representative in html
    response = admin_client.post(f"/insights/sample/gaps/{kube.id}/",
                                 {"action": "eval-case", "filepath": "guides/retries.md", "suite": "sample-gaps"},
                                 follow=True)
    assert "every run of suite sample-gaps now asks it" in response.content.decode()
    assert EvalCase.objects.get(suite__name="sample-gaps").expected_files == ["guides/retries.md"]
    response = admin_client.post(f"/insights/sample/gaps/{kube.id}/", {"action": "dismiss", "reason": ""},
                                 follow=True)
    assert "needs a reason" in response.content.decode()
    assert Gap.objects.get(pk=kube.id).status == Gap.OPEN


def test_build_trend_orders_builds_by_first_use(traffic):
    BuildRun.objects.create(corpus=traffic, build_id="next-build", status=BuildRun.COMPLETE)
    QueryRecord.objects.bulk_create([record("retry backoff", build="next-build", ago=timedelta(minutes=1))
                                     for _ in range(4)])
    trend = build_trend(selectors.period_for(traffic))
    assert [t["build_id"] for t in trend] == ["sample-build", "next-build"]
    assert trend[1]["zero_share"] == 0 and trend[0]["zero_share"] == pytest.approx(13 / 44)


def test_feedback_by_page_counts_every_report(traffic):
    Feedback.objects.create(at=timezone.now(), corpus="sample", verdict="helpful", filepath="guides/retries.md")
    (page,) = feedback_by_page(selectors.period_for(traffic))
    assert (page["page"], page["total"], page["negative"]) == ("guides/retries.md", 3, 1)
    assert page["verdicts"]["helpful"] == 2 and page["verdicts"]["wrong"] == 1


def test_a_feedback_item_asks_for_a_content_fix_of_its_page(client, traffic, admin_key):
    item = Feedback.objects.get(verdict="wrong")
    item.query = "circuit breaker settings"
    item.save()
    response = call(client, "post", f"/corpora/sample/feedback/{item.pk}/fix", {"llm": False}, key=admin_key)
    assert response.status_code == 201, response.content
    proposal = response.json()
    assert (proposal["file"], proposal["kind"], proposal["status"]) == ("guides/retries.md", "content-section",
                                                                       "pending")
    assert "the default is 5 retries, not 3" in json.dumps(proposal["finding"])
    assert "+## Circuit breaker settings" in proposal["diff"] and "docsmcp outline" in proposal["diff"]
    assert "keywords" not in proposal["diff"]
    assert_error(call(client, "post", f"/corpora/sample/feedback/{item.pk}/fix", {"filepath": "nope.md"},
                      key=admin_key), 400, message_contains="not a page of corpus")
