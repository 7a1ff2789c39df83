"""The techdoc profile (docs/contracts/techdoc-tools.md, "TechDoc Genie"): `search_documentation` and `get_document`, and the
corpora as `techdoc://<doc_type>/docs` resources, at /mcp/techdoc/ (and at /mcp with
DOCSMCP_DEFAULT_PROFILE=techdoc, where the seed's curl examples post).

A doc_type is a markdown corpus. Results are content items as the seed shows them: text blocks that
also carry `metadata` (source, section) and `score`. A tool error is an `isError` result whose text
block holds the message, plus the seed's own `is_error: true` and `error` fields. Arguments the seed's
validation table rules out are JSON-RPC -32602 errors with a readable message.

get_document's `document_id`: `<doc_type>/<path>` (what `metadata.source` of a search result says),
or a bare path looked up in every corpus (found in exactly one, or an error naming the candidates).
A path also matches the same file with a `.md` extension (`indexes.html` -> `indexes.md`), since
our sources are markdown while a techdoc client may hold ids of the HTML or PDF originals.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from django.db import DatabaseError

from corpus import querylog
from corpus.errors import CorpusNotFound, UnknownVersion
from corpus.models import Corpus
from corpus.selectors import corpus_serving
from corpus.serving import active_index, corpus_search, version_choices
from mcp_endpoint import answers, budget
from mcp_endpoint.jsonrpc import InvalidParams
from mcp_endpoint.profiles import (
    Context,
    FunctionProfile,
    ResourceContents,
    ResourceDef,
    ResourceNotFound,
    ToolDef,
    ToolError,
    ToolResult,
    feedback,
)
from mcp_endpoint.profiles.shared import (
    COVERAGE_DESCRIPTION,
    CorpusHit,
    best_coverage,
    corpora_freshness,
    merge_hits,
    served_corpora,
)
from retrieval.search.documents import get_document, get_outline, list_documents
from retrieval.search.engine import SearchRequest

SEARCH_DESCRIPTION = (
    "Search technical documentation using semantic similarity. Returns relevant document chunks."
) + COVERAGE_DESCRIPTION
GET_DESCRIPTION = "Retrieve a specific document by ID or path."
MIME_TYPE = "application/x-documentation"
URI_SCHEME = "techdoc://"
COLLECTION = "docs"  # the <collection> part of techdoc://<doc_type>/<collection>: one per corpus
ALL = "all"
MAX_QUERY = 1000
MAX_RESULTS = 20
NOT_FOUND = "Document not found"
log = logging.getLogger("docsmcp.mcp")


def instructions(context: Context) -> str:
    return (
        "Technical documentation search. Call search_documentation with a question (doc_type narrows it "
        "to one documentation set), then get_document with a result's metadata.source to read the whole "
        "document."
    ) + (" " + corpora_freshness()).rstrip()


# --- errors ---------------------------------------------------------------------------------------


def _tool_error(message: str, error: str | None = None) -> ToolResult:
    """The spec's isError result plus the seed's `is_error` / `error` fields."""
    return ToolResult(
        content=[{"type": "text", "text": message}],
        is_error=True,
        extra={"is_error": True, "error": error or message},
    )


def _seed_errors(name: str, handler: Callable[[Context, dict[str, Any]], ToolResult]):
    """Every failure the agent should read, in the seed's shape too; bad arguments stay -32602."""

    def wrapped(context: Context, args: dict[str, Any]) -> ToolResult:
        try:
            return handler(context, args)
        except Exception as exc:  # the MCP surface's table decides the text and logs a fault
            return _tool_error(answers.tool_failure(name, exc))

    return wrapped


def _invalid(tool: str, message: str) -> InvalidParams:
    return InvalidParams(f"Invalid arguments for tool '{tool}': {message}", data={"errors": [message]})


# --- search_documentation -------------------------------------------------------------------------


def _item(hit_of: CorpusHit, pinned: str | None = None) -> dict[str, Any]:
    """`pinned`: the `<corpus>@<version>` searched, which names the hit's source so that get_document
    reads the same version (a bare corpus name serves the default version)."""
    hit, name = hit_of.hit, pinned or hit_of.corpus.name
    return {
        "type": "text",
        "text": hit.content,
        "metadata": {
            "source": f"{name}/{hit.filepath}",
            "section": hit.heading or hit.title,
            "doc_type": name,
            "title": hit.title,
            "chunk_id": hit.chunk_id,
            **hit_of.freshness,
        },
        "score": round(hit.score, 4),
    }


