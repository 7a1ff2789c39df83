"""A build's lexicon: how many of its pages and chunks hold each term, for finding the corpus a question is about.

`list_corpora` and the routing of a search across corpora score every candidate corpus against the
question without opening its index (retrieval/corpus_summary.py). Names, descriptions and titles
rarely hold what a question asks about: `RateLimitError` or "a fake card number that makes a charge
fail" are in a page's text. So the build counts, over its chunks, the chunks that hold each term: the
words of the chunk's title, heading and text (spelt as `corpus_summary.words` spells a question's) and
its identifiers (the `ident` column, retrieval/format/terms.py, which keeps `max_connections` and
`client.list_users` whole); and, over its pages, the pages any of whose chunks hold it. A long page
holds most everyday words somewhere, so pages alone favour the corpus of longest pages. The files keep
only a 64-bit hash of each term (`term_hashes`; both sides hash the same way): 16 bytes per distinct
term, 0.4 MB for Kubernetes' 722 pages, mapped read-only like the other mapped files, so a worker
listing 1,000 corpora holds their lexicons once in the host's page cache.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from retrieval import storage
from retrieval.corpus_summary import WORD_SEPARATORS, WORD_TAIL_ONLY, Lexicon, words
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


LEXICON_COLUMNS = ["filepath", "title", "heading", "content", "ident"]


@dataclass(frozen=True)
class TermCounts:
    """Per term (by hash, ascending): the chunks holding it and the pages holding it, over some rows.

    Both counts add up page by page (a page's chunks are its file's), so the counts of a patched build are
    the previous build's, minus those of the files it dropped, plus those of the files it added."""

    hashes: np.ndarray  # uint64, ascending
    pages: np.ndarray  # int64
    chunks: np.ndarray  # int64


def lexicon_from_tables(chunks, documents) -> Lexicon:
    """Counts, per term, the chunks whose title, heading, text or identifiers hold it, and the pages holding
    it in any of their chunks (each chunk and each page once)."""
    counts = term_counts(chunks.to_batches(columns=LEXICON_COLUMNS, batch_size=READ_CHUNKS))
    return Lexicon(counts.hashes, counts.pages.astype(np.uint32), documents.count_rows(),
                   counts.chunks.astype(np.uint32), chunks.count_rows())


