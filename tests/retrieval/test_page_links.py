"""Links between pages: what the build stores, how the search resolves it, and the ranking prior."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from retrieval.format.linkgraph import page_key, resolve_links
from retrieval.format.mapped import (
    DOCUMENT_PAGES_FILE,
    DOCUMENT_ROWIDS_FILE,
    LINK_STARTS_FILE,
    LINK_TARGETS_FILE,
    MAPPED_DIR,
)
from retrieval.ingest.links import link_targets
from retrieval.ingest.parsing import parse_markdown
from retrieval.search import index as index_module
from retrieval.search import priors, ranking, warm
from retrieval.search.engine import SearchRequest, search
from retrieval.search.filters import FilterPlan
from retrieval.search.index import Index
from retrieval.search.priors import Signals, rescore

SECRET = b"links-test"


def _targets(markdown: str, relpath: str = "tasks/drain.md") -> list[str]:
    return link_targets(parse_markdown(markdown), relpath)


def test_links_are_read_relative_to_their_page_and_without_extension_anchor_or_index_name():
    text = """See [budgets](../concepts/budgets.md#limits), [the guide](guide/index.md),
[pods](/docs/concepts/pods/) and [again](../concepts/budgets.md?x=1).

[nodes]: ./nodes.markdown "Nodes"
"""
    assert _targets(text) == ["concepts/budgets", "tasks/guide", "docs/concepts/pods", "tasks/nodes"]


def test_external_links_anchors_and_code_are_not_page_links():
    text = """[site](https://example.com/docs/a.md), [mail](mailto:a@b.c), [cdn](//cdn.example.com/x),
[here](#drain).

```markdown
[in code](concepts/secret.md)
```
"""
    assert _targets(text) == []


def test_link_text_may_wrap_over_lines():
    assert _targets("Read the [command line\ntool reference](/docs/reference/cli/).\n") == ["docs/reference/cli"]


def test_a_page_key_drops_extension_index_name_and_dot_segments():
    assert page_key("concepts/pods.md") == "concepts/pods"
    assert page_key("guide/_index.md") == "guide"
    assert page_key("guide/README.md") == "guide"
    assert page_key("../a/./b.html") == "a/b"
    assert page_key("images/diagram.png") == "images/diagram.png"


def test_a_target_names_the_page_whose_key_is_its_longest_tail():
    pages = ["concepts/budgets.md", "tasks/drain.md", "docs/reference/cli.md", "reference/cli.md", "guide/index.md"]
    links = resolve_links(pages, [
        ["docs/concepts/budgets", "nowhere/at/all"],  # itself, under a site prefix; no page
        ["concepts/budgets", "concepts/budgets", "guide"],  # twice; an index page
        None,  # a page the build stored no links for
        ["docs/reference/cli"],  # the longer tail wins over reference/cli
        ["en/latest/reference/cli"],
    ])
    assert links.of(0).tolist() == []
    assert links.of(1).tolist() == [0, 4]
    assert links.of(2).tolist() == []
    assert links.of(3).tolist() == [2]
    assert links.of(4).tolist() == [3]


def test_a_tail_that_names_two_pages_names_neither():
    links = resolve_links(["a/setup.md", "a/setup/index.md", "b.md"], [[], [], ["a/setup"]])
    assert links.of(2).tolist() == []


def test_the_page_the_leading_pages_link_to_passes_a_slightly_better_match():
    # Pages 0 and 1 both link to page 2, whose section matches a little less well.
    items = [(0, 1.0), (1, 0.99), (2, 0.98)]
    links = resolve_links(["a", "b", "c"], [["c"], ["c"], []])
    signals = Signals(link_share=np.zeros(3), page=np.array([0, 1, 2]), links=links)
    ranked = rescore(items, signals)
    assert [p for p, _ in ranked] == [2, 0, 1]
    assert all(0.0 <= s <= 1.0 for _, s in ranked)
    assert [p for p, _ in rescore(items, Signals(link_share=np.zeros(3), page=np.array([0, 1, 2])))] == [0, 1, 2]


def test_links_lift_only_a_pages_best_section_and_never_a_far_weaker_match():
    items = [(0, 1.0), (1, 0.99), (2, 0.98), (3, 0.97), (4, 0.3)]
    links = resolve_links(["a", "b", "c", "d"], [["c", "d"], ["c", "d"], [], []])
    page = np.array([0, 1, 2, 2, 3])
    ranked = [p for p, _ in rescore(items, Signals(link_share=np.zeros(5), page=page, links=links))]
    assert ranked[0] == 2 and ranked.index(3) > ranked.index(1)  # the page's second section keeps its place
    assert ranked[-1] == 4  # page d is linked as often, but its section barely matches


def test_a_page_beyond_the_leading_pages_gains_nothing_from_links():
    n = priors.LINKED_PAGES + 1
    items = [(i, 1.0 - i / 1000) for i in range(n)]
    links = resolve_links([str(i) for i in range(n)], [[str(n - 1)]] * (n - 1) + [[]])
    ranked = rescore(items, Signals(link_share=np.zeros(n), page=np.arange(n), links=links))
    assert ranked[-1][0] == n - 1


PAGES = {
    "concepts/budgets.md": """---
title: Disruptions
---

Replicas of an application stop when nodes are drained or upgraded.

## Limiting voluntary disruptions

An owner declares how many replicas may be down at once, and the platform waits rather
than stop more than that during a drain or an upgrade.
""",
    "tasks/set-budget.md": """---
title: Set a disruption budget
---

Declare how many replicas may be down at once; read [Disruptions](/docs/concepts/budgets/) first.

## Writing the budget

Create a disruption budget with `minAvailable: 2` and apply it. The disruption budget
applies to every replica that matches its selector.
""",
    "tasks/drain.md": """---
title: Drain a node
---

Drain a node before maintenance; a drain honours every disruption budget (see
[how disruptions are limited](../concepts/budgets.md#limiting-voluntary-disruptions)).

## Draining

Run the drain command. A disruption budget can make it wait.
""",
}
QUESTION = "how many replicas may be down at once"


def _write(source: Path, pages: dict[str, str]) -> None:
    for relpath, text in pages.items():
        (source / relpath).parent.mkdir(parents=True, exist_ok=True)
        (source / relpath).write_text(text)
    (source / ".docs-mcp.json").write_text(json.dumps({"version": "1", "strategy": {"chunk_by": "h2"}}))


@pytest.fixture(scope="module")
def budgets(tmp_path_factory) -> Path:
    """A concept page both task pages link to; full text only."""
    from retrieval.ingest.build import BuildRequest, build_index

    root = tmp_path_factory.mktemp("budgets")
    _write(root / "docs", PAGES)
    build_index(BuildRequest(root / "docs", root / "build", "budgets-1", "budgets", provider=None, workers=1))
    return root


def _ids(index: Index, query: str) -> list[str]:
    return [h.chunk_id for h in search(index, SearchRequest(query), cursor_secret=SECRET).hits]


def test_the_build_stores_each_pages_links_and_the_search_resolves_them(budgets):
    index = Index(budgets / "build")
    rows = index.documents.to_table(columns=["filepath", "links"]).to_pylist()
    assert {r["filepath"]: r["links"] for r in rows} == {
        "concepts/budgets.md": [], "tasks/drain.md": ["concepts/budgets"], "tasks/set-budget.md": ["docs/concepts/budgets"]}
    names = index.catalog().table["filepath"].chunk(0).dictionary.to_pylist()
    concept = names.index("concepts/budgets.md")
    links = index.page_links()
    assert [names[p] for p in range(len(names)) if concept in links.of(p).tolist()] == ["tasks/drain.md",
                                                                                        "tasks/set-budget.md"]


def test_the_page_its_neighbours_link_to_answers_first(budgets, monkeypatch):
    index = Index(budgets / "build")
    assert _ids(index, QUESTION)[0] == "concepts/budgets.md#limiting-voluntary-disruptions"
    monkeypatch.setattr(priors, "PAGE_LINK_WEIGHT", 0.0)
    assert _ids(index, QUESTION)[0] == "tasks/set-budget.md#_preamble"


def test_a_filtered_search_goes_without_links(budgets, monkeypatch):
    index = Index(budgets / "build")
    seen = []
    real = priors.link_votes
    monkeypatch.setattr(priors, "link_votes", lambda *a: seen.append(a) or real(*a))
    ranking.rank(index, QUESTION, FilterPlan({}, None))
    assert len(seen) == 1
    assert ranking.rank(index, QUESTION, FilterPlan({"area": "x"}, "filepath != ''")).items
    assert len(seen) == 1


def test_a_build_made_before_links_were_stored_answers_without_them(budgets, tmp_path):
    old = tmp_path / "old-build"
    shutil.copytree(budgets / "build", old)
    Index(old).documents.drop_columns(["links"])
    for name in (LINK_STARTS_FILE, LINK_TARGETS_FILE):
        (old / MAPPED_DIR / name).unlink()
    before = Index(old)
    assert before.page_links() is None
    assert _ids(before, QUESTION)[0] == "tasks/set-budget.md#_preamble"


def test_a_rebuild_that_reuses_a_page_keeps_its_links(budgets, tmp_path):
    from retrieval.ingest.build import BuildRequest, build_index

    source = tmp_path / "docs"
    shutil.copytree(budgets / "docs", source)
    (source / "tasks" / "drain.md").write_text(PAGES["tasks/drain.md"] + "\n## Afterwards\n\nUncordon the node.\n")
    result = build_index(BuildRequest(source, tmp_path / "build", "budgets-2", "budgets", provider=None, workers=1,
                                      previous_dir=budgets / "build"))
    assert result.stats["reused_files"] == 2
    assert _ids(Index(tmp_path / "build"), QUESTION)[0] == "concepts/budgets.md#limiting-voluntary-disruptions"


def test_a_hit_best_on_every_signal_scores_one():
    items = [(0, 1.0), (1, 0.5)]
    links = resolve_links(["a", "b"], [[], ["a"]])
    ranked = rescore(items, Signals(link_share=np.zeros(2), page=np.array([0, 1]), links=links))
    assert ranked[0] == (0, pytest.approx(1.0))


def test_a_target_longer_than_any_page_path_still_finds_its_page():
    target = "/".join(["x"] * 5000 + ["concepts", "budgets"])
    links = resolve_links(["concepts/budgets.md", "tasks/drain.md"], [[], [target]])
    assert links.of(1).tolist() == [0]


def test_links_that_cannot_be_read_leave_the_search_answering(budgets, monkeypatch, caplog):
    index = Index(budgets / "build")

    def broken():
        raise OSError("documents table unreadable")

    monkeypatch.setattr(index, "page_links", broken)
    assert _ids(index, QUESTION)[0] == "tasks/set-budget.md#_preamble"
    assert "reading the links between pages failed" in caplog.text


def test_warming_resolves_the_links_even_when_its_searches_find_nothing(budgets, monkeypatch, tmp_path):
    earlier = tmp_path / "earlier-build"  # made before the build resolved them: resolved on first use
    shutil.copytree(budgets / "build", earlier)
    for name in (DOCUMENT_ROWIDS_FILE, DOCUMENT_PAGES_FILE, LINK_STARTS_FILE, LINK_TARGETS_FILE):
        (earlier / MAPPED_DIR / name).unlink()
    index = Index(earlier)
    monkeypatch.setattr(warm, "WARM_QUERIES", ("zyxwvut",))
    warm.warm_index(index)
    resolved = []
    real = index_module.page_tables
    monkeypatch.setattr(index_module, "page_tables", lambda *a: resolved.append(a) or real(*a))
    assert _ids(index, QUESTION)[0] == "concepts/budgets.md#limiting-voluntary-disruptions"
    assert resolved == []
    assert {"chunks", "documents"} <= set(index._datasets)  # opened while warming
