"""What a profile's tools, results, resources and prompts look like on the wire, per protocol version.

The spec's fields come first, each only from the version that has it (`title` and `outputSchema` from
2025-06-18); a profile's contract-specific fields (`extra`) are added after them and never replace one.
"""

from __future__ import annotations

from typing import Any

from mcp_endpoint.profiles import PromptDef, ResourceContents, ToolDef, ToolResult
from mcp_endpoint.versions import at_least


def tool_to_wire(tool: ToolDef, version: str) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    if at_least(version, "2025-06-18"):
        if tool.title:
            wire["title"] = tool.title
        if tool.output_schema is not None:
            wire["outputSchema"] = tool.output_schema
    wire["annotations"] = tool.annotations.to_wire()
    return with_extra(wire, tool.extra)


def with_extra(wire: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A profile's contract-specific fields, added after the spec's and never replacing one."""
    for key, value in extra.items():
        wire.setdefault(key, value)
    return wire


def tool_result_to_wire(tool: ToolDef, result: ToolResult, version: str) -> dict[str, Any]:
    wire: dict[str, Any] = {"content": list(result.content), "isError": result.is_error}
    # An error result carries structured content only when its handler built one on purpose
    # (the citeloom contract's error object); ToolResult.error() and raised errors never do.
    if tool.output_schema is not None and result.structured is not None and at_least(version, "2025-06-18"):
        wire["structuredContent"] = result.structured
    return with_extra(wire, result.extra)


def _described(wire: dict[str, Any], item: Any) -> dict[str, Any]:
    """The optional fields resources and templates share, each only when set."""
    for key, value in (("title", item.title), ("description", item.description), ("mimeType", item.mime_type)):
        if value:
            wire[key] = value
    return wire


def resource_to_wire(resource: Any) -> dict[str, Any]:
    wire = _described({"uri": resource.uri, "name": resource.name}, resource)
    return with_extra(wire, getattr(resource, "extra", None) or {})


def template_to_wire(template: Any) -> dict[str, Any]:
    return _described({"uriTemplate": template.uri_template, "name": template.name}, template)


def contents_to_wire(item: ResourceContents) -> dict[str, Any]:
    wire: dict[str, Any] = {"uri": item.uri}
    if item.mime_type:
        wire["mimeType"] = item.mime_type
    if item.blob is not None:
        wire["blob"] = item.blob
    else:
        wire["text"] = item.text or ""
    if item.meta:
        wire["_meta"] = item.meta
    return wire


def prompt_to_wire(prompt: PromptDef) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": prompt.name, "description": prompt.description}
    if prompt.title:
        wire["title"] = prompt.title
    if prompt.arguments:
        wire["arguments"] = [
            {"name": a.name, "description": a.description, "required": a.required} for a in prompt.arguments
        ]
    return wire