def term_counts(batches: Iterable) -> TermCounts:
    """The term counts of chunk rows (LEXICON_COLUMNS) given as Arrow record batches; a page's chunks may
    straddle batches.

    One pass over the chunks, whose words are the pages' words, in Arrow: each batch's text is lowered and
    split by Arrow's string kernels, each distinct spelling is normalised once (`words`), and the (term,
    chunk) and (term, page) pairs are counted with numpy. At 124.5k chunks this takes 7.8 s, where splitting
    each chunk in Python took 10.5-12.3 s and the pages alone 6.4-9.6 s (docs/BENCHMARKS.md)."""
    vocabulary: dict[str, int] = {}
    spelt: dict[str, int] = {}  # a word as split -> its term's id, -1 for a stop word

    def word_id(word: str) -> int:
        found = spelt.get(word)
        if found is None:
            normal = words(word)
            found = spelt[word] = vocabulary.setdefault(normal[0], len(vocabulary)) if normal else -1
        return found

    def identifier_id(identifier: str) -> int:
        return vocabulary.setdefault(identifier, len(vocabulary)) if identifier else -1

    codes: dict[str, int] = {}
    in_chunks = np.zeros(0, np.int64)
    page_keys: list[np.ndarray] = []
    for batch in batches:
        rows = batch.num_rows
        if not rows:
            continue
        terms, owners = _batch_terms(batch, word_id, identifier_id)
        pairs = _distinct(terms * rows + owners)  # each term once per chunk
        counted = np.bincount(pairs // rows)
        in_chunks = np.pad(in_chunks, (0, max(len(counted) - len(in_chunks), 0)))
        in_chunks[:len(counted)] += counted
        page = np.array([codes.setdefault(path, len(codes)) for path in batch.column("filepath").to_pylist()], np.int64)
        page_keys.append(_distinct((pairs // rows) << 32 | page[pairs % rows]))
    in_pages = np.bincount(_distinct(np.concatenate(page_keys)) >> 32, minlength=len(vocabulary)) if page_keys \
        else np.zeros(0, np.int64)
    in_chunks = np.pad(in_chunks, (0, len(vocabulary) - len(in_chunks)))
    hashes = term_hashes(vocabulary)
    order = np.argsort(hashes, kind="stable")
    return TermCounts(hashes[order], in_pages[order].astype(np.int64), in_chunks[order].astype(np.int64))


def patch_lexicon(previous: Lexicon, removed: TermCounts, added: TermCounts, pages: int, chunks: int) -> Lexicon:
    """The previous build's lexicon with the dropped files' counts taken out and the added files' put in: the
    lexicon a full count of the patched build gives, term for term (a term no chunk holds any more goes).
    `pages` and `chunks` are the patched build's totals."""
    if previous.chunks is None:
        raise ValueError("the previous lexicon has no chunk counts to patch")
    hashes = np.concatenate([previous.hashes, removed.hashes, added.hashes])
    distinct, where = np.unique(hashes, return_inverse=True)
    in_pages = np.zeros(len(distinct), np.int64)
    in_chunks = np.zeros(len(distinct), np.int64)
    offsets = np.cumsum([0, len(previous.hashes), len(removed.hashes), len(added.hashes)])
    for n, (sign, page_counts, chunk_counts) in enumerate(((1, previous.pages, previous.chunks),
                                                           (-1, removed.pages, removed.chunks),
                                                           (1, added.pages, added.chunks))):
        positions = where[offsets[n]:offsets[n + 1]]
        np.add.at(in_pages, positions, sign * np.asarray(page_counts, np.int64))
        np.add.at(in_chunks, positions, sign * np.asarray(chunk_counts, np.int64))
    if (in_chunks < 0).any() or (in_pages < 0).any():
        raise ValueError("the removed rows' terms are not all in the previous lexicon")
    held = in_chunks > 0
    return Lexicon(distinct[held], in_pages[held].astype(np.uint32), pages, in_chunks[held].astype(np.uint32), chunks)


def _batch_terms(batch, word_id: Callable[[str], int], identifier_id: Callable[[str], int]) -> tuple[np.ndarray, np.ndarray]:
    """(term id, row) of each word of the batch's chunks' title, heading and text and each identifier, stop
    words left out; the ids of distinct spellings are looked up once per batch."""
    text = pc.binary_join_element_wise(*(pc.fill_null(batch.column(c), "") for c in ("title", "heading", "content")),
                                       "\n")
    split = pc.split_pattern_regex(pc.utf8_lower(text), pattern=WORD_SEPARATORS)
    identifiers = pc.utf8_split_whitespace(pc.fill_null(batch.column("ident"), ""))
    terms, owners = [], []
    for spellings, parents, id_of in ((pc.utf8_ltrim(pc.list_flatten(split), characters=WORD_TAIL_ONLY),
                                       pc.list_parent_indices(split), word_id),
                                      (pc.list_flatten(identifiers), pc.list_parent_indices(identifiers), identifier_id)):
        encoded = pc.dictionary_encode(spellings)
        ids = np.array([id_of(s) for s in encoded.dictionary.to_pylist()], np.int64)[encoded.indices.to_numpy()]
        held = ids >= 0
        terms.append(ids[held])
        owners.append(parents.to_numpy()[held])
    return np.concatenate(terms), np.concatenate(owners)


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct keys, ascending: sorting is 40x faster than np.unique's hashing on these int64 keys."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


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
        hashes = _read(mapped, TERMS_FILE)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("lexicon at %s unreadable, ranking without it: %s", mapped, exc)
        return None
    pages = _counts(mapped, PAGES_FILE, len(hashes))
    if pages is None:
        return None
    chunks = _counts(mapped, CHUNKS_FILE, len(hashes))
    if chunks is None:
        return Lexicon(hashes, pages[:-1], int(pages[-1]))
    return Lexicon(hashes, pages[:-1], int(pages[-1]), chunks[:-1], int(chunks[-1]))


def _counts(mapped: Location, name: str, terms: int) -> np.ndarray | None:
    """A counts file (one count per term, then the total); None when it is absent, or unreadable (logged)."""
    try:
        counts = _read(mapped, name)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("lexicon file %s at %s unreadable, ranking without it: %s", name, mapped, exc)
        return None
    if len(counts) != terms + 1:
        log.warning("lexicon file %s at %s unreadable, ranking without it: %d terms, %d counts", name, mapped, terms,
                    len(counts))
        return None
    return counts


def _read(mapped: Location, name: str) -> np.ndarray:
    if storage.is_remote(mapped):
        return np.load(io.BytesIO(storage.read_bytes(storage.join(mapped, name))), allow_pickle=False)
    return map_array(mapped / name)
