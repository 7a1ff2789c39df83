"""Tool profiles: the shapes a profile hands the transport, and the registry that names them.

A profile is a thin adapter over the engine, one per contract (seed): argument schema in,
engine call, result shape out. What the transport calls on it is `Profile`; `BaseProfile` gives
every hook but `tools` a default, so a profile writes only what its contract serves. A profile
written as a module of functions (docs, documents, techdoc, citeloom) is served through
`ModuleProfile`, which takes each hook the module defines and the default for the others.

Every hook is called per request with a fresh `Context`, so a profile can follow the active
build (new taxonomy values show in the next tools/list) and stays stateless across workers.
Handlers report failures the agent should read by raising `ToolError` (or any engine or corpus error):
the transport turns them into `isError: true` results, as mcp_endpoint/answers.py says for each class.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# The endpoint's errors live in mcp_endpoint/errors.py; profiles and their callers import them from here too.
from mcp_endpoint.errors import ResourceNotFound as ResourceNotFound
from mcp_endpoint.errors import ToolError as ToolError
from mcp_endpoint.errors import UnknownCorpus as UnknownCorpus
from mcp_endpoint.errors import UnknownProfile as UnknownProfile
from mcp_endpoint.jsontext import indented

if TYPE_CHECKING:
    from django.http import HttpRequest

    from common.callers import Principal


@dataclass(frozen=True)
class Context:
    """What a profile may know about the request it serves."""

    request: HttpRequest | None
    profile: str
    corpus: str | None = None  # from /mcp/c/<corpus>/; None means the default corpus
    principal: Principal | None = None  # None when the caller is anonymous (auth not required)
    protocol_version: str | None = None
    client_info: dict[str, Any] | None = None
    # Which transport carries the call, for the query log: "" derives it (http with a request, else
    # stdio); the eval runner's in-process target says "eval".
    surface: str = ""
    # What a profile resolved for this call (the active build, by version), so the tool lookup and the
    # handler of one tools/call look the build up once; the protocol gives each tools/call a fresh one.
    resolved: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class ToolAnnotations:
    """Behaviour hints for clients; the defaults describe a documentation lookup."""

    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False
    title: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }
        if self.title:
            wire["title"] = self.title
        return wire


@dataclass(frozen=True)
class ToolResult:
    """What a handler returns. `structured` is sent as `structuredContent` when the tool has an output schema."""

    content: list[dict[str, Any]]
    structured: Any = None
    is_error: bool = False
    # Extra top-level fields of the tools/call result, for contracts that read their own (the techdoc contract's
    # `is_error`/`error`); merged after the spec's fields and never replacing one of them.
    extra: dict[str, Any] = field(default_factory=dict)
    # Set by a handler that fitted the result to the response budget itself, where it knows what can go
    # (shorter snippets, fewer hits with a cursor to the rest); see mcp_endpoint/budget.py.
    fitted: bool = False
    # What the call found, for the query log (corpus.querylog.Observation, from the serving call's `.seen`):
    # a tool declared with `record` is recorded from these by the protocol layer (mcp_endpoint/recording.py).
    seen: tuple[Any, ...] = ()

    def as_fitted(self) -> ToolResult:
        return replace(self, fitted=True)

    def saw(self, *seen: Any) -> ToolResult:
        """This result, with what its serving calls found (their `.seen`) for the query log."""
        return replace(self, seen=self.seen + seen)

    @classmethod
    def text(cls, text: str, structured: Any = None) -> ToolResult:
        return cls(content=[{"type": "text", "text": text}], structured=structured)

    @classmethod
    def json(cls, obj: Any) -> ToolResult:
        """One text block holding `obj` as indented JSON, and the same object as structured content."""
        return cls.text(indented(obj), structured=obj)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=[{"type": "text", "text": message}], is_error=True)


ToolHandler = Callable[[Context, dict[str, Any]], ToolResult]


@dataclass(frozen=True)
class ToolDef:
    """One tool. `handler(context, arguments)` gets arguments already validated against
    `input_schema`, with top-level defaults filled in."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    title: str | None = None
    scope: str = "read"  # API-key scope a caller needs when it presents a key
    extra: dict[str, Any] = field(default_factory=dict)  # extra tools/list fields; never replace the spec's
    # "search" or "read": every call is recorded in the query log (corpus/querylog.py) by the protocol layer,
    # from the result's `seen`; "" is not recorded.
    record: str = ""


@dataclass(frozen=True)
class ResourceDef:
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None
    title: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # extra resources/list fields; never replace the spec's


@dataclass(frozen=True)
class ResourceTemplateDef:
    uri_template: str
    name: str
    description: str = ""
    mime_type: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class ResourceContents:
    """One item of a resources/read result: `text`, or `blob` (base64)."""

    uri: str
    text: str | None = None
    blob: str | None = None
    mime_type: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # sent as the item's `_meta` when set


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class PromptResult:
    messages: list[dict[str, Any]]
    description: str | None = None


