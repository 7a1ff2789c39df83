"""The MCP protocol versions this server speaks, in their two eras, and what changes from one to the next.

The handshake era (2025-03-26, 2025-06-18, 2025-11-25) opens with `initialize`; the 2026-07-28 era has no
handshake (`server/discover`, a `_meta` envelope per request). The transports (transport.py, stdio.py) pick
the era from these lists; protocol.py and wire.py ask `at_least` what a client's version allows.
"""

from __future__ import annotations

from typing import Any

HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
SUPPORTED_VERSIONS: tuple[str, ...] = HANDSHAKE_VERSIONS + MODERN_VERSIONS
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
LATEST_VERSION = MODERN_VERSIONS[-1]
# Streamable HTTP spec: a request without MCP-Protocol-Version is taken to be 2025-03-26.
DEFAULT_VERSION = "2025-03-26"
ARGUMENT_ERRORS_AS_RESULTS_FROM = "2025-11-25"
BATCH_VERSIONS: tuple[str, ...] = ("2025-03-26",)  # JSON-RPC batches were dropped in 2025-06-18


def negotiate_version(requested: Any) -> str:
    """initialize: the client's version if we speak it (handshake era), else our latest."""
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION


def at_least(version: str, minimum: str) -> bool:
    """Whether `version` is `minimum` or a later version this server speaks (an unknown one is not)."""
    return (
        SUPPORTED_VERSIONS.index(version) >= SUPPORTED_VERSIONS.index(minimum)
        if version in SUPPORTED_VERSIONS
        else False
    )


def argument_errors_are_results(version: str) -> bool:
    """From 2025-11-25 on (SEP-1303) a tool's argument errors are tool execution errors
    (`isError: true`), which a client shows the model; before, they are JSON-RPC -32602,
    which clients raise as exceptions the model never sees. An unknown tool stays -32602."""
    return at_least(version, ARGUMENT_ERRORS_AS_RESULTS_FROM)
