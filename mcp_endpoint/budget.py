"""The response budget: the most text one tool result may hand a model.

A model pays for every token a tool returns, and a client that pastes a 200 kB document into
its context crowds out the question it was answering. So every tool result stays within
MCP_RESPONSE_TOKEN_BUDGET tokens, estimated as characters / CHARS_PER_TOKEN (a common rule of
thumb for English prose and code; no tokenizer is loaded to count exactly).

Profiles fit their own results first, where they know what can go (search_docs shortens
snippets before it drops hits; get_doc and section reads return the first part and name the
chunk or section IDs to ask for next). `fit_result` is the net under all of them: a result
still over budget keeps its first part, with a notice saying so; nothing is cut silently.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.conf import settings

from mcp_endpoint.profiles import ToolResult

CHARS_PER_TOKEN = 4
CUT_NOTICE = (
    "\n\n[Cut: this result exceeded the response budget of {tokens} tokens (about {chars} characters), "
    "so only its first part is shown. {how}]"
)
GENERIC_HOW = "Ask for less (a smaller limit, a narrower query, or one section or chunk at a time)."


def budget_chars() -> int:
    return max(1, int(settings.MCP_RESPONSE_TOKEN_BUDGET)) * CHARS_PER_TOKEN


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


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
