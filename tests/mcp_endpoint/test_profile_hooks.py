"""What a profile must write and what it gets for free: `tools` alone serves every MCP method, with
the default for each other hook; a profile written as functions names each hook it has, and one that
names a hook it lacks fails when the server starts, not at the request that needs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcp_endpoint import protocol
from mcp_endpoint.profiles import (
    BaseProfile,
    Context,
    FunctionProfile,
    Profile,
    ResourceNotFound,
    ToolDef,
    ToolResult,
    check_profile,
    docs_resources,
)
from mcp_endpoint.profiles.registry import get_profile, profile_names, register_profile
from tests.conftest import ROOT

EMPTY = {"type": "object", "additionalProperties": False, "properties": {}}


class OnlyTools(BaseProfile):
    def tools(self, context: Context) -> list[ToolDef]:
        return [ToolDef("hello", "Says hello.", EMPTY, lambda context, arguments: ToolResult.text("hello"))]


def dispatch(profile: Profile, method: str, params: dict | None = None) -> dict:
    context = Context(request=None, profile="only-tools", protocol_version="2025-06-18")
    return protocol.dispatch(protocol.Call(method, params or {}, context, profile, modern=False))


def test_a_profile_that_writes_only_its_tools_answers_every_method(settings):
    profile = check_profile(OnlyTools())
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


def test_a_function_profile_keeps_its_own_hooks_and_the_defaults_for_the_rest():
    citeloom = get_profile("citeloom")
    assert isinstance(citeloom, Profile)
    assert citeloom.max_body_bytes() > 0  # its own: store_chunks takes large batches
    assert citeloom.resource_templates(Context(request=None, profile="citeloom")) == []  # the default


def test_the_docs_profile_names_its_resource_hooks():
    """The docs:// resources hang on references, not on names imported for their side effect."""
    docs = get_profile("docs")
    assert (docs.resources, docs.resource_templates, docs.read_resource) == (
        docs_resources.resources, docs_resources.resource_templates, docs_resources.read_resource)


def test_something_without_tools_is_not_a_profile():
    with pytest.raises(TypeError, match="tools"):
        check_profile(object())
    with pytest.raises(TypeError, match="tools"):
        register_profile("nothing", object())
    assert "nothing" not in profile_names()


def test_a_profile_naming_a_hook_that_does_not_exist_fails_where_it_is_written():
    def tools(context):
        return []

    with pytest.raises(TypeError, match="resourcs"):
        FunctionProfile(tools=tools, resourcs=tools)  # misspelt: no such hook
    with pytest.raises(TypeError, match="read_resource"):
        FunctionProfile(tools=tools, read_resource="docs_resources.read_resource")  # a name, not the function

    class Half(BaseProfile):
        def tools(self, context):
            return []

        read_resource = None  # a hook that is not a function

    with pytest.raises(TypeError, match="read_resource"):
        register_profile("half", Half())
    assert "half" not in profile_names()


@pytest.mark.slow
def test_loading_the_url_configuration_imports_and_checks_every_profile():
    """What `manage.py check`, runserver and each serving worker load at start brings every profile in,
    so one that names a missing hook stops the server instead of failing its first caller."""
    code = ("import json, sys, django\n"
            "django.setup()\n"
            "from django.urls import get_resolver\n"
            "get_resolver().url_patterns\n"
            "from mcp_endpoint.profiles import registry\n"
            "print(json.dumps([registry.profile_names(),\n"
            "                  sorted(m for m in sys.modules if m.startswith('mcp_endpoint.profiles.'))]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "DJANGO_SETTINGS_MODULE": "docsmcp_site.settings"})
    assert done.returncode == 0, done.stderr
    names, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert names == ["citeloom", "docs", "documents", "techdoc"]
    assert {f"mcp_endpoint.profiles.{name}" for name in names} <= set(modules)
