"""The docs profile at /mcp/ when the server holds several corpora: `list_corpora`, and a `corpus`
argument on search_docs and get_doc.

With one corpus, /mcp/ is exactly the one-corpus endpoint (the docs tool contract's schema with its taxonomy
enums); these tools appear once a second corpus has an active build. Per-corpus URLs
(/mcp/c/<corpus>/) never show them: there the corpus is chosen already, and a `corpus` argument
or a list of other corpora would be noise. Whether the choice is offered depends on how many
corpora the server holds, not on the caller's key; which names are offered, listed and searched
does (corpus/access.py), so a key limited to A never sees B's name or hits.

Without `corpus`, search_docs searches every corpus the caller may read and merges the hits by
score (corpus/serving.py corpora_search); each hit names its `corpus` and keeps the chunk ID it
has on that corpus's own endpoint, which get_doc reads with the same `corpus`.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, replace
from typing import Any

from django.conf import settings
from django.db import DatabaseError

from corpus.serving import (
    CorporaSearch,
    active_index,
    best_corpora,
    corpora_holding,
    corpora_search,
    corpus_cards,
    readable_corpus_names,
    served_corpus_count,
)
from mcp_endpoint import budget
from mcp_endpoint.budget import DROPPED, SNIPPET_STEPS, TRIMMED
from mcp_endpoint.jsontext import indented
from mcp_endpoint.profiles import Context, ToolDef, ToolError, ToolResult, docs_resources, feedback
from mcp_endpoint.profiles.shared import COVERAGE_DESCRIPTION, FRESHNESS_SCHEMA, coverage_json
from retrieval.search.engine import MAX_LIMIT, SearchRequest

LIST_CORPORA_DESCRIPTION = (
    "List the documentation corpora this server holds (libraries, products, services; each with its "
    "versions), with page counts and when each was last built. Pass `query` (a question or a library "
    "name) to rank them: the best match comes first. Then call search_docs or get_doc with its name as `corpus`."
)
CORPUS_DESCRIPTION = ("Which corpus to {action} (list_corpora describes them). Omit to {omitted}.")
MULTI_VERSION_DESCRIPTION = ("Which version of the named corpus to {action}; list_corpora gives each corpus's "
                             "versions. Omit for its default version.")
UNKNOWN = "unknown corpus {name!r}; {hint}"
AMBIGUOUS_FEEDBACK = ("Several corpora have the page of chunk {chunk_id!r} ({names}); nothing was stored. Send the "
                      "report again with `corpus` set to the search hit's `corpus`.")
FEEDBACK_NAME = "docs_feedback"
SEARCHED_BEST = ("Searched the {count} of {total} corpora that best match the query ({names}); pass `corpus` to "
                 "search another (list_corpora ranks them all).")
ROUTED = ("Ranked {names} of the {count} corpora (those that best match the query); pass `corpus` to search "
          "another.")
NO_MATCHING_CORPUS = ("No corpus of the {total} you may read matches the query by name, description, page titles or "
                      "page text; call list_corpora and pass `corpus` to search one.")


def search_all_max() -> int:
    return settings.DOCSMCP_SEARCH_ALL_MAX


def enum_max() -> int:
    return settings.DOCSMCP_CORPUS_ENUM_MAX


def applies(context: Context) -> bool:
    """Whether /mcp/ offers a choice of corpus: it is /mcp/ itself and more than one corpus is served.
    Without a database the endpoint serves its last known default corpus, as one-corpus servers do."""
    if context.corpus is not None:
        return False
    try:
        return served_corpus_count() > 1
    except DatabaseError:
        return False


def readable() -> list[str]:
    """The corpora the caller may read, by name."""
    return readable_corpus_names()


def resolve(name: Any, names: list[str] | None = None) -> str:
    """`name` when the caller may read that corpus; else a ToolError that suggests the nearest name."""
    names = readable() if names is None else names
    if isinstance(name, str) and name in names:
        return name
    text = str(name)
    close = difflib.get_close_matches(text.lower(), [n.lower() for n in names], n=1, cutoff=0.5)
    if close:
        hint = f"did you mean {next(n for n in names if n.lower() == close[0])!r}?"
    else:
        hint = "call list_corpora for the corpora you can search."
    raise ToolError(UNKNOWN.format(name=text, hint=hint))


# (the one-corpus tools' build, the names offered, the enum limit) -> the extended tools; made once, not per request.
_made: dict[tuple[str, tuple[str, ...], int], list[ToolDef]] = {}


def extended(tools: list[ToolDef], key: str) -> list[ToolDef]:
    names = tuple(readable())
    made = _made.get((key, names, enum_max()))
    if made is None:
        made = extend_tools(tools, list(names))
        if len(_made) > 64:
            _made.clear()
        _made[(key, names, enum_max())] = made
    return list(made)


def instructions() -> str:
    """What /mcp/ of several corpora tells an agent: how to choose, and the corpora the caller may read."""
    names = readable()
    shown = ", ".join(names[:enum_max()]) + (f" and {len(names) - enum_max()} more" if len(names) > enum_max() else "")
    return (f"This server searches the documentation of {len(names)} corpora: {shown}. Call list_corpora with "
            "the user's question to find the right one, then search_docs with `corpus` set to its name (omit "
            "`corpus` to search every corpus, hits merged by score; each hit names its `corpus`), then get_doc "
            "with a hit's chunk_id and the same `corpus` to read the chunk and its neighbours.")


def corpus_property(names: list[str], action: str, omitted: str) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": "string", "description": CORPUS_DESCRIPTION.format(action=action, omitted=omitted)}
    if len(names) <= enum_max():
        prop["enum"] = list(names)
    return prop


def extend_tools(tools: list[ToolDef], names: list[str]) -> list[ToolDef]:
    """The one-corpus tools with `corpus` (and a free-form `version`) added, and list_corpora."""
    out = []
    for tool in tools:
        if tool.name == "search_docs":
            # The default corpus's properties stay as they are (the docs tool contract: taxonomy filters); `corpus` is added
            # and `version` becomes free-form, since each corpus has its own versions.
            props = dict(tool.input_schema["properties"])
            props["corpus"] = corpus_property(names, "search", "search every corpus and merge the hits by score "
                                              "(with a filter or `version` and no `corpus`: the default corpus)")
            props["version"] = {"type": "string", "description": MULTI_VERSION_DESCRIPTION.format(action="search")}
            hit_schema = tool.output_schema["properties"]["hits"]["items"]
            output = {**tool.output_schema, "properties": {
                **tool.output_schema["properties"],
                "hits": {"type": "array", "items": {**hit_schema, "properties": {
                    **hit_schema["properties"],
                    "corpus": {"type": "string", "description": "The corpus the hit comes from: pass it to get_doc "
                                                                "as `corpus` with the hit's chunk_id."}}}}}}
            tool = replace(tool, description=_search_description(names),
                           input_schema={**tool.input_schema, "properties": props}, output_schema=output,
                           handler=_search_docs(tool.handler))
        elif tool.name == FEEDBACK_NAME:
            tool = feedback.tool(FEEDBACK_NAME, search="search_docs", read="get_doc", resolve=feedback_corpus,
                                 corpus_property=("corpus", corpus_property(
                                     names, "report on", "file it under the corpus that holds `chunk_id`'s page, "
                                     "else the default corpus")))
        elif tool.name == "get_doc":
            props = dict(tool.input_schema["properties"])
            props["corpus"] = corpus_property(names, "read the chunk from", "read from the default corpus")
            props["version"] = {"type": "string",
                                "description": MULTI_VERSION_DESCRIPTION.format(action="read the chunk from")}
            tool = replace(tool, input_schema={**tool.input_schema, "properties": props},
                           handler=_get_doc(tool.handler))
        out.append(tool)
    out.insert(0, LIST_CORPORA)
    return out


def _search_description(names: list[str]) -> str:
    shown = ", ".join(names[:enum_max()])
    more = f" and {len(names) - enum_max()} more" if len(names) > enum_max() else ""
    return (f"Search the documentation of {len(names)} corpora ({shown}{more}). Use this to find relevant "
            "documentation, guides, or API references; pass `corpus` to search one (list_corpora helps choose), "
            "omit it to search them all." + COVERAGE_DESCRIPTION)


def _search_docs(one_corpus):
    def handler(context: Context, arguments: dict[str, Any]) -> ToolResult:
        arguments = dict(arguments)
        name = arguments.pop("corpus", None)
        if name is not None:
            name = resolve(name)
            return _labelled(one_corpus(replace(context, corpus=name), arguments), name)
        if set(arguments) - {"query", "limit", "cursor"}:  # the default corpus's filters or version, as before
            return _labelled(one_corpus(context, arguments), default_name())
        names = readable()
        if not names:
            raise ToolError("no corpus you may read has an active build yet.")
        notice = None
        if len(names) > search_all_max():
            # Too many to search at once (each would be opened): the corpora list_corpora ranks first.
            total, names = len(names), best_corpora(arguments["query"], search_all_max())
            if not names:
                raise ToolError(NO_MATCHING_CORPUS.format(total=total))
            notice = SEARCHED_BEST.format(count=len(names), total=total, names=", ".join(names))
        request = SearchRequest(query=arguments["query"], limit=arguments.get("limit"), cursor=arguments.get("cursor"))
        found = corpora_search(names, request)
        if len(found.ranked) < len(names):
            routed = ROUTED.format(names=", ".join(found.ranked), count=len(names))
            notice = f"{notice} {routed}" if notice else routed
        return docs_resources.with_links(context, _fit(found, notice).saw(*found.seen), None)
    return handler


def _get_doc(one_corpus):
    def handler(context: Context, arguments: dict[str, Any]) -> ToolResult:
        arguments = dict(arguments)
        name = arguments.pop("corpus", None)
        if name is not None:
            context = replace(context, corpus=resolve(name))
        return one_corpus(context, arguments)
    return handler


def feedback_corpus(context: Context, arguments: dict[str, Any]) -> str | None:
    """The corpus a report at /mcp/ is about: `corpus` when given; else the one readable corpus holding
    `chunk_id`'s page (a hit of a search across corpora names its corpus, but an agent may leave it out);
    else the default corpus. A page several corpora hold asks for `corpus` rather than guess."""
    if arguments.get("corpus") is not None:
        return resolve(arguments["corpus"])
    chunk_id = arguments.get("chunk_id")
    if not chunk_id:
        return None
    holding = corpora_holding(chunk_id.partition("#")[0])
    if len(holding) > 1:
        raise ToolError(AMBIGUOUS_FEEDBACK.format(chunk_id=chunk_id, names=", ".join(holding[:10])))
    return holding[0] if holding else None


def default_name() -> str:
    return active_index(None).metadata.corpus.partition("@")[0]


def _labelled(result: ToolResult, name: str) -> ToolResult:
    """A one-corpus search page whose hits also name their corpus (text block and structured content)."""
    payload = result.structured
    if result.is_error or not isinstance(payload, dict):
        return result
    payload = {**payload, "hits": [{**hit, "corpus": name} for hit in payload.get("hits") or []]}
    content = [{"type": "text", "text": indented(payload)}, *result.content[1:]]
    return replace(result, content=content, structured=payload)


def hits_json(found: CorporaSearch, snippet_chars: int | None = None, keep: int | None = None) -> dict[str, Any]:
    hits = found.hits if keep is None else found.hits[:keep]
    return {
        "coverage": coverage_json(found.coverage),
        "hits": [
            {
                "chunk_id": h.hit.chunk_id,
                "score": h.hit.score,
                "title": h.hit.title,
                "heading": h.hit.heading,
                "breadcrumb": h.hit.breadcrumb,
                "snippet": budget.shorten(h.hit.snippet, snippet_chars),
                "filepath": h.hit.filepath,
                "metadata": h.hit.metadata,
                **h.freshness,
                "corpus": h.corpus.name,
            }
            for h in hits
        ],
        "next_cursor": found.cursor_after(len(hits)) if keep is not None and keep < len(found.hits)
        else found.next_cursor,
        "hint": None,
    }


def _fit(found: CorporaSearch, searched: str | None = None) -> ToolResult:
    """The merged page within the response budget: shorter snippets first, then fewer hits (the cursor
    continues at the first one left out), as for one corpus. `searched` says which corpora were searched
    when not all of them were."""

    def noted(payload: dict[str, Any], notice: str | None = None) -> dict[str, Any]:
        text = " ".join(t for t in (searched, notice) if t)
        if text:
            payload["notice"] = text
        return payload

    limit = budget.budget_chars()
    room = budget.NOTICE_ROOM + len(searched or "")
    payload = hits_json(found)
    if len(indented(payload)) + room <= limit:
        return ToolResult.json(noted(payload)).as_fitted()
    for chars in SNIPPET_STEPS:
        payload = hits_json(found, chars)
        if len(indented(payload)) + room <= limit:
            return ToolResult.json(noted(payload, TRIMMED.format(chars=chars))).as_fitted()
    keep = max(1, len(found.hits) - 1)
    while True:
        payload = noted(hits_json(found, SNIPPET_STEPS[-1], keep), DROPPED.format(kept=keep, chars=SNIPPET_STEPS[-1]))
        if keep == 1 or len(indented(payload)) + budget.NOTICE_ROOM <= limit:
            return ToolResult.json(payload).as_fitted()
        keep -= 1


def _list_corpora(context: Context, arguments: dict[str, Any]) -> ToolResult:
    query = (arguments.get("query") or "").strip() or None
    cards = corpus_cards(query)[: arguments.get("limit") or MAX_LIMIT]
    items = []
    for card in cards:
        item = asdict(card)
        if card.score is None:
            item.pop("score")
        items.append(item)
    return ToolResult.json({"corpora": items})


LIST_CORPORA = ToolDef(
    name="list_corpora",
    description=LIST_CORPORA_DESCRIPTION,
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "query": {"type": "string", "description": "Optional: a question or library name to rank the corpora by "
                                                       "(e.g. 'fastapi dependency injection')."},
            "limit": {"type": "integer", "description": "Maximum number of corpora to return. Default is 50.",
                      "minimum": 1, "maximum": MAX_LIMIT, "default": MAX_LIMIT},
        },
    },
    output_schema={
        "type": "object",
        "properties": {"corpora": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Pass as `corpus` to search_docs and get_doc."},
                "title": {"type": "string"},
                "description": {"type": "string"},
                "versions": {"type": "array", "items": {"type": "string"},
                             "description": "Versions with an active build, when there are several."},
                "default_version": {"type": ["string", "null"]},
                "pages": {"type": "integer"},
                "chunks": {"type": "integer"},
                "last_built": {"type": ["string", "null"]},
                "freshness": {"type": "object", "properties": {
                    **FRESHNESS_SCHEMA,
                    "stale": {"type": "boolean",
                              "description": "The corpus's git source has commits its active build lacks."}}},
                "score": {"type": "number", "description": "How well the corpus matches `query`: its share of the "
                                                           "evidence (an answer's scores sum to about 1; 0: no "
                                                           "query word in its name, description, page titles or "
                                                           "page text)."},
            },
            "required": ["name", "title", "description", "versions", "default_version", "pages", "chunks",
                         "last_built", "freshness"],
        }}},
        "required": ["corpora"],
    },
    handler=_list_corpora,
)
