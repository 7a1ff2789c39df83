"""Where an eval run sends its tool calls: in process through the docs profile, or over HTTP.

Both targets return the tool result exactly as it would go on the wire (`content`, `isError`,
`structuredContent`), so one parser reads both and a run measures what an agent gets.

- `InProcessTarget` runs `tools/call` through `mcp_endpoint.protocol.dispatch` with the docs
  profile: the same schema validation, handler and result shaping as `/mcp/`, without HTTP.
- `HttpTarget` speaks MCP Streamable HTTP to any server URL (initialize, tools/call), so
  another server can be measured with the same suite.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

from .errors import TargetError, ToolFailed

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "docsmcp-evals", "version": "1.0"}
SEARCH_TOOL, GET_DOC_TOOL, LIST_CORPORA_TOOL = "search_docs", "get_doc", "list_corpora"


@dataclasses.dataclass
class SearchPage:
    hits: list[dict]
    next_cursor: str | None
    coverage: dict | None = None  # {"verdict", "score"}: whether the docs answer the question (None: not said)


VERDICTS = ("covered", "partial", "not_covered")


def _coverage(data: dict) -> dict | None:
    """The reply's coverage verdict when it gives a known one; a server without verdicts gives None."""
    raw = data.get("coverage")
    if not isinstance(raw, dict) or raw.get("verdict") not in VERDICTS:
        return None
    score = raw.get("score")
    return {"verdict": raw["verdict"],
            "score": float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None}


def result_text(result: dict) -> str:
    return " ".join(b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict)).strip()


def parse_search_result(result: dict) -> SearchPage:
    """`structuredContent.hits` when present, else the JSON of the first text block that has hits."""
    for data in _payloads(result):
        if isinstance(data, dict) and isinstance(data.get("hits"), list):
            cursor = data.get("next_cursor") or data.get("nextCursor")
            return SearchPage([h for h in data["hits"] if isinstance(h, dict)], cursor if isinstance(cursor, str) else None,
                              _coverage(data))
        if isinstance(data, list):
            return SearchPage([h for h in data if isinstance(h, dict)], None)
    raise ToolFailed("no hits[] in structuredContent or in a JSON text block")


def parse_corpora_result(result: dict) -> list[str]:
    """The corpus names of a `list_corpora` result, in its order (best match first when it had a query)."""
    for data in _payloads(result):
        if isinstance(data, dict) and isinstance(data.get("corpora"), list):
            return [str(c.get("name")) for c in data["corpora"] if isinstance(c, dict) and c.get("name")]
    raise ToolFailed("no corpora[] in structuredContent or in a JSON text block")


def hit_chunk_id(hit: dict) -> str:
    return str(hit.get("chunk_id") or hit.get("id") or "")


def hit_file(hit: dict) -> str:
    cid = hit_chunk_id(hit)
    return str(hit.get("filepath") or hit.get("file") or (cid.split("#", 1)[0] if cid else ""))


class Target:
    """Opened once per run; `call(name, arguments)` returns the wire result of tools/call."""

    label = ""

    def open(self) -> None:
        pass

    def call(self, name: str, arguments: dict[str, Any]) -> dict:  # pragma: no cover - interface
        raise NotImplementedError("subclasses of Target must provide a call() method")

    def has_tool(self, name: str) -> bool:
        return True

    def close(self) -> None:
        pass

    def __enter__(self) -> Target:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcessTarget(Target):
    def __init__(self, corpus_name: str | None, profile: str = "docs"):
        """`corpus_name` None is /mcp/ itself: the default corpus, and on a server of several corpora
        list_corpora and searches across them."""
        self.corpus_name, self.profile_name = corpus_name, profile
        self.label = f"in-process:{profile}/{corpus_name or '(every corpus)'}"
        self._tools: set[str] = set()

    def open(self) -> None:
        from mcp_endpoint.profiles import Context
        from mcp_endpoint.profiles.registry import get_profile

        self.profile = get_profile(self.profile_name)
        self.context = Context(request=None, profile=self.profile_name, corpus=self.corpus_name,
                               protocol_version=PROTOCOL_VERSION, client_info=CLIENT_INFO, surface="eval")
        self.profile.check_context(self.context)
        self._tools = {t.name for t in self.profile.tools(self.context)}
        if SEARCH_TOOL not in self._tools:
            raise TargetError(f"the {self.profile_name} profile offers no {SEARCH_TOOL} tool "
                              f"(tools: {sorted(self._tools) or 'none'})")

    def has_tool(self, name: str) -> bool:
        return name in self._tools

    def call(self, name: str, arguments: dict[str, Any]) -> dict:
        from mcp_endpoint import protocol
        from mcp_endpoint.jsonrpc import JsonRpcError

        call = protocol.Call(method="tools/call", params={"name": name, "arguments": arguments},
                             context=self.context, profile=self.profile, modern=False)
        try:
            return protocol.dispatch(call)
        except JsonRpcError as exc:
            raise TargetError(f"JSON-RPC error {exc.code}: {exc.message}") from None


