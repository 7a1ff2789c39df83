"""Stateless HMAC cursors: what they bind, every way they are refused, and paging through a search."""

from __future__ import annotations

import base64
import json

import pytest

from retrieval.errors import InvalidArgument, InvalidCursor
from retrieval.search.cursor import (
    MALFORMED,
    OTHER_SEARCH,
    STALE,
    TAMPERED,
    CursorState,
    decode_cursor,
    encode_cursor,
)
from retrieval.search.engine import SearchRequest, search
from tests.retrieval_fixtures import SECRET, handwritten_fts_index, handwritten_index  # noqa: F401

FILTERS = {"language": "python"}
STATE = CursorState(offset=10, limit=10, depth=100)


def make(query: str = "retries", filters: dict | None = None, build_id: str = "b1", secret: bytes = SECRET,
         state: CursorState = STATE) -> str:
    return encode_cursor(secret, query=query, filters=FILTERS if filters is None else filters,
                         build_id=build_id, state=state)


def decode(token: str, query: str = "retries", filters: dict | None = None, build_id: str = "b1") -> CursorState:
    return decode_cursor(SECRET, token, query=query, filters=FILTERS if filters is None else filters,
                         build_id=build_id)


def refused(token: str, **kwargs) -> str:
    with pytest.raises(InvalidCursor) as err:
        decode(token, **kwargs)
    return str(err.value)


def test_cursor_round_trips_its_page_state():
    token = make()
    assert decode(token) == STATE
    body, sig = token.split(".")
    assert set(body + sig) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_cursor_does_not_carry_the_query_text():
    body = make(query="my secret project name").split(".")[0]
    payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    assert b"secret project" not in payload


def test_edited_payload_is_refused_as_tampered():
    body, sig = make().split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["o"] = 0
    forged = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
    assert refused(forged.decode().rstrip("=") + "." + sig) == TAMPERED


def test_truncated_cursor_is_refused():
    token = make()
    assert refused(token[:-4]) == TAMPERED
    assert refused(token.split(".")[0]) == MALFORMED


def test_cursor_signed_with_another_secret_is_refused_as_tampered():
    assert refused(make(secret=b"someone else's secret")) == TAMPERED


def test_garbage_is_refused_as_malformed():
    for token in ("", "not a cursor", "a.b.c", "%%%.%%%", "x" * 5000):
        assert refused(token) == MALFORMED


def test_cursor_from_an_older_build_says_the_docs_were_rebuilt():
    assert refused(make(build_id="b0")) == STALE
    assert STALE == ("Cursor belongs to an older index build (the docs were rebuilt); "
                     "repeat the search without a cursor.")


def test_cursor_for_another_query_or_other_filters_is_refused():
    assert refused(make(), query="timeouts") == OTHER_SEARCH
    assert refused(make(), filters={"language": "go"}) == OTHER_SEARCH
    assert refused(make(), filters={}) == OTHER_SEARCH


def test_tampered_message_tells_the_agent_what_to_do():
    assert TAMPERED == "Cursor is invalid or was tampered with; repeat the search without a cursor."


def test_an_empty_secret_cannot_sign():
    with pytest.raises(InvalidArgument, match="secret"):
        make(secret=b"")


# --- through search() ---------------------------------------------------------------------

QUERY = "API error requests HTTP"


def all_pages(index, limit: int, query: str = QUERY, filters: dict | None = None) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        result = search(index, SearchRequest(query, filters or {}, limit=limit, cursor=cursor), cursor_secret=SECRET)
        pages.append([h.chunk_id for h in result.hits])
        cursor = result.next_cursor
        if cursor is None:
            return pages


def test_paging_returns_every_result_once_in_order(handwritten_fts_index):  # noqa: F811
    everything = [h.chunk_id for h in search(handwritten_fts_index, SearchRequest(QUERY, limit=50),
                                             cursor_secret=SECRET).hits]
    assert len(everything) > 7
    pages = all_pages(handwritten_fts_index, limit=3)
    assert [cid for page in pages for cid in page] == everything
    assert all(len(page) == 3 for page in pages[:-1]) and 1 <= len(pages[-1]) <= 3


def test_paging_with_a_filter_stays_inside_the_filter(handwritten_fts_index):  # noqa: F811
    pages = all_pages(handwritten_fts_index, limit=2, filters={"language": "python", "scope": "sdk-specific"})
    ids = [cid for page in pages for cid in page]
    assert ids and len(ids) == len(set(ids))
    assert all(cid.startswith("sdks/python/") for cid in ids)


def test_last_page_has_no_next_cursor(handwritten_fts_index):  # noqa: F811
    result = search(handwritten_fts_index, SearchRequest("max_connections", limit=50), cursor_secret=SECRET)
    assert result.next_cursor is None


def test_page_size_may_change_and_defaults_to_the_cursors(handwritten_fts_index):  # noqa: F811
    everything = [h.chunk_id for h in search(handwritten_fts_index, SearchRequest(QUERY, limit=50),
                                             cursor_secret=SECRET).hits]
    first = search(handwritten_fts_index, SearchRequest(QUERY, limit=2), cursor_secret=SECRET)
    second = search(handwritten_fts_index, SearchRequest(QUERY, cursor=first.next_cursor), cursor_secret=SECRET)
    assert second.limit == 2 and second.offset == 2
    third = search(handwritten_fts_index, SearchRequest(QUERY, limit=4, cursor=second.next_cursor),
                   cursor_secret=SECRET)
    got = [h.chunk_id for r in (first, second, third) for h in r.hits]
    assert got == everything[:8]


def test_cursor_from_another_build_of_the_same_docs_is_stale(handwritten_index, handwritten_fts_index):  # noqa: F811
    first = search(handwritten_index, SearchRequest(QUERY, limit=2), cursor_secret=SECRET)
    with pytest.raises(InvalidCursor) as err:
        search(handwritten_fts_index, SearchRequest(QUERY, cursor=first.next_cursor), cursor_secret=SECRET)
    assert str(err.value) == STALE


def test_cursor_reused_with_another_query_is_refused(handwritten_fts_index):  # noqa: F811
    first = search(handwritten_fts_index, SearchRequest(QUERY, limit=2), cursor_secret=SECRET)
    with pytest.raises(InvalidCursor) as err:
        search(handwritten_fts_index, SearchRequest("timeouts", cursor=first.next_cursor), cursor_secret=SECRET)
    assert str(err.value) == OTHER_SEARCH
    with pytest.raises(InvalidCursor):
        search(handwritten_fts_index, SearchRequest(QUERY, {"language": "python"}, cursor=first.next_cursor),
               cursor_secret=SECRET)