def _search_documentation(context: Context, args: dict[str, Any]) -> ToolResult:
    query = args["query"]
    if not query.strip():
        raise _invalid("search_documentation", "Argument 'query' must not be blank.")
    limit = args["max_results"]
    corpora = served_corpora()
    if "@" in args["doc_type"]:  # one version of a corpus
        corpora = [c for c in [_served(args["doc_type"])] if c is not None]
    elif args["doc_type"] != ALL:
        corpora = [c for c in corpora if c.name == args["doc_type"]]
    per_corpus, verdicts, seen = [], [], []
    pinned = args["doc_type"] if "@" in args["doc_type"] else None
    for position, corpus in enumerate(corpora):
        served = corpus_search(pinned or corpus.name, SearchRequest(query=query, limit=limit))
        seen.append(served.seen)
        per_corpus.append([CorpusHit(corpus, hit, (position, rank), served.freshness)
                           for rank, hit in enumerate(served.result.hits)])
        verdicts.append(served.result.coverage)
    items, notice = budget.fit_items([_item(h, pinned) for h in merge_hits(per_corpus, limit)], ("text",), _size)
    coverage = best_coverage(verdicts)
    if coverage.notice:  # the model reads the content: a verdict other than covered is said there too
        items.append({"type": "text", "text": f"[coverage: {coverage.verdict} ({coverage.score}). {coverage.notice}]",
                      "coverage": coverage.as_dict()})
    if notice:
        items.append({"type": "text", "text": f"[{notice}]"})
    return ToolResult(content=items).as_fitted().saw(*seen)


def _size(items: list[dict[str, Any]]) -> int:
    return len(json.dumps(items, ensure_ascii=False))


# --- get_document ---------------------------------------------------------------------------------


def _served(name: str) -> Corpus | None:
    try:
        corpus = corpus_serving(name)
    except UnknownVersion as exc:
        raise ToolError(str(exc)) from None
    except CorpusNotFound:
        return None
    ok = corpus.kind == Corpus.KIND_MARKDOWN and corpus.active_build_id is not None
    return corpus if ok else None


def _match(files: dict[str, str], path: str) -> str | None:
    """`path` itself, else the same file with a .md extension (instead of its own, or added)."""
    if path in files:
        return path
    pure = PurePosixPath(path)
    for candidate in (str(pure.with_suffix(".md")) if pure.suffix else None, f"{path}.md"):
        if candidate and candidate in files:
            return candidate
    return None


def resolve_document(document_id: str) -> tuple[Corpus, str, str]:
    """(corpus, path, the name that serves it) for a techdoc document_id; ToolError when it names
    nothing, or several documents. A pinned `<corpus>@<version>/path` is read from that version only."""
    head, _, rest = document_id.partition("/")
    corpus = _served(head) if rest else None
    if corpus is not None:
        name = head if "@" in head else corpus.name  # an alias answers under the corpus's own name
        path = _match(active_index(name).metadata.files, rest)
        if path is not None:
            return corpus, path, name
        if "@" in head:
            raise _NotFound(document_id)
    found = []
    for candidate in served_corpora():
        path = _match(active_index(candidate.name).metadata.files, document_id)
        if path is not None:
            found.append((candidate, path))
    if len(found) == 1:
        return (*found[0], found[0][0].name)
    if found:
        ids = ", ".join(f"'{c.name}/{p}'" for c, p in found)
        raise ToolError(f"Document '{document_id}' is in several documentation sets: {ids}. Use one of these ids.")
    raise _NotFound(document_id)


class _NotFound(ToolError):
    def __init__(self, document_id: str):
        super().__init__(
            f"{NOT_FOUND}: '{document_id}'. Use '<doc_type>/<path>' as given in metadata.source of a "
            "search_documentation result."
        )


def _get_document(context: Context, args: dict[str, Any]) -> ToolResult:
    document_id = args["document_id"]
    if not document_id.strip():
        raise _invalid("get_document", "Argument 'document_id' must not be blank.")
    try:
        corpus, path, name = resolve_document(document_id.strip())
    except _NotFound as exc:
        return _tool_error(str(exc), NOT_FOUND)
    index = active_index(name)
    document = get_document(index, path)
    seen = querylog.observation(index, [(document.filepath, None)], target=f"{name}/{document.filepath}")
    text, next_line = _fit_document(document.content)
    if next_line is not None:
        entries = get_outline(index, path, 6).entries
        how = "search_documentation with a section's topic returns its chunks."
        text += f"\n\n[{budget.rest_of_document(entries, next_line, None, how)}]"
    item = {
        "type": "text",
        "text": text,
        "metadata": {
            "source": f"{name}/{document.filepath}",
            "title": document.title,
            "doc_type": name,
            "size": document.size,
            "chunks": document.chunk_count,
        },
    }
    return ToolResult(content=[item]).as_fitted().saw(seen)


