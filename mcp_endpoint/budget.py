"""The response budget: the most text one tool result may hand a model.

A model pays for every token a tool returns, and a client that pastes a 200 kB document into
its context crowds out the question it was answering. So every tool result stays within
MCP_RESPONSE_TOKEN_BUDGET tokens, estimated as characters / CHARS_PER_TOKEN (a common rule of
thumb for English prose and code; no tokenizer is loaded to count exactly).

A result is fitted once, by `fit`, which the transport calls on every tools/call result. A
handler that knows what can go fits its own result with the helpers below and marks it `fitted`
(search_docs shortens snippets, then ends the page early with a cursor to the first hit left
out; get_doc and section reads return the first part and name the chunk or section IDs to ask
for next): `fit` passes it on as it is. Any other result over budget keeps its first part, with
a notice saying so (`fit_result`); nothing is cut silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.conf import settings

from mcp_endpoint.profiles import ToolResult

CHARS_PER_TOKEN = 4
CUT_NOTICE = (
    "\n\n[Cut: this result exceeded the response budget of {tokens} tokens (about {chars} characters), "
    "so only its first part is shown. {how}]"
)
CONTENT_STEPS = (1500, 600, 250)  # characters per item, tried in turn when a list is over budget
NOTICE_ROOM = 400  # kept free for the notice a cut result carries
# search_docs's page over budget, one corpus or several: shorter snippets first, then fewer hits
SNIPPET_STEPS = (200, 120, 60)  # characters per snippet, tried in turn when a page is over budget
TRIMMED = "Snippets were shortened to {chars} characters to fit the response budget; get_doc returns any chunk in full."
DROPPED = (
    "Only {kept} hits fit the response budget (snippets shortened to {chars} characters); "
    "next_cursor continues with the next hit, so nothing is skipped."
)
GENERIC_HOW = "Ask for less (a smaller limit, a narrower query, or one section or chunk at a time)."


def budget_chars() -> int:
    return max(1, settings.MCP_RESPONSE_TOKEN_BUDGET) * CHARS_PER_TOKEN


def text_chars(result: ToolResult) -> int:
    """What a result costs: the text of its content blocks (structuredContent mirrors it)."""
    return sum(len(block.get("text", "")) for block in result.content if isinstance(block, dict))


def notice(how: str) -> str:
    chars = budget_chars()
    return CUT_NOTICE.format(tokens=chars // CHARS_PER_TOKEN, chars=chars, how=how)


def cut_text(text: str, limit: int, how: str) -> str:
    """`text` if it fits in `limit` characters, else its first part (at a line break when one
    is near) followed by the notice; the whole stays within `limit`."""
    if len(text) <= limit:
        return text
    tail = notice(how)
    room = max(0, limit - len(tail))
    head = text[:room]
    newline = head.rfind("\n")
    if newline > room * 3 // 4:
        head = head[:newline]
    return head + tail


def fit(result: ToolResult) -> ToolResult:
    """`result` within the budget: as its handler fitted it, else cut by `fit_result`. A fitted result
    still over budget (a handler keeps at least one hit or its target chunk) is cut the same way."""
    if result.fitted and text_chars(result) <= budget_chars():
        return result
    return fit_result(result)


def fit_result(result: ToolResult) -> ToolResult:
    """The last resort for any tool: cut text blocks that together exceed the budget. Structured
    content that no longer matches the cut text is dropped, so the two never disagree."""
    limit = budget_chars()
    if text_chars(result) <= limit:
        return result
    content: list[dict[str, Any]] = []
    left = limit
    for block in result.content:
        text = block.get("text") if isinstance(block, dict) else None
        if text is None:
            content.append(block)
            continue
        if left <= 0:
            continue
        kept = cut_text(text, left, GENERIC_HOW)
        content.append({**block, "text": kept})
        left -= len(kept)
    return replace(result, content=content, structured=None)



def shorten(text: str, chars: int | None) -> str:
    if chars is None or len(text) <= chars:
        return text
    return text[: chars - 1].rstrip() + "…"


def fit_items(
    items: list[dict[str, Any]], fields: tuple[str, ...], size: Callable[[list[dict[str, Any]]], int],
    steps: tuple[int, ...] = CONTENT_STEPS, share: int | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """`items` within the budget (or `share` characters of it) as measured by `size`: the text
    `fields` of each item shortened first, then items dropped from the end. Returns the items
    and a notice saying what was done, or None."""
    limit = (share or budget_chars()) - NOTICE_ROOM
    if size(items) <= limit + NOTICE_ROOM:
        return items, None
    named = " and ".join(fields) + (" were" if len(fields) > 1 else " was")
    for chars in steps:
        shortened = [_shortened(item, fields, chars) for item in items]
        if size(shortened) <= limit:
            return shortened, (
                f"To fit the response budget, each result's {named} shortened to {chars} characters; "
                "ask for one document, section or chunk to read it whole."
            )
    kept = shortened
    while len(kept) > 1 and size(kept) > limit:
        kept = kept[:-1]
    return kept, (
        f"To fit the response budget, each result's {named} shortened to {steps[-1]} characters and only "
        f"the first {len(kept)} of {len(items)} results are shown; ask for fewer results or a narrower query."
    )


def _shortened(item: dict[str, Any], fields: tuple[str, ...], chars: int) -> dict[str, Any]:
    return {**item, **{f: shorten(item[f], chars) for f in fields if isinstance(item.get(f), str)}}


def fit_text_field(payload: dict[str, Any], field: str, first_line: int,
                   size: Callable[[dict[str, Any]], int]) -> tuple[dict[str, Any], int | None]:
    """`payload` with its `field` (text starting at source line `first_line`) cut to fit the budget
    at a line break. Returns the payload and the first source line left out, or None if nothing was."""
    limit = budget_chars() - NOTICE_ROOM
    if size(payload) <= limit + NOTICE_ROOM:
        return payload, None
    text = payload[field]
    room = max(0, limit - size({**payload, field: ""}))
    while True:
        head = text[:room]
        newline = head.rfind("\n")
        head = head[:newline] if newline > 0 else head
        cut = {**payload, field: head}
        if size(cut) <= limit or not head:
            return cut, first_line + head.count("\n") + 1
        room = room * 9 // 10


def rest_of_document(entries: list[Any], line: int, end: int | None, how: str) -> str:
    """The notice of a document or section read cut at source `line`: where it stops, the outline
    headings after that (before `end`, the section's last line), and how to read them."""
    rest = [e.text for e in entries if e.line >= line and (end is None or e.line <= end)][:12]
    named = f" Its remaining sections start with: {', '.join(repr(h) for h in rest)}." if rest else ""
    return f"Cut to fit the response budget: the content stops before source line {line}.{named} {how}"
