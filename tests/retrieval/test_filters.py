"""Filter validation and the pushed-down WHERE clause, auto-include rules read from metadata."""

from __future__ import annotations

import pytest

from retrieval.errors import InvalidFilter
from retrieval.format.metadata import AutoInclude, BuildMetadata, TaxonomyField
from retrieval.search.filters import describe_filters, plain_where, plan_filters, sql_string, validate_filters


def metadata(taxonomy: dict[str, tuple[str, ...]], rules: list[AutoInclude] | None = None) -> BuildMetadata:
    return BuildMetadata(
        build_id="b1", corpus="c", corpus_description="", instructions="",
        taxonomy={k: TaxonomyField(None, v) for k, v in taxonomy.items()},
        auto_include=rules or [], stats={}, embedding=None, files={},
    )


SEED = metadata({"language": ("go", "python", "typescript"), "scope": ("global-guide", "sdk-specific")},
                [AutoInclude("language", "scope", {"scope": "global-guide"})])


def test_unknown_key_is_rejected_with_every_allowed_key_and_value():
    with pytest.raises(InvalidFilter) as err:
        validate_filters(SEED, {"lang": "python"})
    assert str(err.value) == ("Unknown filter 'lang'. Allowed filters: language: go, python, typescript; "
                              "scope: global-guide, sdk-specific.")


def test_unknown_value_is_rejected_with_the_allowed_values_of_that_key():
    with pytest.raises(InvalidFilter) as err:
        validate_filters(SEED, {"language": "Python"})
    assert str(err.value) == ("Unknown value 'Python' for filter 'language'; use one of: go, python, typescript "
                              "(exact, case-sensitive).")


def test_non_string_values_are_rejected():
    with pytest.raises(InvalidFilter, match="use one of"):
        validate_filters(SEED, {"language": ["python"]})


def test_corpus_without_taxonomy_says_no_filters_are_accepted():
    with pytest.raises(InvalidFilter, match="no taxonomy"):
        validate_filters(metadata({}), {"language": "go"})


def test_none_values_mean_no_filter_and_keys_come_back_sorted():
    assert validate_filters(SEED, {"scope": "sdk-specific", "language": None}) == {"scope": "sdk-specific"}
    assert list(validate_filters(SEED, {"scope": "sdk-specific", "language": "go"})) == ["language", "scope"]


def test_no_filters_means_no_where_clause():
    plan = plan_filters(SEED, {})
    assert plan.where is None and plan.filters == {} and plan.auto_included == ()


def test_auto_include_widens_a_language_filter_with_global_guides():
    plan = plan_filters(SEED, {"language": "typescript"})
    assert plan.where == "(`m_language` = 'typescript') OR (`m_scope` = 'global-guide')"
    assert plan.auto_included == ({"scope": "global-guide"},)


def test_auto_include_is_off_when_the_unless_key_is_given():
    plan = plan_filters(SEED, {"language": "typescript", "scope": "sdk-specific"})
    assert plan.where == "`m_language` = 'typescript' AND `m_scope` = 'sdk-specific'"
    assert plan.auto_included == ()


def test_auto_include_keeps_the_other_filters_in_the_widened_branch():
    meta = metadata({"language": ("python",), "scope": ("global-guide",), "version": ("v1", "v2")},
                    [AutoInclude("language", "scope", {"scope": "global-guide"})])
    plan = plan_filters(meta, {"language": "python", "version": "v2"})
    assert plan.where == ("(`m_language` = 'python' AND `m_version` = 'v2') OR "
                          "(`m_scope` = 'global-guide' AND `m_version` = 'v2')")


def test_auto_include_names_come_from_the_rule_not_from_code():
    meta = metadata({"platform": ("ios", "android"), "kind": ("overview", "howto")},
                    [AutoInclude("platform", "kind", {"kind": "overview"})])
    assert plan_filters(meta, {"platform": "ios"}).where == "(`m_platform` = 'ios') OR (`m_kind` = 'overview')"
    # The seed's key names mean nothing to this corpus.
    assert plan_filters(meta, {"kind": "howto"}).where == "`m_kind` = 'howto'"


def test_each_applicable_rule_adds_one_branch():
    meta = metadata({"language": ("go",), "scope": ("global-guide",), "tier": ("free",)},
                    [AutoInclude("language", "scope", {"scope": "global-guide"}),
                     AutoInclude("language", "tier", {"tier": "free"})])
    assert plan_filters(meta, {"language": "go"}).where == (
        "(`m_language` = 'go') OR (`m_scope` = 'global-guide') OR (`m_tier` = 'free')")


def test_sql_string_doubles_quotes_so_a_value_cannot_end_the_literal():
    assert sql_string("it's") == "'it''s'"
    assert sql_string("x' OR '1'='1") == "'x'' OR ''1''=''1'"


def test_a_canonical_value_with_a_quote_is_escaped_in_the_clause():
    meta = metadata({"product": ("O'Reilly",)})
    assert plan_filters(meta, {"product": "O'Reilly"}).where == "`m_product` = 'O''Reilly'"


def test_plain_where_is_the_bare_conjunction():
    assert plain_where({}) is None
    assert plain_where({"scope": "sdk-specific", "language": "go"}) == (
        "`m_language` = 'go' AND `m_scope` = 'sdk-specific'")


def test_describe_filters_reads_like_the_seed_hint():
    assert describe_filters({"scope": "sdk-specific"}) == "scope 'sdk-specific'"
    assert describe_filters({"scope": "sdk-specific", "language": "go"}) == "language 'go' and scope 'sdk-specific'"
