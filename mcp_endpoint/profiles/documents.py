"""The documents profile (docs/contracts/documents-tools.md): collections, documents, outlines, sections, batch and related search,
at /mcp/documents/.

A collection is a markdown corpus. A client may name it by its name or any of its aliases; results
show the name the client used as `collection`, plus `collectionId` (the corpus name) when that was
an alias (documents_collections.py). Tools that return a list in the seed (`documents_list_collections`, `documents_search`)
return that list as JSON text and wrap it in an object for `structuredContent`, which must be an
object. The seed's not-found messages come back word for word as `isError` results.
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError

from corpus import querylog
from corpus.serving import active_index, corpus_search_batch, embedder_for, freshness
from mcp_endpoint import budget, ratelimit
from mcp_endpoint.jsontext import indented
from mcp_endpoint.profiles import Context, FunctionProfile, ToolDef, ToolError, ToolResult, feedback
from mcp_endpoint.profiles.documents_collections import (
    Collection,
    open_document,
    resolve_collection,
    search_targets,
)
from mcp_endpoint.profiles.documents_schemas import (
    BATCH_SCHEMA,
    DESCRIPTIONS,
    GET_DOCUMENT_SCHEMA,
    LIST_DOCUMENTS_SCHEMA,
    OUTLINE_SCHEMA,
    OUTPUT,
    RELATED_SCHEMA,
    SEARCH_SCHEMA,
    SECTION_SCHEMA,
    empty_schema,
)
from mcp_endpoint.profiles.shared import (
    COVERAGE_DESCRIPTION,
    CorpusHit,
    best_coverage,
    corpora_freshness,
    coverage_json,
    markdown_corpora,
    merge_hits,
    served_corpora,
)
from retrieval.errors import NotFound
from retrieval.search.coverage import Coverage
from retrieval.search.documents import get_document, get_outline, get_section, list_documents
from retrieval.search.engine import SearchHit, SearchRequest
from retrieval.search.related import find_related

SERVER_NAME = "docsmcp"
NO_COLLECTIONS = "No document collections found."
NO_RESULTS = "No results found for the given query."


def instructions(context: Context) -> str:
    return (
        "Documentation collections. Start with documents_list_collections, browse with "
        "documents_list_documents, search with documents_search (documents_search_batch for several "
        "questions), and read only what you need with documents_get_outline and documents_get_section."
    ) + (" " + corpora_freshness()).rstrip()


# --- result shapes ------------------------------------------------------------------------------


def _json(text_value: Any, structured: dict[str, Any]) -> ToolResult:
    return ToolResult.text(_dumps(text_value), structured=structured)


def _dumps(value: Any) -> str:
    return indented(value)


def _size(value: Any) -> int:
    return len(_dumps(value))


def _fit_hits(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    return budget.fit_items(items, ("content",), _size)


def _with_notice(result: ToolResult, notice: str | None) -> ToolResult:
    """A result whose list was fitted to the budget: the notice is in the structured payload and,
    since the text holds a bare list, after it."""
    if notice is None:
        return result
    text = result.content[0]["text"] + f"\n\n[{notice}]"
    return ToolResult.text(text, structured={**result.structured, "notice": notice})


def _hit_item(collection: Collection, hit: SearchHit, fresh: dict[str, Any] | None = None) -> dict[str, Any]:
    """Section 7's enhanced search result (plus `chunkId`, which the docs profile's get_doc reads)."""
    item: dict[str, Any] = {
        **collection.label(),
        "documentId": hit.filepath,
        "documentTitle": hit.title or hit.filepath,
    }
    if hit.heading:
        item["sectionHeading"] = hit.heading
    item.update(
        content=hit.content,
        relevanceScore=round(hit.score, 6),
        distance=round(1.0 - hit.score, 6),
        chunkIndex=hit.chunk_index,
        totalChunks=hit.total_chunks,
        chunkId=hit.chunk_id,
    )
    item.update(fresh or {})
    return item


def _search(
    queries: list[tuple[str, list[Collection]]], limit: int, max_distance: float | None, hybrid: bool
) -> tuple[list[tuple[list[dict[str, Any]], Coverage]], list[Any]]:
    """Each query over its collections: one engine call per corpus (search_batch shares the query
    embedding when a corpus gets several queries), hits merged across corpora by score, with the best
    coverage verdict of its corpora; and what each search found, for the query log."""
    per_query: list[list[list[CorpusHit]]] = [[] for _ in queries]
    verdicts: list[list[Coverage]] = [[] for _ in queries]
    seen = []
    by_corpus: dict[str, list[tuple[int, int, Collection]]] = {}
    for qi, (_query, collections) in enumerate(queries):
        for position, collection in enumerate(collections):
            by_corpus.setdefault(collection.corpus.name, []).append((qi, position, collection))
    for wanted in by_corpus.values():
        requests = [SearchRequest(query=queries[qi][0], limit=limit) for qi, _, _ in wanted]
        served = corpus_search_batch(wanted[0][2].serving_name, requests, hybrid=hybrid)
        for (qi, position, collection), one in zip(wanted, served, strict=True):
            verdicts[qi].append(one.result.coverage)
            seen.append(one.seen)
            per_query[qi].append(
                [
                    CorpusHit(collection.corpus, hit, (position, rank), one.freshness)
                    for rank, hit in enumerate(one.result.hits)
                    if max_distance is None or 1.0 - hit.score <= max_distance
                ]
            )
    out = []
    for qi, (_query, collections) in enumerate(queries):
        shown = {c.corpus.name: c for c in collections}
        merged = merge_hits(per_query[qi], limit)
        out.append(([_hit_item(shown[h.corpus.name], h.hit, h.freshness) for h in merged],
                    best_coverage(verdicts[qi])))
    return out, seen


SEARCH_TOOLS = ("documents_search", "documents_search_batch")


# --- handlers -----------------------------------------------------------------------------------


def _list_collections(context: Context, args: dict[str, Any]) -> ToolResult:
    items = []
    for corpus in markdown_corpora():
        build = corpus.active_build
        item: dict[str, Any] = {
            "collection": corpus.name,
            "documentCount": int((build.stats or {}).get("total_files", 0)) if build else 0,
        }
        if corpus.description:
            item["description"] = corpus.description
        if corpus.version:
            item["version"] = corpus.version
        if corpus.aliases:
            item["aliases"] = list(corpus.aliases)
        items.append(item)
    if not items:
        return ToolResult.text(NO_COLLECTIONS, structured={"collections": []})
    return _json(items, {"collections": items})


def _search_documents(context: Context, args: dict[str, Any]) -> ToolResult:
    targets = search_targets(args.get("collections"))
    ((results, coverage),), seen = _search(
        [(args["query"], targets)], args["limit"], args.get("maxDistance"), args["hybridSearch"]
    )
    if not results:
        return ToolResult.text(NO_RESULTS, structured={"coverage": coverage_json(coverage), "results": []}).saw(*seen)
    results, notice = _fit_hits(results)
    payload = {"coverage": coverage_json(coverage), "results": results}
    return _with_notice(_with_coverage(_json(results, payload), coverage), notice).as_fitted().saw(*seen)


def _with_coverage(result: ToolResult, coverage: Coverage) -> ToolResult:
    """The text holds the contract's bare list of results; a verdict other than covered follows it as a
    line of its own (the structured payload always carries `coverage`)."""
    if coverage.notice is None:
        return result
    text = result.content[0]["text"] + f"\n\n[coverage: {coverage.verdict} ({coverage.score}). {coverage.notice}]"
    return ToolResult.text(text, structured=result.structured)


def _search_batch(context: Context, args: dict[str, Any]) -> ToolResult:
    try:  # each query costs a search: the tools/call itself was counted as the first
        ratelimit.charge_extra(context.request, context.principal, len(args["queries"]) - 1,
                               "each query of documents_search_batch counts as one")
    except ratelimit.RateLimited as exc:
        raise ToolError(str(exc)) from None
    queries = [(q["query"], search_targets(q.get("collections"))) for q in args["queries"]]
    found, seen = _search(queries, args["limit"], args.get("maxDistance"), args["hybridSearch"])
    share = max(1, budget.budget_chars() // max(1, len(found)))
    fitted, notices = [], []
    for hits, _coverage in found:
        kept, notice = budget.fit_items(
            hits, ("content",), lambda items: _size({"results": [{"query": "", "results": items}]}), share=share
        )
        fitted.append(kept)
        notices.append(notice)
    payload: dict[str, Any] = {
        "results": [{"query": q, "coverage": coverage_json(coverage), "results": r}
                    for (q, _), (_hits, coverage), r in zip(queries, found, fitted, strict=True)]
    }
    notice = next((n for n in notices if n), None)
    if notice:
        payload["notice"] = f"Each query gets an equal share of the response budget. {notice}"
    return _json(payload, payload).as_fitted().saw(*seen)


def _get_document(context: Context, args: dict[str, Any]) -> ToolResult:
    collection, index = open_document(args)
    document = get_document(index, args["document"])
    seen = querylog.observation(index, [(document.filepath, None)], target=document.filepath)
    payload: dict[str, Any] = {
        **collection.label(),
        "document": document.filepath,
        "title": document.title,
        "content": document.content,
    }
    payload, next_line = budget.fit_text_field(payload, "content", 1, _size)
    if next_line is not None:
        entries = get_outline(index, document.filepath, 6).entries
        payload["notice"] = budget.rest_of_document(
            entries, next_line, None, "Read them with documents_get_section, one section at a time."
        )
    return _json(payload, payload).as_fitted().saw(seen)


def _list_documents(context: Context, args: dict[str, Any]) -> ToolResult:
    collection = resolve_collection(args["collection"])
    page = list_documents(collection.index(), args["limit"], args["offset"])
    payload = {
        **collection.label(),
        "documents": [{"id": d.filepath, "title": d.title or d.filepath, "size": d.size} for d in page.documents],
        "total": page.total,
        "hasMore": page.has_more,
    }
    return _json(payload, payload)


def _get_outline(context: Context, args: dict[str, Any]) -> ToolResult:
    collection, index = open_document(args)
    outline = get_outline(index, args["document"], args["maxDepth"])
    payload = {
        **collection.label(),
        "document": outline.filepath,
        "title": outline.title,
        "outline": [{"level": e.level, "text": e.text, "line": e.line} for e in outline.entries],
    }
    return _json(payload, payload)


def _get_section(context: Context, args: dict[str, Any]) -> ToolResult:
    collection, index = open_document(args)
    document = args["document"]
    try:
        section = get_section(index, document, args["section"], args["includeSubsections"])
    except NotFound:
        return ToolResult.error(f'Section "{args["section"]}" not found in document "{document}".')
    seen = querylog.observation(index, [(section.filepath, None)], target=f"{section.filepath}#{section.heading}")
    payload: dict[str, Any] = {
        **collection.label(),
        "document": section.filepath,
        "section": section.heading,
        "level": section.level,
        "content": section.content,
        "startLine": section.start_line,
        "endLine": section.end_line,
    }
    payload, next_line = budget.fit_text_field(payload, "content", section.start_line, _size)
    if next_line is not None:
        entries = get_outline(index, section.filepath, 6).entries
        payload["notice"] = budget.rest_of_document(
            entries, next_line, section.end_line,
            "Read them with documents_get_section, or this section with includeSubsections: false.",
        )
    return _json(payload, payload).as_fitted().saw(seen)


def _find_related(context: Context, args: dict[str, Any]) -> ToolResult:
    collection, index = open_document(args)
    document = args["document"]
    result = find_related(
        index,
        document,
        chunk_text=args.get("chunk"),
        limit=args["limit"],
        same_document=args["sameDocument"],
        embedder=embedder_for(index),
    )
    fresh = freshness(index)
    related = [{**collection.label(), "document": h.filepath, **_hit_item(collection, h, fresh)} for h in result.hits]
    related, notice = budget.fit_items(related, ("content",), lambda items: _size({"source": {}, "related": items}))
    payload: dict[str, Any] = {
        "source": {**collection.label(), "document": document},
        "related": related,
        "method": result.method,
    }
    if notice:
        payload["notice"] = notice
    return _json(payload, payload).as_fitted()


_TOOLS = (
    ("documents_list_collections", empty_schema(), _list_collections),
    ("documents_search", SEARCH_SCHEMA, _search_documents),
    ("documents_get_document", GET_DOCUMENT_SCHEMA, _get_document),
    ("documents_list_documents", LIST_DOCUMENTS_SCHEMA, _list_documents),
    ("documents_get_outline", OUTLINE_SCHEMA, _get_outline),
    ("documents_get_section", SECTION_SCHEMA, _get_section),
    ("documents_search_batch", BATCH_SCHEMA, _search_batch),
    ("documents_find_related", RELATED_SCHEMA, _find_related),
)


# Calls recorded in the query log (corpus/querylog.py): the searches, and reads of a document's text.
_RECORDED = {"documents_search": querylog.SEARCH, "documents_search_batch": querylog.SEARCH,
             "documents_get_document": querylog.READ, "documents_get_section": querylog.READ}


def tools(context: Context) -> list[ToolDef]:
    return [
        ToolDef(
            name=name,
            description=DESCRIPTIONS[name] + (COVERAGE_DESCRIPTION if name in SEARCH_TOOLS else ""),
            input_schema=schema,
            handler=handler,
            output_schema=OUTPUT[name],
            record=_RECORDED.get(name, ""),
        )
        for name, schema, handler in _TOOLS
    ] + [FEEDBACK_TOOL]


def _feedback_collection(context: Context, args: dict[str, Any]) -> str | None:
    """The collection a report is about (see feedback.only_or_named); named ones must exist."""
    named = args.get("collection")
    try:
        if named:
            return resolve_collection(named).corpus.name
        names = [c.name for c in served_corpora()]
    except DatabaseError as exc:  # a report is never refused for an outage: kept under the name given
        return feedback.kept_unchecked(named, exc)
    return feedback.only_or_named(names, None, args.get("chunk_id"),
                                  lambda name: active_index(name).metadata.files, "collection")


FEEDBACK_TOOL = feedback.tool(
    "documents_feedback", search="documents_search", read="documents_get_section",
    resolve=_feedback_collection,
    corpus_property=("collection", {"type": "string", "maxLength": 200,
                                    "description": "The collection the report is about (its name or alias); "
                                                   "may be omitted when only one collection is served."}))


PROFILE = FunctionProfile(tools=tools, server_name=SERVER_NAME, instructions=instructions)
