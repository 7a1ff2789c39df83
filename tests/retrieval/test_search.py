"""Hybrid search on the handwritten corpus: exact chunk IDs and ranks, filters, hints, fallbacks."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from retrieval.embeddings import get_provider
from retrieval.errors import InvalidArgument, InvalidFilter
from retrieval.search import priors
from retrieval.search.catalog import Catalog
from retrieval.search.collapse import collapse_variants, structural_key
from retrieval.search.engine import SearchRequest, search, search_batch
from retrieval.search.snippets import make_snippet, query_terms
from retrieval.search.vectors import Vectors
from tests.retrieval_fixtures import (  # noqa: F401
    SECRET,
    BrokenEmbedder,
    CountingEmbedder,
    handwritten_fts_index,
    handwritten_index,
    hash_embedder,
    replicated_index,
)

PY_ERRORS = "sdks/python/errors.md#errors"
TS_ERRORS = "sdks/typescript/errors.md#errors"
USERS = "sdks/python/users.md#users"
POOL = "guides/connections.md#connection-pooling"
LIMITS = "guides/rate-limits.md#rate-limits"
VIEWS = "guides/views.md#class-based-views"

# (query, filters, the expected ranking's head, exactly). Hybrid: full text + identifiers +
# phrase + hash-embedding vectors; `language` collapses variants when not filtered.
RANKINGS = [
    ("RateLimitError", {}, [f"{PY_ERRORS}/ratelimiterror", f"{PY_ERRORS}/apierror"]),
    ("RateLimitError", {"language": "typescript"}, [f"{TS_ERRORS}/ratelimiterror"]),
    ("client.list_users()", {}, [f"{USERS}/clientlistusers", f"{USERS}/auto-paging", f"{USERS}/clientgetuser"]),
    ("max_connections", {}, [f"{POOL}/maxconnections", "guides/connections.md#_preamble", f"{POOL}/timeouts"]),
    ("HTTP 429", {}, [f"{LIMITS}/http-429-responses", f"{TS_ERRORS}/ratelimiterror"]),
    ("get_queryset", {}, [f"{VIEWS}/getqueryset", f"{VIEWS}/filtering-results"]),
    ("Retry-After header", {}, [f"{LIMITS}/retry-after-header", f"{LIMITS}/backoff-strategy"]),
    ("exponential backoff with jitter", {}, [f"{LIMITS}/backoff-strategy"]),
    ("APIError", {"language": "python"}, [f"{PY_ERRORS}/apierror"]),
    ("fetch one user by ID", {}, [f"{USERS}/clientgetuser", f"{USERS}/auto-paging"]),
    ("timeouts under load", {}, [f"{POOL}/timeouts"]),
    # Under a filter, the chunk carrying the filtered value leads; the auto-included guide follows.
    ("HTTP 429", {"language": "python"}, [f"{PY_ERRORS}/ratelimiterror", f"{LIMITS}/http-429-responses"]),
    ("HTTP 429", {"language": "python", "scope": "sdk-specific"}, [f"{PY_ERRORS}/ratelimiterror",
                                                                    f"{PY_ERRORS}/apierror"]),
]


def ids(result) -> list[str]:
    return [h.chunk_id for h in result.hits]


def run(index, query, filters=None, embedder=None, **kwargs):
    return search(index, SearchRequest(query, filters or {}, **kwargs), embedder=embedder, cursor_secret=SECRET)


@pytest.mark.parametrize(("query", "filters", "head"), RANKINGS, ids=[f"{q} {f}" for q, f, _ in RANKINGS])
def test_hybrid_ranking_is_exactly_as_expected(handwritten_index, hash_embedder, query, filters, head):  # noqa: F811
    got = ids(run(handwritten_index, query, filters, hash_embedder, limit=50))
    assert got[: len(head)] == head


def test_exact_match_rankings_are_complete_where_nothing_else_matches(handwritten_index, hash_embedder):  # noqa: F811
    assert ids(run(handwritten_index, "RateLimitError", {}, hash_embedder)) == [
        f"{PY_ERRORS}/ratelimiterror", f"{PY_ERRORS}/apierror"]
    assert ids(run(handwritten_index, "APIError", {"language": "python"}, hash_embedder)) == [
        f"{PY_ERRORS}/apierror"]


@pytest.mark.parametrize(("query", "expected"), [
    ("RateLimitError", f"{PY_ERRORS}/ratelimiterror"),
    ("client.list_users()", f"{USERS}/clientlistusers"),
    ("max_connections", f"{POOL}/maxconnections"),
    ("HTTP 429", f"{LIMITS}/http-429-responses"),
    ("get_queryset", f"{VIEWS}/getqueryset"),
])
def test_full_text_only_index_finds_identifiers_first(handwritten_fts_index, query, expected):  # noqa: F811
    result = run(handwritten_fts_index, query)
    assert ids(result)[0] == expected
    assert {leg.name for leg in result.legs} <= {"text", "ident", "phrase"}


def test_identifier_leg_matches_the_defining_chunk_not_a_chunk_mentioning_its_words(handwritten_fts_index):  # noqa: F811
    hits = run(handwritten_fts_index, "get_queryset").hits
    by_id = {h.chunk_id: h for h in hits}
    assert "ident" in by_id[f"{VIEWS}/getqueryset"].legs
    assert by_id[f"{VIEWS}/filtering-results"].legs == ("text",)
    assert hits[0].chunk_id == f"{VIEWS}/getqueryset"


def test_legs_that_cannot_match_are_skipped(handwritten_fts_index):  # noqa: F811
    assert [leg.name for leg in run(handwritten_fts_index, "RateLimitError").legs] == ["text", "ident"]
    assert [leg.name for leg in run(handwritten_fts_index, "timeouts under load").legs] == ["text", "phrase"]


def test_legs_option_restricts_the_search(handwritten_index, hash_embedder):  # noqa: F811
    result = run(handwritten_index, "HTTP 429", embedder=hash_embedder, legs=("vector",))
    assert [leg.name for leg in result.legs] == ["vector"]
    with pytest.raises(InvalidArgument, match="choose from text, ident, phrase, vector"):
        run(handwritten_index, "HTTP 429", legs=("bm25",))


def test_scores_are_normalised_and_descending(handwritten_index, hash_embedder, monkeypatch):  # noqa: F811
    for query, filters, _ in RANKINGS:
        scores = [h.score for h in run(handwritten_index, query, filters, hash_embedder, limit=50).hits]
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)
    # First in every leg that found anything and on its page's text. Links are left out: the
    # leading pages here link to another page, whose bonus this hit lacks.
    monkeypatch.setattr(priors, "PAGE_LINK_WEIGHT", 0.0)
    top = run(handwritten_index, "max_connections", embedder=hash_embedder).hits[0]
    assert top.score == 1.0


def test_hits_carry_every_field_a_profile_needs(handwritten_index, hash_embedder):  # noqa: F811
    hit = run(handwritten_index, "RateLimitError", {"language": "python"}, hash_embedder).hits[0]
    assert hit.chunk_id == f"{PY_ERRORS}/ratelimiterror"
    assert hit.filepath == "sdks/python/errors.md"
    assert hit.title == "Errors"
    assert hit.heading == "RateLimitError" and hit.heading_level == 2
    assert hit.breadcrumb == "Errors > RateLimitError"
    assert (hit.chunk_index, hit.total_chunks) == (2, 4)
    assert hit.metadata == {"language": "python", "scope": "sdk-specific"}
    assert hit.content.startswith("## RateLimitError\n\n`RateLimitError` is raised")
    assert (hit.start_line, hit.end_line) == (5, 11)
    assert "RateLimitError" in hit.snippet and len(hit.snippet) <= 300
    assert set(hit.legs) == {"text", "ident", "vector"}


def test_global_guides_carry_only_the_metadata_they_have(handwritten_index):  # noqa: F811
    hit = run(handwritten_index, "HTTP 429").hits[0]
    assert hit.metadata == {"scope": "global-guide"}


# --- filters ----------------------------------------------------------------------------------

def test_language_filter_auto_includes_global_guides(handwritten_index, hash_embedder):  # noqa: F811
    result = run(handwritten_index, "HTTP 429", {"language": "python"}, hash_embedder, limit=50)
    assert result.auto_included == ({"scope": "global-guide"},)
    assert {h.metadata.get("language") for h in result.hits} <= {"python", None}
    assert any(h.metadata == {"scope": "global-guide"} for h in result.hits)


def test_explicit_scope_turns_auto_include_off(handwritten_index, hash_embedder):  # noqa: F811
    result = run(handwritten_index, "HTTP 429", {"language": "python", "scope": "sdk-specific"}, hash_embedder)
    assert result.auto_included == ()
    assert all(h.metadata == {"language": "python", "scope": "sdk-specific"} for h in result.hits)


def test_unknown_filter_key_lists_the_allowed_filters(handwritten_index):  # noqa: F811
    with pytest.raises(InvalidFilter) as err:
        run(handwritten_index, "errors", {"lang": "python"})
    assert str(err.value) == ("Unknown filter 'lang'. Allowed filters: language: python, typescript; "
                              "scope: global-guide, sdk-specific.")


def test_unknown_filter_value_lists_the_allowed_values(handwritten_index):  # noqa: F811
    with pytest.raises(InvalidFilter) as err:
        run(handwritten_index, "errors", {"language": "go"})
    assert str(err.value) == ("Unknown value 'go' for filter 'language'; use one of: python, typescript "
                              "(exact, case-sensitive).")


def test_filters_do_not_cost_recall(handwritten_index, replicated_index, hash_embedder, monkeypatch):  # noqa: F811
    """Ten copies under v1..v10: a version filter gives exactly the unreplicated ranking, as
    filtered searches rank it (they go without the page-text prior: docs/search.md)."""
    assert len(replicated_index.catalog()) == 10 * len(handwritten_index.catalog())
    monkeypatch.setattr(handwritten_index, "_page_text", False)
    for query, filters, _ in RANKINGS:
        expected = ids(run(handwritten_index, query, filters, hash_embedder, limit=50))
        for version in ("v3", "v10"):
            got = run(replicated_index, query, {**filters, "version": version}, hash_embedder, limit=50)
            assert [cid.removeprefix(f"{version}/") for cid in ids(got)] == expected, (query, filters, version)


def test_version_filter_is_not_needed_for_recall_but_selects_one_copy(replicated_index, hash_embedder):  # noqa: F811
    unfiltered = ids(run(replicated_index, "max_connections", embedder=hash_embedder, limit=50))
    assert len({cid.split("/")[0] for cid in unfiltered}) == 10


# --- collapse ---------------------------------------------------------------------------------

def test_language_variants_collapse_when_language_is_not_filtered(handwritten_index, hash_embedder):  # noqa: F811
    result = ids(run(handwritten_index, "HTTP 429", embedder=hash_embedder, limit=50))
    assert f"{TS_ERRORS}/ratelimiterror" in result
    assert f"{PY_ERRORS}/ratelimiterror" not in result
    both = ids(run(handwritten_index, "HTTP 429", {"language": "python"}, hash_embedder, limit=50))
    assert f"{PY_ERRORS}/ratelimiterror" in both


def test_structural_key_masks_the_value_in_the_path():
    assert structural_key("sdks/python/errors.md#errors/x", "python") == "sdks/*/errors.md#errors/x"
    assert structural_key("guides/Python.md#a", "python") == "guides/*.md#a"
    assert structural_key("sdks/python/errors.md", "typescript") == "sdks/python/errors.md"


def _catalog(rows: list[dict]) -> Catalog:
    import pyarrow as pa

    table = pa.Table.from_pylist([{**r, "_rowid": i} for i, r in enumerate(rows)])
    return Catalog.from_arrow(table)


def test_collapse_keeps_the_best_variant_and_chunks_without_a_value():
    catalog = _catalog([
        {"chunk_id": "sdks/go/a.md#x", "heading": "X", "m_language": "go"},
        {"chunk_id": "guides/a.md#x", "heading": "X", "m_language": None},
        {"chunk_id": "sdks/python/a.md#x", "heading": "X", "m_language": "python"},
        {"chunk_id": "sdks/go/b.md#y", "heading": "Y", "m_language": "go"},
        {"chunk_id": "py/other.md#y", "heading": "Y", "m_language": "python"},
        {"chunk_id": "py/other.md#z", "heading": "Z", "m_language": "python"},
    ])
    vectors = Vectors.empty(6, 2)
    vectors.put(np.arange(6), np.array([[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1]], dtype=np.float32))
    ranked = [(i, 1.0 - i / 10) for i in range(6)]
    kept = catalog.column("chunk_id", [p for p, _ in collapse_variants(ranked, catalog, "m_language", vectors)])
    # x: python variant is structural; y: same heading, cosine 1.0; z: different heading stays.
    assert kept == ["sdks/go/a.md#x", "guides/a.md#x", "sdks/go/b.md#y", "py/other.md#z"]
    kept = catalog.column("chunk_id", [p for p, _ in collapse_variants(ranked, catalog, "m_language", None)])
    assert "py/other.md#y" in kept and "sdks/python/a.md#x" not in kept


# --- zero hits --------------------------------------------------------------------------------

def test_zero_hits_suggest_the_filter_values_that_have_matches(handwritten_index, hash_embedder):  # noqa: F811
    result = run(handwritten_index, "auto_paging_iter", {"language": "typescript"}, hash_embedder)
    assert result.hits == [] and result.next_cursor is None
    assert result.hint.suggested_filters == {"language": ["python"]}
    assert result.hint.message.startswith("0 results found for language 'typescript'. Matches exist for "
                                          "language: python;")


def test_zero_hits_with_two_filters_suggest_changing_one(handwritten_fts_index):  # noqa: F811
    result = run(handwritten_fts_index, "RateLimitError", {"language": "python", "scope": "global-guide"})
    assert result.hint.suggested_filters == {"scope": ["sdk-specific"]}
    assert result.hint.message.startswith("0 results found for language 'python' and scope 'global-guide'.")


def test_zero_hits_anywhere_say_the_corpus_has_no_match(handwritten_index, hash_embedder):  # noqa: F811
    result = run(handwritten_index, "zyxwvut", embedder=hash_embedder)
    assert result.hint.suggested_filters == {}
    assert result.hint.message == ("0 results found for query 'zyxwvut'. The corpus has no match for it; "
                                   "rephrase it with other words or fewer terms.")
    filtered = run(handwritten_index, "zyxwvut", {"language": "python"})
    assert "no match for this query under any filter value" in filtered.hint.message


def test_hits_have_no_hint(handwritten_index):  # noqa: F811
    assert run(handwritten_index, "HTTP 429").hint is None


# --- vector leg failures ----------------------------------------------------------------------

def test_failing_vector_leg_answers_from_full_text_and_logs(handwritten_index, caplog):  # noqa: F811
    with caplog.at_level(logging.WARNING, logger="retrieval.search"):
        result = run(handwritten_index, "max_connections", embedder=BrokenEmbedder())
    assert ids(result)[0] == f"{POOL}/maxconnections"
    vector = next(leg for leg in result.legs if leg.name == "vector")
    assert "embedding API unreachable" in vector.error
    assert "vector leg failed" in caplog.text


def test_embedder_of_another_model_is_left_out_not_fatal(handwritten_index, caplog):  # noqa: F811
    with caplog.at_level(logging.WARNING, logger="retrieval.search"):
        result = run(handwritten_index, "max_connections", embedder=get_provider("hash", dimensions=32))
    assert ids(result)[0] == f"{POOL}/maxconnections"
    assert "EmbeddingMismatch" in next(leg.error for leg in result.legs if leg.name == "vector")


# --- batch ------------------------------------------------------------------------------------

def test_batch_shares_one_embedding_call_and_matches_single_searches(handwritten_index):  # noqa: F811
    embedder = CountingEmbedder()
    requests = [SearchRequest(q, f) for q, f, _ in RANKINGS[:6]]
    results = search_batch(handwritten_index, requests, embedder=embedder, cursor_secret=SECRET)
    assert embedder.calls == ["embed_queries"]
    singles = [run(handwritten_index, r.query, r.filters, get_provider("hash")) for r in requests]
    assert [ids(r) for r in results] == [ids(r) for r in singles]


def test_batch_validates_every_request_before_searching(handwritten_index):  # noqa: F811
    embedder = CountingEmbedder()
    with pytest.raises(InvalidFilter):
        search_batch(handwritten_index, [SearchRequest("x"), SearchRequest("y", {"lang": "go"})],
                     embedder=embedder, cursor_secret=SECRET)
    assert embedder.calls == []


def test_batch_falls_back_to_full_text_when_embedding_fails(handwritten_index):  # noqa: F811
    results = search_batch(handwritten_index, [SearchRequest("max_connections")], embedder=BrokenEmbedder(),
                           cursor_secret=SECRET)
    assert ids(results[0])[0] == f"{POOL}/maxconnections"


# --- arguments and snippets -------------------------------------------------------------------

@pytest.mark.parametrize(("query", "limit", "message"), [
    ("", 10, "non-empty"), ("   ", 10, "non-empty"), ("x" * 2001, 10, "under 2000"),
    ("ok", 0, "from 1 to 50"), ("ok", 51, "from 1 to 50"), ("ok", True, "from 1 to 50"),
])
def test_bad_arguments_are_refused(handwritten_fts_index, query, limit, message):  # noqa: F811
    with pytest.raises(InvalidArgument, match=message):
        run(handwritten_fts_index, query, limit=limit)


def test_snippet_shows_the_matched_terms_within_the_bound():
    content = "## Heading\n\n" + "Filler words here. " * 40 + "The max_connections setting caps the pool. " + \
        "More filler. " * 40
    snippet = make_snippet(content, "max_connections pool")
    assert "max_connections" in snippet and "pool" in snippet
    assert len(snippet) <= 300 and snippet.startswith("…") and snippet.endswith("…")
    assert not snippet.startswith("## Heading")


def test_short_chunks_are_their_own_snippet_without_the_heading_line():
    assert make_snippet("## Timeouts\n\nA request\nis cancelled.", "timeouts") == "A request is cancelled."


def test_query_terms_keep_identifiers_whole_and_drop_stop_words():
    assert query_terms("how do I call client.list_users()") == ["client.list_users", "list_users", "call",
                                                                "client", "list_user"]


# --- vector leg -------------------------------------------------------------------------------

class VectorsIndex:
    def __init__(self, vectors: Vectors):
        self._vectors = vectors

    def vectors(self) -> Vectors:
        return self._vectors


@pytest.mark.parametrize("layout", ["contiguous", "scattered", "most", "none"])
def test_vector_leg_under_a_mask_equals_brute_force(layout):
    from retrieval.search.legs import vector_leg

    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(3000, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[5] + 0.1
    query /= np.linalg.norm(query)
    mask = np.zeros(3000, dtype=bool)
    if layout == "contiguous":
        mask[300:600] = mask[2000:2100] = True
    elif layout == "scattered":
        mask[rng.choice(3000, 400, replace=False)] = True
    elif layout == "most":
        mask[:2500] = True
    vectors = Vectors.empty(*matrix.shape)
    vectors.put(np.arange(len(matrix)), matrix)
    got = vector_leg(VectorsIndex(vectors), query, mask, depth=50, floor=-1.0)
    scores = np.where(mask, vectors.dots(query), -np.inf)
    allowed = np.flatnonzero(mask)
    expected = allowed[np.lexsort((allowed, -scores[allowed]))][:50]
    assert got.tolist() == expected.tolist()


def _without_mapped_files(index, tmp_path):
    """A copy of the build as a build made before it wrote its mapped files."""
    import shutil

    copy = tmp_path / "unmapped"
    shutil.copytree(index.path, copy, ignore=shutil.ignore_patterns("mapped"))
    return copy


def test_hits_are_the_same_whether_chunk_text_is_held_plain_or_compressed(handwritten_index, hash_embedder,  # noqa: F811
                                                                          tmp_path):
    from retrieval.search.index import Index
    from retrieval.search.texts import CompressedTexts

    compressed = Index(_without_mapped_files(handwritten_index, tmp_path), content_in_memory_chars=0)
    for query, filters, _ in RANKINGS[:5]:
        plain = run(handwritten_index, query, filters, hash_embedder, limit=50).hits
        hits = run(compressed, query, filters, hash_embedder, limit=50).hits
        assert [(h.chunk_id, h.content, h.snippet) for h in hits] == [(h.chunk_id, h.content, h.snippet) for h in plain]
    assert isinstance(compressed._content, CompressedTexts) and not isinstance(handwritten_index._content, CompressedTexts)
    assert handwritten_index.mapped and not compressed.mapped
    every = list(range(len(compressed.catalog())))
    assert compressed.contents(every[::-1]) == handwritten_index.contents(every[::-1])


def _break_legs(monkeypatch, names):
    from lance.query import MatchQuery

    import retrieval.search.ranking as search_module

    real = search_module.lexical_queries

    def broken(query, legs, **options):
        out = real(query, legs, **options)
        out.update({name: MatchQuery(query, "no_such_column") for name in names})
        return out

    monkeypatch.setattr(search_module, "lexical_queries", broken)


def test_a_failing_full_text_leg_is_left_out_and_logged(handwritten_fts_index, monkeypatch, caplog):  # noqa: F811
    _break_legs(monkeypatch, ["phrase"])
    with caplog.at_level(logging.WARNING, logger="retrieval.search"):
        result = run(handwritten_fts_index, "max_connections")
    assert ids(result)[0] == f"{POOL}/maxconnections"
    assert next(leg for leg in result.legs if leg.name == "phrase").error
    assert "search leg 'phrase' failed" in caplog.text


def test_search_fails_when_every_leg_fails(handwritten_fts_index, monkeypatch):  # noqa: F811
    from retrieval.errors import IndexUnavailable

    _break_legs(monkeypatch, ["text", "ident"])
    with pytest.raises(IndexUnavailable, match="every search leg failed"):
        run(handwritten_fts_index, "max_connections")


def test_chunk_text_is_read_by_row_id_when_a_scan_comes_back_out_of_order(handwritten_index, monkeypatch,  # noqa: F811
                                                                          tmp_path):
    from retrieval.format import mapped
    from retrieval.search import index as index_module

    scanned = mapped._scanned_texts

    def reordered(chunks, rowids):
        batches = scanned(chunks, rowids)
        yield next(batches)
        raise mapped._OutOfOrder

    monkeypatch.setattr(mapped, "_scanned_texts", reordered)
    unmapped = _without_mapped_files(handwritten_index, tmp_path)
    for limit in (0, 10**9):  # compressed, and plain
        fallback = index_module.Index(unmapped, content_in_memory_chars=limit)
        every = list(range(len(fallback.catalog())))
        assert fallback.contents(every) == handwritten_index.contents(every)


def test_a_corpus_new_build_replaces_its_previous_index_in_the_cache(handwritten_index, tmp_path):  # noqa: F811
    import gc
    import shutil
    import weakref

    from retrieval.search.index_cache import IndexCache

    rebuilt = tmp_path / "rebuilt"
    shutil.copytree(handwritten_index.path, rebuilt)
    cache = IndexCache()
    first = cache.get(handwritten_index.path, slot="docs")
    assert cache.get(handwritten_index.path, slot="docs") is first
    other_corpus = cache.get(rebuilt, slot="other")
    second = cache.get(rebuilt, slot="docs")
    assert second is not first and second is not other_corpus and second.path == rebuilt
    first.catalog()
    released = weakref.ref(first)
    del first
    gc.collect()
    assert released() is None  # nothing but in-flight requests keeps the old build's memory
    assert cache.get(rebuilt, slot="other") is other_corpus


def test_catalog_rows_read_every_column_with_missing_values_as_none():
    catalog = _catalog([
        {"chunk_id": "b.md#x", "heading": "X", "start_line": 3, "link_share": 0.25, "m_language": "go"},
        {"chunk_id": "a.md#y", "heading": None, "start_line": 9, "link_share": 0.0, "m_language": None},
    ])
    assert catalog.rows([1, 0]) == [
        {"chunk_id": "a.md#y", "heading": None, "start_line": 9, "link_share": 0.0, "m_language": None},
        {"chunk_id": "b.md#x", "heading": "X", "start_line": 3, "link_share": 0.25, "m_language": "go"},
    ]
    assert catalog.column("m_language", [0, 1, 0]) == ["go", None, "go"]
    assert catalog.id_order.tolist() == [1, 0]  # "a.md#y" sorts before "b.md#x"
