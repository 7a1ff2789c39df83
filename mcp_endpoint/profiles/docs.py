"""The docs profile (docs/contracts/docs-tools.md and build-pipeline.md): `search_docs` and `get_doc`, at /mcp/ and /mcp/c/<corpus>/.

The search_docs schema is rebuilt from the active build's metadata on every tools/list (docs_schemas.py), so a
rebuild that adds a taxonomy value (a new SDK language) shows in the next listing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from corpus.errors import CorpusError
from corpus.selectors import describe_versions
from corpus.serving import (
    STATE,
    Active,
    ServedSearch,
    check_served,
    corpus_read,
    corpus_search,
    freshness,
    resolve,
    version_choices,
)
from mcp_endpoint import budget
from mcp_endpoint.budget import DROPPED, SNIPPET_STEPS, TRIMMED
from mcp_endpoint.jsontext import indented
from mcp_endpoint.profiles import (
    Context,
    FunctionProfile,
    ToolDef,
    ToolResult,
    UnknownCorpus,
    docs_corpora,
    docs_resources,
    feedback,
)
from mcp_endpoint.profiles.docs_schemas import (
    BASE_PROPERTIES,
    GET_DOC_DESCRIPTION,
    GET_DOC_SCHEMA,
    SEARCH_DESCRIPTION,
    SEARCH_OUTPUT_SCHEMA,
    examples,
    search_schema,
    version_property,
)
from mcp_endpoint.profiles.shared import COVERAGE_DESCRIPTION, coverage_json
from retrieval.errors import RetrievalError
from retrieval.format.metadata import BuildMetadata
from retrieval.search.documents import ChunkWindow, render_chunk_window
from retrieval.search.engine import SearchRequest, SearchResult
from retrieval.search.index import Index

SERVER_NAME = "docsmcp"


def _active(context: Context, version: str | None = None) -> Active:
    """The active build of the context's corpus, or of one of its versions when `version` is given: resolved
    once per tools/call (the tool lookup and the handler share it), then handed to the serving call."""
    key = (context.corpus, version)  # a context copied for another corpus shares the dict: keyed by both
    active = context.resolved.get(key)
    if active is None:
        active = context.resolved[key] = resolve(context.corpus, version)
    return active


def _index(context: Context, version: str | None = None) -> Index:
    """The active index of the context's corpus, or of one of its versions when `version` is given."""
    return _active(context, version).index


def check_context(context: Context) -> None:
    """A corpus named in the URL must exist; while the database is unreachable, one this process has
    served passes (its last known build answers), as /mcp/ does."""
    if context.corpus is None:
        return
    from corpus.errors import CorpusNotFound

    try:
        check_served(context.corpus)
    except CorpusNotFound as exc:  # also a version the corpus does not have: the message lists those it has
        raise UnknownCorpus(str(exc)) from exc


def instructions(context: Context) -> str:
    try:
        index = _index(context)
    except (RetrievalError, CorpusError) as exc:
        return f"docsmcp documentation server. {exc}"
    if docs_corpora.applies(context):
        return docs_corpora.instructions()
    metadata = index.metadata
    text = (
        f"This server searches the {describe(metadata)}. Call search_docs with a question or "
        "identifier, then get_doc with a returned chunk_id to read the chunk and its neighbours."
    )
    if metadata.taxonomy:
        text += (
            " Filters: "
            + "; ".join(f"{k} ({', '.join(v.values)})" for k, v in metadata.taxonomy.items())
            + "."
        )
    text += " " + _freshness_sentence(context, index)
    if metadata.instructions:
        text += "\n\n" + metadata.instructions
    return text


def _freshness_sentence(context: Context, index: Index) -> str:
    """Which version answers by default and when it was built, so an agent knows how current answers are."""
    fresh = freshness(index)
    built = f"last built {fresh['indexed_at']}" + (f" from revision {fresh['revision']}" if fresh["revision"] else "")
    name, versions = version_choices(context.corpus)
    if versions:
        from corpus.selectors import corpus_get

        listed = describe_versions(corpus_get(name))
        return (f"Versions: {listed}; the default version {fresh['version']} was {built}. Pass `version` to "
                "search_docs and get_doc for another one.")
    if fresh["version"]:
        return f"Version {fresh['version']}, {built}."
    return f"The index was {built}."


