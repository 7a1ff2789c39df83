"""One error hierarchy per layer, one table per surface: an error class added without a line in each table
that can meet it fails here, and an app error is never an engine error (issue #48)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from django.urls import path

from common import errors as caller
from common.api import errors as rest
from corpus import errors as app
from evals import errors as evals
from insights import errors as insights
from mcp_endpoint import answers, jsonrpc, protocol, text_answers
from mcp_endpoint import errors as endpoint
from mcp_endpoint.profiles import Context, ToolAnnotations, ToolDef, ToolResult
from retrieval import errors as engine

ROOT = Path(__file__).resolve().parent.parent
# layer -> its one base class
BASES = {
    "retrieval": engine.RetrievalError,
    "common": caller.CallerError,
    "corpus": app.CorpusError,
    "mcp_endpoint": endpoint.EndpointError,
    "evals": evals.EvalError,
    "insights": insights.InsightsError,
}
# Exceptions that never leave the module that raises them (control flow inside one function's reach).
INTERNAL = {"retrieval.storage.cache.CopyIncomplete"}


def _modules(package: str):
    for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
        if ".migrations" in info.name or info.name.endswith(".__main__"):
            continue
        yield importlib.import_module(info.name)


@pytest.fixture(scope="module")
def defined() -> dict[str, list[type[BaseException]]]:
    """layer -> every exception class its modules define (private ones, named with `_`, left out)."""
    found: dict[str, list[type[BaseException]]] = {}
    for layer in BASES:
        classes = set()
        for module in _modules(layer):
            for name, obj in inspect.getmembers(module, inspect.isclass):
                if (issubclass(obj, BaseException) and obj.__module__ == module.__name__
                        and not name.startswith("_")):
                    classes.add(obj)
        found[layer] = sorted(classes, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
    return found


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_each_layer_has_one_hierarchy_in_one_module(defined):
    strays = [_name(cls) for layer, classes in defined.items() for cls in classes
              if not issubclass(cls, BASES[layer]) and _name(cls) not in INTERNAL]
    assert strays == []
    elsewhere = [_name(cls) for layer, classes in defined.items() for cls in classes
                 if issubclass(cls, BASES[layer]) and cls.__module__ != BASES[layer].__module__]
    # the JSON-RPC errors carry their wire codes beside the parser; citeloom's renders its contract's shape
    assert elsewhere == ["mcp_endpoint.jsonrpc." + n for n in (
        "HeaderMismatch", "InternalError", "InvalidParams", "InvalidRequest", "JsonRpcError", "MethodNotFound",
        "ParseError", "ServerError", "UnsupportedProtocolVersion")] + ["mcp_endpoint.profiles.citeloom.CiteloomError"]


def test_app_errors_are_not_engine_errors():
    """`except RetrievalError` means the engine failed: it must not swallow an app's refusal."""
    for base in (app.CorpusError, evals.EvalError, insights.InsightsError, caller.CallerError,
                 endpoint.EndpointError):
        assert not issubclass(base, engine.RetrievalError), base
    assert not issubclass(insights.InsightsError, app.CorpusError)


def test_the_mcp_table_names_every_error_an_mcp_call_can_meet(defined):
    missing = [_name(cls) for layer in ("retrieval", "common", "corpus", "mcp_endpoint")
               for cls in defined[layer] if cls not in answers.ANSWERS and _name(cls) not in INTERNAL]
    assert missing == []


def test_the_rest_table_names_every_engine_and_caller_error_and_each_app_error_its_status(defined):
    missing = [_name(cls) for layer in ("retrieval", "common") for cls in defined[layer]
               if cls not in rest.STATUS and _name(cls) not in INTERNAL]
    undeclared = [_name(cls) for layer in ("corpus", "evals", "insights") for cls in defined[layer]
                  if not isinstance(cls.__dict__.get("status"), int)]
    assert (missing, undeclared) == ([], [])