def _fit_document(content: str) -> tuple[str, int | None]:
    fitted, next_line = budget.fit_text_field({"text": content}, "text", 1, lambda p: len(p["text"]) + 300)
    return fitted["text"], next_line


# --- schemas and tools ----------------------------------------------------------------------------


def search_schema(doc_types: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "The search query or question",
                "minLength": 1,
                "maxLength": MAX_QUERY,
            },
            "max_results": {
                "type": "integer",
                "description": "Maximum number of results to return (default: 5)",
                "default": 5,
                "minimum": 1,
                "maximum": MAX_RESULTS,
            },
            "doc_type": {
                "type": "string",
                "description": "Optional filter for document type",
                "enum": [*doc_types, ALL],
                "default": ALL,
            },
        },
        "required": ["query"],
    }


GET_SCHEMA = {
    "type": "object",
    "properties": {
        "document_id": {
            "type": "string",
            "description": "The unique identifier or path of the document",
            "minLength": 1,
        }
    },
    "required": ["document_id"],
}


def _doc_types() -> list[str]:
    """Every served corpus, and `<corpus>@<version>` for each version of a corpus that has several."""
    names = []
    for corpus in served_corpora():
        names.append(corpus.name)
        _name, versions = version_choices(corpus.name)
        names += [f"{corpus.name}@{v}" for v in versions]
    return names


def tools(context: Context) -> list[ToolDef]:
    search_input = search_schema(_doc_types())
    return [
        ToolDef(
            name="search_documentation",
            description=SEARCH_DESCRIPTION,
            input_schema=search_input,
            handler=_seed_errors("search_documentation", _search_documentation),
            extra={"input_schema": search_input},
            record="search",
        ),
        ToolDef(
            name="get_document",
            description=GET_DESCRIPTION,
            input_schema=GET_SCHEMA,
            handler=_seed_errors("get_document", _get_document),
            extra={"input_schema": GET_SCHEMA},
            record="read",
        ),
        FEEDBACK_TOOL,
    ]


def _feedback_doc_type(context: Context, args: dict[str, Any]) -> str | None:
    """The documentation set a report is about (see feedback.only_or_named); a named one must be served."""
    named = args.get("doc_type")
    try:
        if named:
            if _served(named) is None:
                raise ToolError(f"Unknown doc_type '{named}'. Use one of: {', '.join(_doc_types()) or 'none'}.")
            return named
        names = [c.name for c in served_corpora()]
    except DatabaseError as exc:  # a report is never refused for an outage: kept under the name given
        return feedback.kept_unchecked(named, exc)
    return feedback.only_or_named(names, None, args.get("chunk_id"),
                                  lambda name: active_index(name).metadata.files, "doc_type")


FEEDBACK_TOOL = feedback.tool(
    "submit_feedback", search="search_documentation", read="get_document", resolve=_feedback_doc_type,
    corpus_property=("doc_type", {"type": "string", "maxLength": 200,
                                  "description": "The documentation set the report is about (metadata.doc_type "
                                                 "of a result); may be omitted when only one is served."}),
    wrap=_seed_errors, extra_schema=True)


# --- resources ------------------------------------------------------------------------------------


def _uri(corpus: Corpus) -> str:
    return f"{URI_SCHEME}{corpus.name}/{COLLECTION}"


def resources(context: Context) -> list[ResourceDef]:
    out = []
    for corpus in served_corpora():
        description = corpus.description or f"{corpus.name} documentation"
        if corpus.version:
            description += f" (version {corpus.version})"
        out.append(
            ResourceDef(
                uri=_uri(corpus),
                name=f"{corpus.name} documentation",
                description=description,
                mime_type=MIME_TYPE,
                extra={"mime_type": MIME_TYPE},
            )
        )
    return out


def read_resource(context: Context, uri: str) -> list[ResourceContents]:
    """A documentation set's table of contents: every document's source (a get_document id), title, size."""
    corpus = next((c for c in served_corpora() if _uri(c) == uri), None)
    if corpus is None:
        raise ResourceNotFound(uri)
    page = list_documents(active_index(corpus.name), 1000, 0)
    listing = {
        "uri": uri,
        "doc_type": corpus.name,
        "description": corpus.description,
        "version": corpus.version,
        "total": page.total,
        "documents": [
            {"source": f"{corpus.name}/{d.filepath}", "title": d.title, "size": d.size} for d in page.documents
        ],
    }
    return [ResourceContents(uri, text=json.dumps(listing, ensure_ascii=False, indent=2), mime_type="application/json")]


PROFILE = FunctionProfile(tools=tools, instructions=instructions, resources=resources, read_resource=read_resource)
