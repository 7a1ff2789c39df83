"""llms.txt for every corpus, for agents that read the web rather than speak MCP:
`/c/<corpus>/llms.txt` (an index of every page, llmstxt.org format), `/c/<corpus>/llms-full.txt`
(every page's markdown in the same order) and `/c/<corpus>/<path>.md` (one page's markdown), for any
version (`/c/<corpus>@<version>/...`).

Everything is read from the corpus's active build through corpus/serving.py, so a rebuild shows at
once and every response's ETag names the build it came from (a client revalidates with
If-None-Match and gets 304 until the next build). The index is rendered once per build and host and
kept; llms-full.txt is streamed page by page.

Access is /mcp/'s: anonymous callers read while MCP_AUTH_REQUIRED is off; otherwise a key with the
`read` scope, and a key limited to some corpora sees only those. A corpus the caller may not see is
404 like one that does not exist, and the answer names no other corpus.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from urllib.parse import quote

from django.conf import settings
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from common.callers import Principal, allows, bearer_challenge
from common.errors import InsufficientScope
from corpus.access import limited_to
from corpus.apikeys import authenticate
from corpus.serving import ServedDocuments, build_documents, corpus_document, corpus_documents
from mcp_endpoint import ratelimit, security, text_answers
from mcp_endpoint.errors import Refusal
from mcp_endpoint.jsonrpc import find_bad_text
from mcp_endpoint.text_answers import NOT_FOUND_TEXT, TEXT, UNAUTHORIZED_TEXT
from retrieval import llmstxt
from retrieval.errors import NotFound

MARKDOWN = "text/markdown; charset=utf-8"
# (index path, base URL) -> (llms.txt, its ETag): rendering reads every page once, so it is done once.
_rendered: dict[tuple[str, str], tuple[str, str]] = {}
_rendered_lock = threading.Lock()


def _text(body: str, content_type: str = TEXT) -> HttpResponse:
    return HttpResponse(body, content_type=content_type)


def _admit(request: HttpRequest, corpus: str) -> Principal | None:
    """/mcp/'s checks for a GET: method, corpus name, Origin, key, scope, rate limit. Raises Refusal, or
    the caller's error (InvalidApiKey, InsufficientScope, AuthUnavailable), for the plain-text table."""
    if request.method not in ("GET", "HEAD"):
        raise Refusal(405, "Method Not Allowed: use GET.\n", {"Allow": "GET, HEAD, OPTIONS"})
    if find_bad_text(corpus, "corpus") is not None:
        raise Refusal(404, NOT_FOUND_TEXT)
    if not security.origin_allowed(request.headers.get("Origin")):
        raise Refusal(403, "Forbidden: this Origin may not read this server (MCP_ALLOWED_ORIGINS).\n")
    principal = authenticate(request)  # a garbled key raises InvalidApiKey: never the anonymous caller
    if principal is None and settings.MCP_AUTH_REQUIRED:
        raise Refusal(401, UNAUTHORIZED_TEXT, {"WWW-Authenticate": bearer_challenge(request)})
    if not allows(principal, "read"):
        if principal is not None and principal.token:  # its holder can sign in again for the scope
            raise InsufficientScope("reading this corpus needs the 'read' scope", "read")
        raise Refusal(403, "Forbidden: this API key lacks the read scope.\n")
    decision = ratelimit.hit(ratelimit.identity(request, principal))
    if not decision.allowed:
        raise Refusal(429, f"Rate limit exceeded: {decision.limit} requests per minute. Retry after "
                           f"{decision.retry_after} seconds.\n", {"Retry-After": str(decision.retry_after)})
    return principal


def _etag(*parts: str) -> str:
    return '"' + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32] + '"'


def _matches(request: HttpRequest, etag: str) -> bool:
    header = request.headers.get("If-None-Match", "")
    if not header:
        return False
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in tags or etag in tags


def _served(request: HttpRequest, corpus: str, read: Callable[[], HttpResponse]) -> HttpResponse:
    """`read()` under the caller's corpus limit, its failures answered in plain text from the plain-text
    surface's table (text_answers.py), never a 500 page."""
    if request.method == "OPTIONS":  # a browser's CORS preflight for a GET with a key
        response = security.preflight(request)
        if response.status_code == 204:
            response["Allow"] = "GET, HEAD, OPTIONS"
            if "Access-Control-Allow-Methods" in response:
                response["Access-Control-Allow-Methods"] = "GET, HEAD, OPTIONS"
        return response
    try:
        principal = _admit(request, corpus)
        with limited_to(principal.corpora if principal else None):
            response = read()
        response["Cache-Control"] = "private, no-cache" if principal or settings.MCP_AUTH_REQUIRED else "no-cache"
        response["Vary"] = "Authorization"
    except Exception as exc:  # text_answers.answer: None for an error no layer typed (Django logs it, 500)
        response = text_answers.answer(request, exc, corpus)
        if response is None:
            raise
    for name, value in security.cors_headers(request).items():
        response[name] = value
    return response