def parse_sse(text: str) -> list[dict]:
    """JSON payloads of the SSE events in `text` (data lines joined by newlines)."""
    events, data = [], []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line:
            if data:
                events.append("\n".join(data))
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        events.append("\n".join(data))
    out = []
    for event in events:
        try:
            out.append(json.loads(event))
        except json.JSONDecodeError:
            continue
    return out


def _is_jsonrpc(payload: Any) -> bool:
    """A JSON-RPC 2.0 response: what an MCP endpoint answers, and the only body a run ever quotes."""
    if not isinstance(payload, dict) or payload.get("jsonrpc") != "2.0" or ("result" in payload) == ("error" in payload):
        return False
    error = payload.get("error")
    return "result" in payload or (isinstance(error, dict) and isinstance(error.get("code"), int)
                                   and isinstance(error.get("message"), str))


def _error_text(error: dict) -> str:
    return f"JSON-RPC error {error['code']}: {error['message'][:300]}"


def jsonrpc_error_text(body: str) -> str:
    """What a failed HTTP answer may show of its body: a JSON-RPC error's code and message, nothing of
    any other body (a URL that is not an MCP endpoint may hold what the run's caller may not read)."""
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        payload = None
    if _is_jsonrpc(payload) and "error" in payload:
        return _error_text(payload["error"])
    return "not a JSON-RPC answer, so not an MCP endpoint's (the body is not shown)"


class HttpTarget(Target):
    """MCP over Streamable HTTP: initialize (2025-06-18), initialized, tools/list, tools/call."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, timeout: float = 60.0):
        self.url, self.timeout = url, timeout
        self.label = url
        # The User-Agent names the runner to servers that log it (a handshake-era tools/call carries no clientInfo).
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                        "User-Agent": f"{CLIENT_INFO['name']}/{CLIENT_INFO['version']}", **(headers or {})}
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._ids = iter(range(1, 1 << 62))
        self._lock = threading.Lock()
        self._tools: set[str] = set()
        self.client = None

    def _headers(self) -> dict[str, str]:
        h = dict(self.headers)
        if self.session_id:
            h["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            h["MCP-Protocol-Version"] = self.protocol_version
        return h

    def _post(self, message: dict):
        import httpx

        try:
            response = self.client.post(self.url, json=message, headers=self._headers())
        except httpx.HTTPError as exc:
            raise TargetError(f"{type(exc).__name__} talking to {self.url}: {exc}") from None
        session = response.headers.get("mcp-session-id")
        if session and not self.session_id:
            self.session_id = session
        if response.status_code >= 400:
            raise TargetError(f"HTTP {response.status_code} from {self.url}: {jsonrpc_error_text(response.text)}")
        return response

    def request(self, method: str, params: dict | None = None) -> dict:
        with self._lock:
            rid = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        response = self._post(message)
        if "text/event-stream" in response.headers.get("content-type", ""):
            payloads = parse_sse(response.text)
        else:
            try:
                body = json.loads(response.text)
            except json.JSONDecodeError:
                raise TargetError(f"{method}: the response is not JSON, so {self.url} is not an MCP endpoint "
                                  "(its body is not shown)") from None
            payloads = body if isinstance(body, list) else [body]
        for payload in payloads:
            if _is_jsonrpc(payload) and payload.get("id") == rid:
                if "error" in payload:
                    raise TargetError(_error_text(payload["error"]))
                return payload["result"]
        raise TargetError(f"no JSON-RPC response with id {rid} for {method}: {self.url} is not an MCP endpoint, "
                          "or not one that answers this request (its body is not shown)")

    def open(self) -> None:
        import httpx

        self.client = httpx.Client(timeout=self.timeout)
        init = self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                           "clientInfo": CLIENT_INFO})
        self.protocol_version = init.get("protocolVersion") or PROTOCOL_VERSION
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor = [], None
        for _ in range(20):  # tools/list is paginated
            page = self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(t.get("name") for t in page.get("tools") or [])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        self._tools = set(tools)
        if SEARCH_TOOL not in self._tools:
            raise TargetError(f"{self.url} does not offer {SEARCH_TOOL} (tools: {sorted(self._tools) or 'none'})")

    def has_tool(self, name: str) -> bool:
        return name in self._tools

    def call(self, name: str, arguments: dict[str, Any]) -> dict:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def _payloads(result: dict) -> list:
    """What a tool result may carry its answer in: structuredContent, then each JSON text block
    (servers that predate structured results send only the latter)."""
    if result.get("isError"):
        raise ToolFailed(result_text(result)[:500] or "tool returned isError without a message")
    structured = result.get("structuredContent")
    payloads = [structured] if isinstance(structured, dict) else []
    for block in result.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            try:
                payloads.append(json.loads(block.get("text", "")))
            except (json.JSONDecodeError, TypeError):
                continue
    return payloads
