"""A build's lexicon: how many of its pages and chunks hold each term, for finding the corpus a question is about.

`list_corpora` and the routing of a search across corpora score every candidate corpus against the
question without opening its index (retrieval/corpus_summary.py). Names, descriptions and titles
rarely hold what a question asks about: `RateLimitError` or "a fake card number that makes a charge
fail" are in a page's text. So the build counts, over its pages, the pages that hold each term: the
words of the page's title and text (`corpus_summary.page_words`) and the identifiers of its chunks (the
`ident` column, retrieval/ingest/terms.py, which keeps `max_connections` and `client.list_users`
whole); and, over its chunks, the chunks that hold each (the words of the chunk's title, heading and
text, and its identifiers): a long page holds most everyday words somewhere, so pages alone favour the
corpus of longest pages. The files keep only a 64-bit hash of each term (`term_hashes`;
both sides hash the same way): 16 bytes per distinct term, 0.4 MB for Kubernetes' 722 pages, mapped
read-only like the other mapped files, so a worker listing 1,000 corpora holds their lexicons once in
the host's page cache.

Written with the mapped files: `mapped/lexicon_terms.npy` (uint64 hashes, ascending),
`mapped/lexicon_pages.npy` (uint32: the pages holding each term, then the build's page count) and
`mapped/lexicon_chunks.npy` (uint32: the chunks holding each term, then the build's chunk count). A
build made before lexicons has none, and is scored as neither more nor less likely than the others;
one made before chunk counts is scored by its pages alone.
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
CHUNKS_FILE = "lexicon_chunks.npy"
READ_CHUNKS = 2048


def term_hashes(terms: Iterable[str]) -> np.ndarray:
    """Each term's first 8 bytes of BLAKE2b as uint64: stable across processes, unlike `hash`."""
    return np.array([int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in terms],
                    dtype=np.uint64)


def query_terms(query: str) -> np.ndarray:
    """The hashes of a question's terms, spelt as the lexicon spells a page's."""
    return term_hashes(dict.fromkeys(words(query) + identifier_terms(query)))


def lexicon_from_tables(chunks, documents) -> Lexicon:
    """Counts, per term, the chunks whose title, heading, text or identifiers hold it, and the pages holding
    it in any of their chunks (each chunk and each page once). One pass over the chunks, whose words are
    the pages' words: reading each page's text again cost as much as the pass itself. A page's words are
    held until its last chunk is read (its chunks are stored together, so one page at a time)."""
    unread = Counter(chunks.search().select(["filepath"]).limit(None).to_arrow()["filepath"].to_pylist())
    in_chunks: Counter[str] = Counter()
    in_pages: Counter[str] = Counter()
    reading: dict[str, set[str]] = {}
    columns = ("filepath", "title", "heading", "content", "ident")
    for batch in chunks.search().select(list(columns)).limit(None).to_batches(READ_CHUNKS):
        for path, title, heading, text, ident in zip(*(batch.column(c).to_pylist() for c in columns), strict=True):
            held = page_words(f"{title or ''}\n{heading or ''}\n{text or ''}")
            if ident:
                held.update(ident.split())
            in_chunks.update(held)
            reading.setdefault(path, set()).update(held)
            unread[path] -= 1
            if not unread[path]:
                in_pages.update(reading.pop(path))
    terms = list(in_chunks)
    hashes = term_hashes(terms)
    order = np.argsort(hashes, kind="stable")
    pages = np.array([in_pages[t] for t in terms], dtype=np.uint32)[order]
    held_by = np.array([in_chunks[t] for t in terms], dtype=np.uint32)[order]
    return Lexicon(hashes[order], pages, documents.count_rows(), held_by, chunks.count_rows())


def lexicon_files(lexicon: Lexicon) -> dict[str, bytes]:
    """The lexicon's files under mapped/, by name."""
    files = {TERMS_FILE: npy_bytes(lexicon.hashes),
             PAGES_FILE: npy_bytes(np.append(lexicon.pages, lexicon.total).astype(np.uint32))}
    if lexicon.chunks is not None:
        files[CHUNKS_FILE] = npy_bytes(np.append(lexicon.chunks, lexicon.chunk_total).astype(np.uint32))
    return files


def read_lexicon(mapped: Location) -> Lexicon | None:
    """The lexicon in a build's `mapped` directory (mapped read-only on a local disk); None for a build made
    before lexicons, or unreadable (logged: the corpus is ranked without it). Without chunk counts (a build
    made before them, or unreadable ones, logged) the pages' counts alone."""
    try:
        hashes, pages = _read(mapped, TERMS_FILE), _read(mapped, PAGES_FILE)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("lexicon at %s unreadable, ranking without it: %s", mapped, exc)
        return None
    if len(pages) != len(hashes) + 1:
        log.warning("lexicon at %s unreadable, ranking without it: %d terms, %d counts", mapped, len(hashes), len(pages))
        return None
    try:
        chunks = _read(mapped, CHUNKS_FILE)
    except FileNotFoundError:
        chunks = None
    except (OSError, ValueError) as exc:
        log.warning("lexicon chunk counts at %s unreadable, ranking by its pages: %s", mapped, exc)
        chunks = None
    if chunks is not None and len(chunks) != len(pages):
        log.warning("lexicon chunk counts at %s unreadable, ranking by its pages: %d terms, %d counts", mapped,
                    len(hashes), len(chunks))
        chunks = None
    if chunks is None:
        return Lexicon(hashes, pages[:-1], int(pages[-1]))
    return Lexicon(hashes, pages[:-1], int(pages[-1]), chunks[:-1], int(chunks[-1]))


def _read(mapped: Location, name: str) -> np.ndarray:
    if storage.is_remote(mapped):
        return np.load(io.BytesIO(storage.read_bytes(storage.join(mapped, name))), allow_pickle=False)
    return map_array(mapped / name)