@dataclass(frozen=True)
class PromptDef:
    """One prompt. `handler(context, arguments)` gets string arguments, required ones checked."""

    name: str
    description: str
    handler: Callable[[Context, dict[str, str]], PromptResult]
    arguments: tuple[PromptArgument, ...] = ()
    title: str | None = None


def text_message(text: str, role: str = "user") -> dict[str, Any]:
    """A prompt message with one text block."""
    return {"role": role, "content": {"type": "text", "text": text}}


@runtime_checkable
class Profile(Protocol):
    """What the transport calls on a profile, each time with the request's `Context`."""

    server_name: str  # serverInfo.name

    def tools(self, context: Context) -> list[ToolDef]: ...

    def instructions(self, context: Context) -> str | None: ...

    def resources(self, context: Context) -> list[ResourceDef]: ...

    def resource_templates(self, context: Context) -> list[ResourceTemplateDef]: ...

    def read_resource(self, context: Context, uri: str) -> list[ResourceContents]:
        """The contents at `uri`; raises ResourceNotFound for a URI the profile does not serve."""
        ...

    def prompts(self, context: Context) -> list[PromptDef]: ...

    def check_context(self, context: Context) -> None:
        """Raises UnknownCorpus when the request names a corpus this profile cannot serve."""
        ...

    def max_body_bytes(self) -> int | None:
        """The largest request body the profile takes; None: MCP_MAX_BODY_BYTES."""
        ...


class BaseProfile:
    """A profile with nothing but its tools: every other hook's default. Subclasses override what
    their contract serves."""

    server_name = "docsmcp"

    def tools(self, context: Context) -> list[ToolDef]:
        raise NotImplementedError(f"{type(self).__name__} must define tools(context)")

    def instructions(self, context: Context) -> str | None:
        return None

    def resources(self, context: Context) -> list[ResourceDef]:
        return []

    def resource_templates(self, context: Context) -> list[ResourceTemplateDef]:
        return []

    def read_resource(self, context: Context, uri: str) -> list[ResourceContents]:
        raise ResourceNotFound(uri)

    def prompts(self, context: Context) -> list[PromptDef]:
        return []

    def check_context(self, context: Context) -> None:
        return None

    def max_body_bytes(self) -> int | None:
        return None


HOOKS = ("tools", "instructions", "resources", "resource_templates", "read_resource", "prompts",
         "check_context", "max_body_bytes")


class ModuleProfile(BaseProfile):
    """A profile written as functions of a module (or attributes of any object): each hook it defines,
    BaseProfile's default for the others; `SERVER_NAME` names the server."""

    def __init__(self, source: Any):
        if not callable(getattr(source, "tools", None)):
            raise TypeError(f"{source!r} is not a profile: it has no tools(context) function")
        self.source = source
        self.server_name = getattr(source, "SERVER_NAME", BaseProfile.server_name)
        for hook in HOOKS:
            function = getattr(source, hook, None)
            if callable(function):
                setattr(self, hook, function)

    def __repr__(self) -> str:
        return f"ModuleProfile({getattr(self.source, '__name__', self.source)!r})"


def as_profile(entry: Any) -> Profile:
    """`entry` as a Profile: a BaseProfile (or anything that has every hook) as it is, a module or
    other object through ModuleProfile."""
    if isinstance(entry, BaseProfile) or (not isinstance(entry, ModuleType) and isinstance(entry, Profile)):
        return entry
    return ModuleProfile(entry)


# name -> profile, or dotted module path imported on first use (so profiles written later only need
# their module to exist).
_registry: dict[str, Any] = {
    "docs": "mcp_endpoint.profiles.docs",
    "documents": "mcp_endpoint.profiles.documents",
    "techdoc": "mcp_endpoint.profiles.techdoc",
    "citeloom": "mcp_endpoint.profiles.citeloom",
}
_lock = threading.Lock()

DEFAULT_PROFILE = "docs"


def register_profile(name: str, profile: Profile | ModuleType | str | Any) -> None:
    """Serve `profile` (a Profile, a module or object with profile functions, or a dotted module path)
    at /mcp/<name>/."""
    with _lock:
        _registry[name] = profile if isinstance(profile, str) else as_profile(profile)


def unregister_profile(name: str) -> None:
    with _lock:
        _registry.pop(name, None)


def profile_names() -> list[str]:
    return sorted(_registry)


def get_profile(name: str) -> Profile:
    """The profile registered as `name`; raises UnknownProfile if there is none (or its module is missing)."""
    entry = _registry.get(name)
    if entry is None:
        raise UnknownProfile(name)
    if isinstance(entry, str):
        try:
            module = importlib.import_module(entry)
        except ModuleNotFoundError as exc:
            if exc.name and entry.startswith(exc.name):
                raise UnknownProfile(name) from None
            raise
        profile = as_profile(module)
        with _lock:
            if _registry.get(name) == entry:
                _registry[name] = profile
        return profile
    return entry