def test_the_rest_api_answers_every_app_hierarchy():
    from docsmcp_site.api.assembly import api

    handled = set(api._exception_handlers)
    assert {engine.RetrievalError, app.CorpusError, evals.EvalError, insights.InsightsError} <= handled


def test_the_html_table_names_every_error_a_page_can_meet(defined):
    from docsmcp_site import pages

    missing = [_name(cls) for layer in ("retrieval", "corpus", "evals", "insights")
               for cls in defined[layer] if cls not in pages.PAGE_ANSWERS and _name(cls) not in INTERNAL]
    assert missing == []


def test_the_plain_text_table_names_every_error_llms_txt_can_meet(defined):
    """llms.txt reads through corpus.serving with the caller's key: engine, caller and corpus errors, and
    its own Refusal."""
    missing = [_name(cls) for layer in ("retrieval", "common", "corpus") for cls in defined[layer]
               if cls not in text_answers.TEXT_ANSWERS and _name(cls) not in INTERNAL]
    assert missing == []
    assert endpoint.Refusal in text_answers.TEXT_ANSWERS


# --- what the tables decide, through the code that uses them -----------------------------------------


def _run(exc: Exception) -> ToolResult:
    def handler(context, arguments):
        raise exc

    tool = ToolDef(name="probe", description="", input_schema={"type": "object"}, handler=handler,
                   annotations=ToolAnnotations())
    context = Context(request=None, profile="docs", corpus=None, principal=None, protocol_version="2025-06-18")
    return protocol._run_handler(tool, context, {})


def _text(result: ToolResult) -> str:
    return result.content[0]["text"]


def test_a_corpus_error_in_a_tool_is_read_by_the_agent_in_its_own_words():
    result = _run(app.NoActiveBuild("corpus 'x' has no active build yet"))
    assert result.is_error and _text(result) == "corpus 'x' has no active build yet"


def test_an_insights_or_engine_error_in_a_tool_keeps_its_words_and_a_fault_says_internal(caplog):
    assert _text(_run(engine.InvalidFilter("unknown key 'k'"))) == "unknown key 'k'"
    assert _text(_run(endpoint.ToolError(""))) == "ToolError"
    assert _text(_run(KeyError("x"))) == "Tool 'probe' failed with an internal error; the server log has details."
    assert "tool probe failed" in caplog.text


def test_argument_errors_are_raised_again_for_the_protocol_version_to_shape():
    with pytest.raises(jsonrpc.InvalidParams):
        _run(jsonrpc.InvalidParams("Invalid params: x"))


def test_outside_a_tool_a_corpus_error_is_a_server_error_in_its_own_words():
    error = answers.method_failure("tools/list", app.CorpusNotFound("corpus 'x' not found"))
    assert (error.code, error.message) == (jsonrpc.SERVER_ERROR, "corpus 'x' not found")
    with pytest.raises(endpoint.UnknownCorpus):  # the view answers 404
        answers.method_failure("tools/list", endpoint.UnknownCorpus("x"))
    assert answers.method_failure("ping", caller.AuthUnavailable("key")).message == answers.DATABASE_DOWN


def _gap_page(request):
    raise insights.GapNotFound("gap #7 not found in corpus 'sample'")


def _queue_page(request):
    raise app.TaskQueueUnavailable("the task queue cannot be reached; nothing was started")


def _fault_page(request):
    raise KeyError("x")


def _api_route(request):
    raise app.NoActiveBuild("no active build")


urlpatterns = [path("page/gap/", _gap_page), path("page/queue/", _queue_page), path("page/fault/", _fault_page),
               path("api/v1/probe/", _api_route)]


def test_a_page_that_lets_an_app_error_escape_answers_404_or_503_not_500(client, settings):
    settings.ROOT_URLCONF = __name__
    settings.DEBUG = False
    gap = client.get("/page/gap/")
    assert gap.status_code == 404
    queue = client.get("/page/queue/")
    assert (queue.status_code, queue["Retry-After"]) == (503, "5")
    assert b"nothing was started" in queue.content
    with pytest.raises(KeyError):  # a fault stays Django's: logged, 500
        client.get("/page/fault/")
    with pytest.raises(app.NoActiveBuild):  # the REST API answers its own errors in its own shape
        client.get("/api/v1/probe/")


