"""Tool profiles: the shapes a profile hands the transport, and the registry that names them.

A profile is a thin adapter over the engine, one per contract (seed): argument schema in,
engine call, result shape out. What the transport calls on it is `Profile`; `BaseProfile` gives
every hook but `tools` a default, so a profile writes only what its contract serves. A profile
written as a module of functions (docs, documents, techdoc, citeloom) names its hooks in a
`FunctionProfile`, each by reference, so a hook it names but lacks fails when its module is imported
(the registry, registry.py, imports every profile with the transport), never at a request.

Every hook is called per request with a fresh `Context`, so a profile can follow the active
build (new taxonomy values show in the next tools/list) and stays stateless across workers.
Handlers report failures the agent should read by raising `ToolError` (or any engine or corpus error):
the transport turns them into `isError: true` results, as mcp_endpoint/answers.py says for each class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
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


DEFAULT_PROFILE = "docs"  # served at /mcp/ and /mcp/c/<corpus>/ (registry.py holds every profile)


# The default of each hook but `tools`, shared by BaseProfile and FunctionProfile.

def no_instructions(context: Context) -> str | None:
    return None


def no_resources(context: Context) -> list[ResourceDef]:
    return []


def no_resource_templates(context: Context) -> list[ResourceTemplateDef]:
    return []


def no_resource(context: Context, uri: str) -> list[ResourceContents]:
    raise ResourceNotFound(uri)


def no_prompts(context: Context) -> list[PromptDef]:
    return []


def any_context(context: Context) -> None:
    return None


def default_body_limit() -> int | None:
    return None


class BaseProfile:
    """A profile with nothing but its tools: every other hook's default. Subclasses override what
    their contract serves."""

    server_name = "docsmcp"

    def tools(self, context: Context) -> list[ToolDef]:
        raise NotImplementedError(f"{type(self).__name__} must define tools(context)")

    def instructions(self, context: Context) -> str | None:
        return no_instructions(context)

    def resources(self, context: Context) -> list[ResourceDef]:
        return no_resources(context)

    def resource_templates(self, context: Context) -> list[ResourceTemplateDef]:
        return no_resource_templates(context)

    def read_resource(self, context: Context, uri: str) -> list[ResourceContents]:
        return no_resource(context, uri)

    def prompts(self, context: Context) -> list[PromptDef]:
        return no_prompts(context)

    def check_context(self, context: Context) -> None:
        return any_context(context)

    def max_body_bytes(self) -> int | None:
        return default_body_limit()


HOOKS = ("tools", "instructions", "resources", "resource_templates", "read_resource", "prompts",
         "check_context", "max_body_bytes")


@dataclass(frozen=True)
class FunctionProfile:
    """A profile written as functions, each hook named by reference (a hook left out keeps its default):
    `PROFILE = FunctionProfile(tools=tools, resources=docs_resources.resources, ...)`. A misspelt hook is
    a TypeError and a hook that does not exist a NameError, both when the module is imported."""

    tools: Callable[[Context], list[ToolDef]]
    server_name: str = "docsmcp"  # serverInfo.name
    instructions: Callable[[Context], str | None] = no_instructions
    resources: Callable[[Context], list[ResourceDef]] = no_resources
    resource_templates: Callable[[Context], list[ResourceTemplateDef]] = no_resource_templates
    read_resource: Callable[[Context, str], list[ResourceContents]] = no_resource
    prompts: Callable[[Context], list[PromptDef]] = no_prompts
    check_context: Callable[[Context], None] = any_context
    max_body_bytes: Callable[[], int | None] = default_body_limit

    def __post_init__(self) -> None:
        wrong = [f.name for f in fields(self) if f.name != "server_name" and not callable(getattr(self, f.name))]
        if wrong:
            raise TypeError(f"profile hooks that are not functions: {', '.join(wrong)}")


def check_profile(profile: Any) -> Profile:
    """`profile`, once it has every hook as a function and a server name; raises TypeError naming what
    it lacks, so a profile is refused when it is registered, not at the request that needs the hook."""
    missing = [hook for hook in HOOKS if not callable(getattr(profile, hook, None))]
    if not isinstance(getattr(profile, "server_name", None), str):
        missing.append("server_name")
    if missing:
        raise TypeError(f"{profile!r} is not a profile: it lacks {', '.join(missing)}")
    return profile
