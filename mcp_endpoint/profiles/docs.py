"""The docs profile (seeds 000/001): `search_docs` and `get_doc`, served at /mcp/ and /mcp/c/<corpus>/.

Stub: the transport serves it already (initialize, tools/list with no tools, instructions);
the engine adapter that fills in `tools()` with search_docs/get_doc is written separately.
See `mcp_endpoint/profiles/__init__.py` for the hooks a profile provides.
"""

from __future__ import annotations

from mcp_endpoint.profiles import Context, ToolDef

SERVER_NAME = "docsmcp"


def instructions(context: Context) -> str:
    corpus = f"the '{context.corpus}' corpus" if context.corpus else "the default corpus"
    return (
        f"docsmcp serves documentation from {corpus}. Search with search_docs, then read a hit "
        "in full (and its neighbours) with get_doc using the chunk_id it returned."
    )


def tools(context: Context) -> list[ToolDef]:
    return []
