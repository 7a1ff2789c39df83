"""The feedback tool each documentation profile offers: an agent reports whether an answer helped.

One handler, three names in their profiles' styles: `docs_feedback` (docs), `documents_feedback`
(documents), `submit_feedback` (techdoc). A report is queued for the query log's writer with the
same context as a logged call (corpus, version, build, surface, client, key name), so it never
waits on the database, and a database outage costs nothing but a delay. Any caller who may read may
report (scope `read`, anonymous callers included), within DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE, a
bucket of its own beside the request limit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings

from corpus import querylog
from corpus.models import Feedback
from mcp_endpoint import ratelimit
from mcp_endpoint.profiles import Context, ToolAnnotations, ToolDef, ToolError, ToolHandler, ToolResult
from mcp_endpoint.recording import caller

log = logging.getLogger("docsmcp.mcp")

MAX_COMMENT = 2000
MAX_QUERY = 1000
MAX_CHUNK_ID = 1000
DESCRIPTION = (
    "Report whether the documentation answered your question, after you used {search}'s results (and "
    "{read}). verdict: 'helpful' (it answered), 'not_helpful' (results did not help), 'wrong' (a chunk "
    "says something incorrect), 'outdated' (a chunk describes an old behaviour), 'missing' (the "
    "documentation does not cover the question at all). Give chunk_id for a verdict about one result, "
    "query with the question you asked, and a short comment saying what was wrong or missing. The "
    "documentation team reads these reports to fix the docs; call it once per question, not for every result."
)
ANNOTATIONS = ToolAnnotations(read_only=False, destructive=False, idempotent=False, open_world=False,
                              title="Report on documentation results")
RECEIVED = ("Feedback received ({verdict}{about}). Thank you: the documentation team reviews these reports. "
            "Nothing else to do; continue with your task.")
NOT_RECORDED = "This server does not record feedback (its operator turned the query log off); nothing was stored."
BUSY = "This server is too busy to queue feedback right now; nothing was stored. Continue with your task."


def schema(corpus_property: tuple[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "verdict": {"type": "string", "enum": list(Feedback.VERDICTS),
                    "description": "helpful | not_helpful | wrong | outdated | missing (the docs lack the answer)."},
        "chunk_id": {"type": "string", "maxLength": MAX_CHUNK_ID,
                     "description": "The chunk ID of the result this report is about, as the search returned it."},
        "query": {"type": "string", "maxLength": MAX_QUERY, "description": "The question you were answering."},
        "comment": {"type": "string", "maxLength": MAX_COMMENT,
                    "description": "What was wrong, outdated or missing, in a sentence or two (at most 2000 characters)."},
    }
    if corpus_property is not None:
        properties[corpus_property[0]] = corpus_property[1]
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": ["verdict"]}


# (context, arguments) -> the name serving the corpus the report is about (None: the default corpus)
Resolver = Callable[[Context, dict[str, Any]], str | None]


def tool(name: str, *, search: str, read: str, resolve: Resolver,
         corpus_property: tuple[str, dict[str, Any]] | None = None,
         wrap: Callable[[str, ToolHandler], ToolHandler] | None = None,
         extra_schema: bool = False) -> ToolDef:
    """The feedback ToolDef of a profile: `resolve` names the corpus; `wrap` shapes its errors (techdoc)."""
    input_schema = schema(corpus_property)

    def handler(context: Context, args: dict[str, Any]) -> ToolResult:
        return _report(name, context, args, resolve)

    return ToolDef(name=name, description=DESCRIPTION.format(search=search, read=read), input_schema=input_schema,
                   handler=wrap(name, handler) if wrap else handler, annotations=ANNOTATIONS,
                   title=ANNOTATIONS.title, extra={"input_schema": input_schema} if extra_schema else {})


def _limited(context: Context) -> None:
    """Raises ToolError past the caller's feedback allowance; stdio and in-process calls are not limited."""
    limit = settings.DOCSMCP_FEEDBACK_RATE_LIMIT_PER_MINUTE
    if context.request is None or limit <= 0:
        return
    # Shared by every worker (Redis, else the database): a per-process count multiplies the limit by the workers.
    decision = ratelimit.shared_hit("feedback:" + ratelimit.identity(context.request, context.principal), limit)
    if not decision.allowed:
        raise ToolError(f"Feedback rate limit exceeded: {limit} reports per minute. Retry after "
                        f"{decision.retry_after} seconds, or send one report per question.")