def describe(metadata: BuildMetadata) -> str:
    """The corpus description, or "<name> documentation" for a build that had none (neither
    `build_index --description` nor a root manifest `description`), never the bare name."""
    text = metadata.corpus_description.strip()
    return f"{metadata.corpus} documentation" if not text or text == metadata.corpus else text


def search_result_json(result: SearchResult, snippet_chars: int | None = None,
                       fresh: dict[str, Any] | None = None) -> dict[str, Any]:
    """The docs tool contract's `SearchResult` shape, field for field, plus each hit's document `title` and the
    build it came from (`fresh`: version, revision, indexed_at), led by the coverage verdict; snippets cut to
    `snippet_chars` when given."""
    return {
        "coverage": coverage_json(result.coverage),
        "hits": [
            {
                "chunk_id": h.chunk_id,
                "score": h.score,
                "title": h.title,
                "heading": h.heading,
                "breadcrumb": h.breadcrumb,
                "snippet": budget.shorten(h.snippet, snippet_chars),
                "filepath": h.filepath,
                "metadata": h.metadata,
                **(fresh or {}),
            }
            for h in result.hits
        ],
        "next_cursor": result.next_cursor,
        "hint": (
            {"message": result.hint.message, "suggested_filters": result.hint.suggested_filters}
            if result.hint
            else None
        ),
    }


def _search_docs(context: Context, arguments: dict[str, Any]) -> ToolResult:
    """The page of hits (the docs tool contract's text block first), then a resource_link to each page they come from."""
    page, searched = _search_page(context, arguments)
    return docs_resources.with_links(context, page, arguments.get("version"), searched)


def _search_page(context: Context, arguments: dict[str, Any]) -> tuple[ToolResult, str]:
    """The page of hits, fitted to the budget, and the corpus of the build that answered."""
    _name, versions = version_choices(context.corpus)
    filters = {k: v for k, v in arguments.items() if k not in BASE_PROPERTIES and not (versions and k == "version")}
    request = SearchRequest(
        query=arguments["query"],
        filters=filters,
        limit=arguments.get("limit"),
        cursor=arguments.get("cursor"),
    )
    # The build is resolved once here and handed to the search (its coverage thresholds with it).
    served = corpus_search(_active(context, arguments.get("version") if versions else None), request)
    result, fresh, searched = served.result, served.freshness, served.index.metadata.corpus
    payload = search_result_json(result, fresh=fresh)
    limit = budget.budget_chars()
    # The common case, a page within budget, encodes the payload once: that text is also the reply.
    text = _text(payload)
    if len(text) + budget.NOTICE_ROOM <= limit:
        return ToolResult.text(text, structured=payload).as_fitted().saw(served.seen), searched
    # Over budget: shorter snippets first, since get_doc returns any chunk in full...
    for chars in SNIPPET_STEPS:
        payload = search_result_json(result, chars, fresh)
        if _size(payload) <= limit:
            payload["notice"] = TRIMMED.format(chars=chars)
            return ToolResult.json(payload).as_fitted().saw(served.seen), searched
    # ...then fewer hits: the page ends early and its next_cursor starts at the first hit left out,
    # so paging on loses nothing (and the search is not run again).
    keep = max(1, len(result.hits) - 1)
    while True:
        payload = _first_hits(served, keep)
        if keep == 1 or _size(payload) <= limit:
            return ToolResult.json(payload).as_fitted().saw(served.seen), searched
        keep -= 1


def _first_hits(served: ServedSearch, keep: int) -> dict[str, Any]:
    """The page cut to its first `keep` hits at the shortest snippets, continuing at the next one."""
    result = served.result
    if keep < len(result.hits):
        result = replace(result, hits=result.hits[:keep], next_cursor=served.cursor_after(keep))
    payload = search_result_json(result, SNIPPET_STEPS[-1], served.freshness)
    payload["notice"] = DROPPED.format(kept=len(result.hits), chars=SNIPPET_STEPS[-1])
    return payload


def _text(payload: dict[str, Any]) -> str:
    """The text block of a search reply: what ToolResult.json would write."""
    return indented(payload)


def _size(payload: dict[str, Any]) -> int:
    return len(_text(payload)) + budget.NOTICE_ROOM


def _get_doc(context: Context, arguments: dict[str, Any]) -> ToolResult:
    served = corpus_read(_active(context, arguments.get("version")), arguments["chunk_id"],
                         int(arguments.get("context", 0)))
    return ToolResult.text(fit_window(served.window, budget.budget_chars(), served.freshness)).as_fitted() \
        .saw(served.seen)


