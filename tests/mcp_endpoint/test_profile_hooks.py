"""What a profile must write and what it gets for free: `tools` alone serves every MCP method, with
the default for each other hook; a profile written as a module is served through the same hooks."""

from __future__ import annotations

import pytest

from mcp_endpoint import protocol
from mcp_endpoint.profiles import (
    BaseProfile,
    Context,
    Profile,
    ResourceNotFound,
    ToolDef,
    ToolResult,
    as_profile,
    get_profile,
)

EMPTY = {"type": "object", "additionalProperties": False, "properties": {}}


class OnlyTools(BaseProfile):
    def tools(self, context: Context) -> list[ToolDef]:
        return [ToolDef("hello", "Says hello.", EMPTY, lambda context, arguments: ToolResult.text("hello"))]


def dispatch(profile: Profile, method: str, params: dict | None = None) -> dict:
    context = Context(request=None, profile="only-tools", protocol_version="2025-06-18")
    return protocol.dispatch(protocol.Call(method, params or {}, context, profile, modern=False))


def test_a_profile_that_writes_only_its_tools_answers_every_method(settings):
    profile = as_profile(OnlyTools())
    assert isinstance(profile, Profile)
    init = dispatch(profile, "initialize", {"protocolVersion": "2025-06-18"})
    assert init["serverInfo"]["name"] == "docsmcp" and "instructions" not in init
    assert [t["name"] for t in dispatch(profile, "tools/list")["tools"]] == ["hello"]
    assert dispatch(profile, "tools/call", {"name": "hello"})["content"] == [{"type": "text", "text": "hello"}]
    assert dispatch(profile, "resources/list") == {"resources": []}
    assert dispatch(profile, "resources/templates/list") == {"resourceTemplates": []}
    assert dispatch(profile, "prompts/list") == {"prompts": []}
    with pytest.raises(ResourceNotFound):
        profile.read_resource(Context(request=None, profile="only-tools"), "x://nothing")
    assert profile.max_body_bytes() is None and profile.check_context(Context(request=None, profile="x")) is None


def test_a_module_profile_keeps_its_own_hooks_and_the_defaults_for_the_rest():
    citeloom = get_profile("citeloom")
    assert isinstance(citeloom, Profile)
    assert citeloom.max_body_bytes() > 0  # its own: store_chunks takes large batches
    assert citeloom.resource_templates(Context(request=None, profile="citeloom")) == []  # the default


def test_something_without_tools_is_not_a_profile():
    with pytest.raises(TypeError, match="no tools"):
        as_profile(object())
