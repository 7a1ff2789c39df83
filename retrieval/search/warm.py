"""Warming an opened build: everything a first search would otherwise pay for, done up front.

A serving process runs this on each active build before it takes requests, and on a newly
activated build before the build replaces the old one (see IndexCache). The first search on a
cold build loads the catalog, vectors and chunk text into memory, opens the tables on the async
loop, reads the full-text indexes from disk and, for a vector index, builds the embedding
model's session; at 124.5k chunks that is seconds, paid by whichever request came first.
"""

from __future__ import annotations

from retrieval.embeddings.base import EmbeddingProvider

from .engine import SearchRequest, search
from .index import Index
from .ranking import page_links

WARM_QUERIES = ("configure", "how to install and configure the client")  # one word, and a phrase


def warm_index(index: Index, embedder: EmbeddingProvider | None = None) -> None:
    """Loads what a search holds in memory and runs a search per lexical shape through every leg."""
    index.catalog()
    index.documents  # noqa: B018 - opens the documents table, which get_doc and outlines read
    page_links(index)  # resolved here even when the warm queries below find nothing to rank
    index.lexicon()  # the coverage verdict weighs a question's terms by it
    secret = b"docsmcp-warm"
    for query in WARM_QUERIES:
        search(index, SearchRequest(query=query, limit=10), embedder=embedder, cursor_secret=secret)