def test_an_error_escaping_a_page_is_answered_from_the_html_table(rf, settings):
    from django.http import Http404

    from docsmcp_site import pages

    assert "docsmcp_site.pages.page_errors" in settings.MIDDLEWARE
    request = rf.get("/admin/insights/sample/gaps/7/")
    with pytest.raises(Http404, match="gap #7 not found"):
        pages.answer(request, insights.GapNotFound("gap #7 not found"))
    refused = pages.answer(request, app.BuildStateConflict("build 3 is complete; only a pending build can be cancelled"))
    assert refused.status_code == 409 and b"only a pending build can be cancelled" in refused.content
    away = pages.answer(request, app.TaskQueueUnavailable("the task queue <redis> cannot be reached"))
    assert (away.status_code, away["Retry-After"]) == (503, "5")
    assert b"&lt;redis&gt;" in away.content  # the message is text, never markup
    assert pages.answer(request, KeyError("x")) is None  # a fault: Django logs it and answers 500


def test_an_error_met_by_llms_txt_is_answered_in_plain_text_from_its_table(rf, caplog):
    from django.db import OperationalError

    request = rf.get("/c/sample/llms.txt")

    def answered(exc: Exception) -> tuple[int, str, dict[str, str]]:
        response = text_answers.answer(request, exc, "sample")
        assert response is not None and response["Content-Type"] == text_answers.TEXT
        extra = {name: response[name] for name in ("WWW-Authenticate", "Retry-After", "Allow") if name in response}
        return response.status_code, response.content.decode(), extra

    assert answered(app.CorpusNotFound("corpus 'secret' not found")) == (404, text_answers.NOT_FOUND_TEXT, {})
    assert answered(app.UnknownVersion("corpus 'sample' has no version '9'; it has: 3.2")) == (
        404, "Not found: corpus 'sample' has no version '9'; it has: 3.2.\n", {})
    assert answered(engine.InvalidFilter("unknown key 'k'")) == (400, "Bad request: unknown key 'k'\n", {})
    assert answered(app.NoActiveBuild("no active build yet")) == (409, "no active build yet\n", {})
    assert answered(engine.EmbeddingError("provider down")) == (400, "provider down\n", {})  # no status: 400
    assert answered(app.TaskQueueUnavailable("queue away")) == (503, "queue away\n", {})
    for outage in (engine.IndexCorrupt("torn"), OperationalError("gone"), caller.AuthUnavailable("key")):
        assert answered(outage) == (503, text_answers.UNAVAILABLE_TEXT, {"Retry-After": "5"})
    assert "llms.txt for sample unavailable: gone" in caplog.text
    status, body, extra = answered(caller.InvalidApiKey("the API key is not valid"))
    assert (status, body) == (401, text_answers.UNAUTHORIZED_TEXT)
    assert 'error="invalid_token"' in extra["WWW-Authenticate"]
    status, body, extra = answered(caller.InsufficientScope("reading this corpus needs the 'read' scope", "read"))
    assert (status, body) == (403, "Forbidden: reading this corpus needs the 'read' scope.\n")
    assert 'error="insufficient_scope"' in extra["WWW-Authenticate"]
    refusal = endpoint.Refusal(405, "Method Not Allowed: use GET.\n", {"Allow": "GET, HEAD, OPTIONS"})
    assert answered(refusal) == (405, "Method Not Allowed: use GET.\n", {"Allow": "GET, HEAD, OPTIONS"})
    assert text_answers.answer(request, KeyError("x"), "sample") is None  # a fault: Django logs it, 500
    assert text_answers.answer(request, endpoint.ToolError("x"), "sample") is None
