"""Syntax trees of source text, each parsed and walked once while a module of tests that reads the code runs.

tests/test_layout.py and tests/docsmcp_site/test_settings_documented.py read every module of the project
several times over (imports, environment reads, settings reads, conversions); parsing, with the garbage
collections its nodes set off, and walking the same trees again were most of their CPU. The trees are
shared: a test only reads one. The module that parses clears the cache when it is done (`forget`), so the
trees do not stay in the test process's heap, where every later full collection would go through them.
"""

from __future__ import annotations

import ast
import gc
from functools import cache


@cache
def _parsed(source: str) -> ast.Module:
    """With the cyclic collector paused: a tree holds no cycles, yet the thousands of nodes a parse allocates
    set off collections of the test process's whole heap, which cost more than the parse itself."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if collecting:
            gc.enable()


@cache
def _walked(source: str) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_parsed(source)))


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse(source), the same tree for the same text; a syntax error names `filename`."""
    try:
        return _parsed(source)
    except SyntaxError as exc:
        exc.filename = filename
        raise


def walk(source: str, filename: str = "<unknown>") -> tuple[ast.AST, ...]:
    """Every node of parse(source), in ast.walk's order."""
    parse(source, filename)
    return _walked(source)


def forget() -> None:
    _parsed.cache_clear()
    _walked.cache_clear()
