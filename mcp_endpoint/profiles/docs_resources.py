"""The docs profile's documents as MCP resources: `docs://<corpus>/<path>` for every page of the
endpoint's corpus, read whole as markdown, and the `resource_link` blocks search_docs adds after its
text block so a client can open the page a hit came from.

A URI names the corpus by its bare name; a version other than the one the bare name serves rides in
`?version=`, as the tools' `version` argument does. Reading accepts any corpus the caller may see: one
the caller may not see reads as not found, never as forbidden.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from corpus.errors import CorpusError
from corpus.serving import active_index, corpus_document, corpus_documents, serving_name
from mcp_endpoint.profiles import (
    Context,
    ResourceContents,
    ResourceDef,
    ResourceNotFound,
    ResourceTemplateDef,
    ToolResult,
)
from mcp_endpoint.versions import at_least
from retrieval.errors import IndexUnavailable, RetrievalError

SCHEME = "docs://"
MIME_TYPE = "text/markdown"
META_KEY = "docsmcp/document"  # _meta of a listed or read document: its title and the build it comes from
# resource_link content blocks arrived with this protocol revision; earlier clients get the text block alone.
LINKS_FROM = "2025-06-18"


def document_uri(corpus: str, path: str, version: str | None = None) -> str:
    uri = f"{SCHEME}{quote(corpus, safe='')}/{quote(path, safe='/')}"
    return f"{uri}?version={quote(version, safe='')}" if version else uri


def parse_uri(uri: str) -> tuple[str, str, str | None]:
    """(corpus, document path, version or None) of a `docs://` URI; raises ResourceNotFound for any other."""
    if not uri.startswith(SCHEME):
        raise ResourceNotFound(uri)
    try:
        parts = urlsplit(uri)
    except ValueError:  # e.g. an unclosed '[' where a host would be
        raise ResourceNotFound(uri) from None
    corpus, path = unquote(parts.netloc), unquote(parts.path.lstrip("/"))
    versions = parse_qs(parts.query).get("version") or [None]
    if not corpus or not path or parts.fragment or any(c < " " or c == "\x7f" for c in corpus + (versions[0] or "")):
        raise ResourceNotFound(uri, f"Resource not found: {uri}. Document URIs look like "
                                    f"{SCHEME}<corpus>/<path>, e.g. {SCHEME}sample/guides/retries.md.")
    return corpus, path, versions[0]


def _addressed(context: Context, metadata_corpus: str, version: str | None) -> tuple[str, str | None]:
    """(the corpus's bare name, the version its URIs carry) for documents served to `context`."""
    head, _, pinned = (context.corpus or metadata_corpus).partition("@")
    return head, version or pinned or None


def _meta(title: str, path: str, fresh: dict[str, Any]) -> dict[str, Any]:
    return {META_KEY: {"title": title, "path": path, **fresh}}


def resources(context: Context) -> list[ResourceDef]:
    """Every page of the endpoint's corpus (the default version), ordered by path; resources/list pages it."""
    try:
        served = corpus_documents(context.corpus)
    except (RetrievalError, CorpusError):  # no usable build: nothing to list; the tools say why
        return []
    head, version = _addressed(context, served.index.metadata.corpus, None)
    fresh = served.freshness
    annotations = {"lastModified": fresh["indexed_at"]} if fresh.get("indexed_at") else {}
    out = []
    for document in served.documents:
        extra: dict[str, Any] = {"_meta": _meta(document.title, document.filepath, fresh)}
        if annotations:
            extra["annotations"] = annotations
        out.append(ResourceDef(uri=document_uri(head, document.filepath, version), name=document.filepath,
                               title=document.title or None, mime_type=MIME_TYPE, extra=extra))
    return out


def resource_templates(context: Context) -> list[ResourceTemplateDef]:
    return [
        ResourceTemplateDef(
            uri_template=f"{SCHEME}{{corpus}}/{{path}}",
            name="document",
            title="Documentation page",
            description=("One whole page as markdown: corpus is the corpus's name, path the page's path as "
                         "search_docs returns it in `filepath` (e.g. guides/retries.md). Add ?version=<version> "
                         "for another version of a versioned corpus."),
            mime_type=MIME_TYPE,
        )
    ]


def read_resource(context: Context, uri: str) -> list[ResourceContents]:
    """The page at `uri`, whole, with its title and the build it comes from in `_meta`."""
    corpus, path, version = parse_uri(uri)
    try:
        name = serving_name(corpus, version) if version else corpus
        served = corpus_document(name, path)
    except IndexUnavailable:
        raise
    except (RetrievalError, CorpusError) as exc:  # unknown corpus, version or page; a path that names none
        raise ResourceNotFound(uri, f"Resource not found: {uri}. {_why(exc)}") from exc
    document = served.document
    return [ResourceContents(uri, text=document.content, mime_type=MIME_TYPE,
                             meta=_meta(document.title, document.filepath, served.freshness))]


def _why(exc: Exception) -> str:
    """The reason for a not-found read, without naming corpora the caller was not told about."""
    from corpus.errors import CorpusNotFound, UnknownVersion

    if isinstance(exc, CorpusNotFound) and not isinstance(exc, UnknownVersion):
        return "No corpus of that name is served here."
    return str(exc)


def links_supported(version: str | None) -> bool:
    return version is not None and at_least(version, LINKS_FROM)


def with_links(context: Context, result: ToolResult, version: str | None, searched: str | None = None) -> ToolResult:
    """`result` (a search_docs page) followed by one `resource_link` block per page its hits come from, in
    hit order, after the text block that stays first; unchanged for clients whose protocol version
    predates resource links. Hits of a search across corpora link to their own corpus's pages.

    `searched` is the corpus of the build that answered, when the caller has it: the default corpus
    is then not looked up a second time."""
    if result.is_error or not links_supported(context.protocol_version) or not isinstance(result.structured, dict):
        return result
    hits = result.structured.get("hits") or []
    if not hits:
        return result
    merged = context.corpus is None and "corpus" in hits[0]  # a search across corpora: each hit names its own
    if context.corpus or merged:
        searched = context.corpus or ""
    elif searched is None:
        searched = active_index(None).metadata.corpus
    head, version = _addressed(context, searched, version)
    seen: set[str] = set()
    links = []
    for hit in hits:
        uri = document_uri(hit["corpus"] if merged else head, hit["filepath"], version)
        if uri in seen:
            continue
        seen.add(uri)
        link = {"type": "resource_link", "uri": uri,
                "name": hit["filepath"], "mimeType": MIME_TYPE}
        if hit.get("title"):
            link["title"] = hit["title"]
        links.append(link)
    return replace(result, content=[*result.content, *links])