def fit_window(window: ChunkWindow, limit: int, fresh: dict[str, Any] | None = None) -> str:
    """A header naming the document, then the docs tool contract's delimited chunks, within `limit` characters.

    Over budget, the target is kept first, then context chunks nearest to it; the chunk IDs
    left out are named so the model can ask for each with get_doc.
    """
    target = window.target
    header = f"Document: {target.title or target.filepath} ({target.filepath})\n"
    if fresh:
        parts = [f"Version: {fresh['version']}"] if fresh.get("version") else []
        parts += [f"Revision: {fresh.get('revision') or 'unknown'}", f"Indexed at: {fresh.get('indexed_at') or 'unknown'}"]
        header += " | ".join(parts) + "\n"
    header += "\n"
    nearest = sorted(window.before + window.after, key=lambda c: abs(c.chunk_index - target.chunk_index))
    for count in range(len(nearest), -1, -1):
        chosen = [target, *nearest[:count]]
        kept = replace(window, before=[c for c in window.before if c in chosen],
                       after=[c for c in window.after if c in chosen])
        left_out = [c.chunk_id for c in window.chunks if c not in chosen]
        text = header + render_chunk_window(kept)
        if left_out:
            text += budget.notice(
                "Not shown: " + ", ".join(left_out) + ". Call get_doc with one of these chunk_ids to read it."
            )
        if len(text) <= limit:
            return text
    how = (f"The rest of chunk '{target.chunk_id}' (source lines {target.start_line}-{target.end_line} of "
           f"{target.filepath}) was cut; its neighbours are separate chunks get_doc returns.")
    return budget.cut_text(header + render_chunk_window(replace(window, before=[], after=[])), limit, how)


def tools(context: Context) -> list[ToolDef]:
    try:
        index: Index | None = _index(context)
    except (RetrievalError, CorpusError):  # no usable index: base schema; search_docs itself reports why
        index = None
    _name, versions = version_choices(context.corpus)
    made = _tools(index, tuple(versions or ()))
    if docs_corpora.applies(context):  # /mcp/ of a server of several corpora: a choice of corpus
        return docs_corpora.extended(made, f"{index.path if index is not None else ''}|{','.join(versions or ())}")
    return made


def _tools(index: Index | None, versions: tuple[str, ...]) -> list[ToolDef]:
    """Every tools/call looks its tool up in this list, so it is made once per build and version list (kept
    on the serving state, which forgets it with the builds), not per request."""
    key = (str(index.path) if index is not None else "", versions)
    return list(STATE.memo("docs-tools", key, lambda: _make_tools(index, list(versions))))


def _make_tools(index: Index | None, versions: list[str]) -> list[ToolDef]:
    description = describe(index.metadata) if index is not None else "documentation"
    example = examples(index)
    get_doc_schema = GET_DOC_SCHEMA
    if example.chunk_id:
        chunk_id = GET_DOC_SCHEMA["properties"]["chunk_id"]
        get_doc_schema = {**GET_DOC_SCHEMA, "properties": {
            **GET_DOC_SCHEMA["properties"],
            "chunk_id": {**chunk_id, "description": chunk_id["description"][:-1] + f" (e.g., '{example.chunk_id}')."}}}
    if versions:
        get_doc_schema = {**get_doc_schema, "properties": {**get_doc_schema["properties"],
                                                           "version": version_property(
                                                               index, versions, "read the chunk from")}}
    return [
        ToolDef(
            name="search_docs",
            description=SEARCH_DESCRIPTION.format(description=description) + COVERAGE_DESCRIPTION,
            input_schema=search_schema(index, versions, example),
            output_schema=SEARCH_OUTPUT_SCHEMA,
            handler=_search_docs,
            record="search",
        ),
        ToolDef(
            name="get_doc", description=GET_DOC_DESCRIPTION, input_schema=get_doc_schema, handler=_get_doc,
            record="read",
        ),
        FEEDBACK_TOOL,
    ]


FEEDBACK_TOOL = feedback.tool("docs_feedback", search="search_docs", read="get_doc",
                              resolve=lambda context, args: context.corpus)


PROFILE = FunctionProfile(
    tools=tools,
    server_name=SERVER_NAME,
    instructions=instructions,
    check_context=check_context,
    resources=docs_resources.resources,  # docs:// pages and the corpus guide
    resource_templates=docs_resources.resource_templates,
    read_resource=docs_resources.read_resource,
)