def _served(name: str | None) -> tuple[str, str, str, Any]:
    """(corpus, version, build, index) of the active build serving `name`; what is known when it cannot be
    opened (index None)."""
    from corpus.errors import CorpusError
    from corpus.serving import active_index
    from retrieval.errors import RetrievalError

    try:
        index = active_index(name)
    except (RetrievalError, CorpusError, OSError) as exc:  # a report is never refused for a missing build
        log.info("feedback for %r without its build: %s", name, exc)
        return name or "", "", "", None
    return index.metadata.corpus, str(index.metadata.stats.get("version") or ""), index.build_id, index


def _resolved(index: Any, chunk_id: str) -> tuple[str, str]:
    """(chunk ID, page) of a report, each kept only when it names a chunk or page of the build: in no-text
    mode nothing an agent typed is stored unless it resolves to what the build holds."""
    from retrieval.errors import RetrievalError
    from retrieval.search.documents import get_chunk

    if index is None or not chunk_id:
        return "", ""
    page = chunk_id.partition("#")[0]
    page = page if page in index.metadata.files else ""
    try:
        get_chunk(index, chunk_id)
    except (RetrievalError, OSError):
        return "", page
    return chunk_id, page


def _report(tool_name: str, context: Context, args: dict[str, Any], resolve: Resolver) -> ToolResult:
    _limited(context)
    if querylog.mode() == querylog.OFF:
        return ToolResult.text(NOT_RECORDED)
    corpus, version, build_id, index = _served(resolve(context, args))
    who = caller(context)
    chunk_id = args.get("chunk_id") or ""
    stored, filepath = (chunk_id, None) if querylog.mode() == querylog.FULL else _resolved(index, chunk_id)
    queued = querylog.record_feedback(
        surface=who.surface, corpus=corpus, version=version, build_id=build_id, profile=context.profile,
        tool=tool_name, verdict=args["verdict"], chunk_id=stored, filepath=filepath, query=args.get("query") or "",
        comment=args.get("comment") or "", client=who.client, key_name=who.key_name)
    if not queued:
        return ToolResult.text(BUSY)
    about = f" on {chunk_id}" if chunk_id else ""
    return ToolResult.text(RECEIVED.format(verdict=args["verdict"], about=about))


def kept_unchecked(named: str | None, exc: Exception) -> str | None:
    """What a resolver answers when the database cannot say which corpus a report is about: the name given
    (None: the default corpus), unchecked. A report is never refused for an outage; the log says it was kept."""
    log.warning("feedback: database unavailable (%s); the report is kept under %s, unchecked", exc,
                repr(named) if named else "the default corpus")
    return named or None


def only_or_named(names: list[str], named: str | None, chunk_id: str | None,
                  files_of: Callable[[str], dict[str, Any]], argument: str) -> str:
    """The corpus a report in a multi-corpus profile is about: the one named, else the only one served,
    else the only one holding chunk_id's page; otherwise a ToolError asking for `argument`."""
    if named:
        return named
    if len(names) == 1:
        return names[0]
    if chunk_id:
        page = chunk_id.partition("#")[0]
        holding = [n for n in names if page in files_of(n)]
        if len(holding) == 1:
            return holding[0]
    raise ToolError(f"Say which documentation set this feedback is about: pass {argument} (one of "
                    f"{', '.join(names) or 'none'}).")