def _conditional(request: HttpRequest, etag: str, make: Callable[[], HttpResponse]) -> HttpResponse:
    if _matches(request, etag):
        response = HttpResponse(status=304)
    elif request.method == "HEAD":
        response = make()
        response = HttpResponse(status=200, content_type=response["Content-Type"])
    else:
        response = make()
    response["ETag"] = etag
    return response


def _base(request: HttpRequest, corpus: str) -> str:
    return request.build_absolute_uri(f"/c/{quote(corpus, safe='@')}/")


def page_url(base: str, path: str) -> str:
    """Where a page's markdown is served: its path, with `.md` added when it has another extension."""
    return base + quote(path if path.endswith(".md") else f"{path}.md", safe="/")


def _summary(served: ServedDocuments) -> str:
    description = served.index.metadata.corpus_description.strip()
    return description if description and description != served.index.metadata.corpus else ""


def _details(served: ServedDocuments, base: str, corpus: str) -> str:
    fresh = served.freshness
    built = ", ".join(part for part in (
        f"version {fresh['version']}" if fresh.get("version") else "",
        f"revision {fresh['revision']}" if fresh.get("revision") else "",
        f"built {fresh['indexed_at']}" if fresh.get("indexed_at") else "") if part)
    root = base.removesuffix(f"c/{quote(corpus, safe='@')}/")
    return (f"This index covers {len(served.documents)} pages ({built}). Every page's markdown in one file: "
            f"{base}llms-full.txt. Search it over MCP at {root}mcp/c/{quote(corpus, safe='@')}/.")


@csrf_exempt
def llms_index(request: HttpRequest, corpus: str) -> HttpResponse:
    def read() -> HttpResponse:
        served = corpus_documents(corpus)
        base = _base(request, corpus)
        key = (str(served.index.path), base)
        cached = _rendered.get(key)
        if cached is None:
            paths = [d.filepath for d in served.documents]
            rows = ((d.filepath, d.title, d.content) for d in build_documents(served.index, paths))
            pages = llmstxt.pages_of(rows, lambda path: page_url(base, path))
            text = llmstxt.render_index(corpus, _summary(served), pages, _details(served, base, corpus))
            cached = (text, _etag(served.build_id, "llms.txt", base))
            with _rendered_lock:
                if len(_rendered) > 64:
                    _rendered.clear()
                _rendered[key] = cached
        text, etag = cached
        return _conditional(request, etag, lambda: _text(text))

    return _served(request, corpus, read)


@csrf_exempt
def llms_full(request: HttpRequest, corpus: str) -> HttpResponse:
    def read() -> HttpResponse:
        served = corpus_documents(corpus)
        base = _base(request, corpus)
        titles = {d.filepath: d.title for d in served.documents}
        order = llmstxt.page_order(titles)

        def pages() -> Iterator[tuple[llmstxt.Page, str]]:
            for document in build_documents(served.index, order):
                yield (llmstxt.Page(document.filepath, document.title, "", page_url(base, document.filepath)),
                       document.content)

        def make() -> HttpResponse:
            return StreamingHttpResponse(llmstxt.render_full(corpus, _summary(served), pages()), content_type=TEXT)

        return _conditional(request, _etag(served.build_id, "llms-full.txt", base), make)

    return _served(request, corpus, read)


@csrf_exempt
def page_markdown(request: HttpRequest, corpus: str, path: str) -> HttpResponse:
    def read() -> HttpResponse:
        if not path.endswith(".md"):
            raise NotFound(path)
        try:
            served = corpus_document(corpus, path)
        except NotFound:  # a page whose file is not .md is served at its path plus .md
            served = corpus_document(corpus, path.removesuffix(".md"))
        etag = _etag(served.build_id, "page", served.document.filepath)
        return _conditional(request, etag, lambda: _text(served.document.content, content_type=MARKDOWN))

    return _served(request, corpus, read)
