"""A build's lexicon (retrieval/format/lexicon.py): the terms a question is matched against, counted per
page and per chunk, spelt exactly as a question's words are."""

from __future__ import annotations

import lance
import lancedb
import pyarrow as pa

from retrieval.corpus_summary import words
from retrieval.format.lexicon import READ_CHUNKS, lexicon_from_tables, term_hashes

CHUNKS = [  # (page, title, heading, text, identifiers)
    ("a.md", "Routers", "Intro", "C++ and C# clients; #tags, ++xy and +a+b; the routers' routing.", "max_connections"),
    ("a.md", "Routers", None, "Set X-RateLimit-Remaining; Élan and naïve café, 100 ms.", None),
    ("b.md", "Queues", "Retries", "Retry queues — the router retries.", "client.list_users max_connections"),
    ("c.md", None, None, None, ""),
]


def _tables(tmp_path, chunks):
    db = lancedb.connect(str(tmp_path))
    db.create_table("chunks", pa.table({
        "filepath": [c[0] for c in chunks], "title": [c[1] for c in chunks], "heading": [c[2] for c in chunks],
        "content": [c[3] for c in chunks], "ident": [c[4] for c in chunks]}))
    pages = sorted({c[0] for c in chunks})
    db.create_table("documents", pa.table({"filepath": pages}))
    return lance.dataset(tmp_path / "chunks.lance"), lance.dataset(tmp_path / "documents.lance")


def _expected(chunks) -> tuple[dict[str, int], dict[str, int]]:
    """Per term, the chunks and the pages holding it, counted the plain way: each chunk's `words` and
    identifiers."""
    in_chunks: dict[str, int] = {}
    by_page: dict[str, set[str]] = {}
    for page, title, heading, text, ident in chunks:
        held = set(words(f"{title or ''}\n{heading or ''}\n{text or ''}")) | set((ident or "").split())
        for term in held:
            in_chunks[term] = in_chunks.get(term, 0) + 1
        by_page.setdefault(page, set()).update(held)
    in_pages: dict[str, int] = {}
    for held in by_page.values():
        for term in held:
            in_pages[term] = in_pages.get(term, 0) + 1
    return in_chunks, in_pages


def _counts(lexicon, terms: list[str]) -> tuple[list[int], list[int]]:
    pages, chunks = lexicon.frequencies(term_hashes(terms))
    return chunks.tolist(), pages.tolist()


def test_the_lexicon_spells_and_counts_terms_as_a_questions_words_are_spelt(tmp_path):
    chunks, documents = _tables(tmp_path, CHUNKS)
    lexicon = lexicon_from_tables(chunks, documents)
    in_chunks, in_pages = _expected(CHUNKS)
    terms = sorted(in_chunks)
    assert {"c++", "c#", "tag", "xy", "a+b", "router", "routing", "ratelimit", "max_connections",
            "client.list_users", "100"} <= set(terms)
    assert len(lexicon.hashes) == len(terms)
    assert _counts(lexicon, terms) == ([in_chunks[t] for t in terms], [in_pages[t] for t in terms])
    assert _counts(lexicon, ["router"]) == ([3], [2]) and _counts(lexicon, ["max_connections"]) == ([2], [2])
    assert (lexicon.total, lexicon.chunk_total) == (3, 4)


def test_a_page_whose_chunks_straddle_two_batches_is_counted_once(tmp_path):
    many = [("long.md", "Long", f"Part {i}", f"section {i} of the long page", None) for i in range(READ_CHUNKS + 5)]
    chunks, documents = _tables(tmp_path, many + CHUNKS)
    lexicon = lexicon_from_tables(chunks, documents)
    assert _counts(lexicon, ["section", "long"]) == ([READ_CHUNKS + 5] * 2, [1, 1])
    assert _counts(lexicon, ["router"]) == ([3], [2])
