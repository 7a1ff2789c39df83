"""A build's lexicon: how many of its pages hold each term, for finding the corpus a question is about.

`list_corpora` and the routing of a search across corpora score every candidate corpus against the
question without opening its index (retrieval/corpus_summary.py). Names, descriptions and titles
rarely hold what a question asks about: `RateLimitError` or "a fake card number that makes a charge
fail" are in a page's text. So the build counts, over its pages, the pages that hold each term: the
words of the page's title and text (`corpus_summary.page_words`) and the identifiers of its chunks (the
`ident` column, retrieval/ingest/terms.py, which keeps `max_connections` and `client.list_users`
whole). The files keep only a 64-bit hash of each term (`term_hashes`; both sides hash the same way):
12 bytes per distinct term, 0.3 MB for Kubernetes' 722 pages, mapped read-only like the other mapped
files, so a worker listing 1,000 corpora holds their lexicons once in the host's page cache.

Written with the mapped files: `mapped/lexicon_terms.npy` (uint64 hashes, ascending) and
`mapped/lexicon_pages.npy` (uint32: the pages holding each term, then the build's page count); a build
made before lexicons has none, and is scored as neither more nor less likely than the others.
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections import Counter
from collections.abc import Iterable

import numpy as np

from retrieval import storage
from retrieval.corpus_summary import Lexicon, page_words, words
from retrieval.storage import Location

from .npyfiles import map_array, npy_bytes
from .terms import identifier_terms

log = logging.getLogger("retrieval.ingest")

TERMS_FILE = "lexicon_terms.npy"
PAGES_FILE = "lexicon_pages.npy"
READ_PAGES = 512


def term_hashes(terms: Iterable[str]) -> np.ndarray:
    """Each term's first 8 bytes of BLAKE2b as uint64: stable across processes, unlike `hash`."""
    return np.array([int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in terms],
                    dtype=np.uint64)


def query_terms(query: str) -> np.ndarray:
    """The hashes of a question's terms, spelt as the lexicon spells a page's."""
    return term_hashes(dict.fromkeys(words(query) + identifier_terms(query)))


def lexicon_from_tables(chunks, documents) -> Lexicon:
    """Counts, per term, the pages whose title, text or chunk identifiers hold it (each page once)."""
    identifiers: dict[str, set[str]] = {}
    for batch in chunks.search().select(["filepath", "ident"]).limit(None).to_batches():
        for path, ident in zip(batch.column("filepath").to_pylist(), batch.column("ident").to_pylist(), strict=True):
            if ident:
                identifiers.setdefault(path, set()).update(ident.split())
    counts: Counter[str] = Counter()
    total = 0
    for batch in documents.search().select(["filepath", "title", "content"]).limit(None).to_batches(READ_PAGES):
        for path, title, text in zip(*(batch.column(c).to_pylist() for c in ("filepath", "title", "content")),
                                     strict=True):
            counts.update(page_words(f"{title or ''}\n{text or ''}") | identifiers.get(path, set()))
            total += 1
    terms = list(counts)
    hashes = term_hashes(terms)
    order = np.argsort(hashes, kind="stable")
    pages = np.array([counts[t] for t in terms], dtype=np.uint32)
    return Lexicon(hashes[order], pages[order], total)


def lexicon_files(lexicon: Lexicon) -> dict[str, bytes]:
    """The lexicon's files under mapped/, by name."""
    return {TERMS_FILE: npy_bytes(lexicon.hashes),
            PAGES_FILE: npy_bytes(np.append(lexicon.pages, lexicon.total).astype(np.uint32))}


def read_lexicon(mapped: Location) -> Lexicon | None:
    """The lexicon in a build's `mapped` directory (mapped read-only on a local disk); None for a build made
    before lexicons, or unreadable (logged: the corpus is ranked without it)."""
    try:
        if storage.is_remote(mapped):
            hashes, pages = (np.load(io.BytesIO(storage.read_bytes(storage.join(mapped, name))), allow_pickle=False)
                             for name in (TERMS_FILE, PAGES_FILE))
        else:
            hashes, pages = (map_array(mapped / name) for name in (TERMS_FILE, PAGES_FILE))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("lexicon at %s unreadable, ranking without it: %s", mapped, exc)
        return None
    if len(pages) != len(hashes) + 1:
        log.warning("lexicon at %s unreadable, ranking without it: %d terms, %d counts", mapped, len(hashes), len(pages))
        return None
    return Lexicon(hashes, pages[:-1], int(pages[-1]))
