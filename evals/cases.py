"""Eval case files: read both spellings in use, write either. Pure Python, no Django.

    docs-mcp / the bundled suite:  {name, category, query, filters, expectedChunkId | expectedChunkIds,
                                    expectedFiles, answerable, maxRank, requireCovered}
    ../shared/bench/*.jsonl:       {id, query, expected_chunk_ids, expected_files, category, filters,
                                    answerable, max_rank, require_covered}

`answerable: false` says the docs do not answer the question: the case passes when the search says so
(its coverage verdict). A case that expects nothing is such a case whether or not it says so.

A file is a JSON array, a JSON object with a `cases` array, or JSONL (one case per line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import CaseFormatError

STYLES = ("bench", "docs-mcp")
_KNOWN = {"name", "id", "category", "query", "filters", "corpus", "expectedChunkId", "expectedChunkIds", "expected_chunk_ids",
          "expected_chunk_id", "expectedFiles", "expected_files", "expectedFile", "expected_file", "answerable",
          "maxRank", "max_rank", "requireCovered", "require_covered"}
MAX_RANK_LIMIT = 100


@dataclass
class CaseSpec:
    name: str
    query: str
    category: str = ""
    filters: dict[str, Any] = field(default_factory=dict)
    expected_chunk_ids: list[str] = field(default_factory=list)
    expected_files: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    corpus: str = ""  # the corpus that answers the case, for runs across corpora ("" = any)
    answerable: bool = True  # False: the docs should say they do not cover the question
    max_rank: int | None = None  # the expected item must be at this rank or better (None: anywhere found)
    require_covered: bool = False  # the verdict must be `covered` (otherwise anything but `not_covered` passes)


def _ids(obj: dict, where: str, *names: str) -> list[str]:
    """The first of `names` present; a string is one ID, a list is many; empty and duplicates dropped."""
    for name in names:
        if name not in obj or obj[name] is None:
            continue
        value = obj[name]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CaseFormatError(f"{where}: {name} must be a string or a list of strings")
        return list(dict.fromkeys(v for v in value if v))
    return []


def parse_case(obj: Any, where: str, default_name: str) -> CaseSpec:
    if not isinstance(obj, dict):
        raise CaseFormatError(f"{where}: a case must be a JSON object, not {type(obj).__name__}")
    query = obj.get("query")
    if not isinstance(query, str) or not query.strip():
        raise CaseFormatError(f"{where}: missing 'query' (a non-empty string)")
    name = obj.get("name") if obj.get("name") is not None else obj.get("id")
    name = str(name).strip() if name is not None else default_name
    filters = obj.get("filters") or {}
    if not isinstance(filters, dict):
        raise CaseFormatError(f"{where}: filters must be an object such as {{\"language\": \"python\"}}")
    category = obj.get("category") or ""
    if not isinstance(category, str):
        raise CaseFormatError(f"{where}: category must be a string")
    corpus = obj.get("corpus") or ""
    if not isinstance(corpus, str):
        raise CaseFormatError(f"{where}: corpus must be a string, the name of the corpus that answers the case")
    chunks = _ids(obj, where, "expectedChunkIds", "expected_chunk_ids", "expectedChunkId", "expected_chunk_id")
    files = _ids(obj, where, "expectedFiles", "expected_files", "expectedFile", "expected_file")
    answerable = obj.get("answerable")
    if answerable is not None and not isinstance(answerable, bool):
        raise CaseFormatError(f"{where}: answerable must be true or false")
    if answerable is None:
        answerable = bool(chunks or files)
    if answerable and not (chunks or files):
        raise CaseFormatError(f"{where}: an answerable case needs the chunks or files that answer it "
                              "(expectedChunkIds / expectedFiles); a question the docs do not answer says "
                              "\"answerable\": false")
    if not answerable and (chunks or files):
        raise CaseFormatError(f"{where}: a case with \"answerable\": false expects no chunks or files; the docs "
                              "should say they do not cover it")
    max_rank = _first(obj, "maxRank", "max_rank")
    if max_rank is not None and (isinstance(max_rank, bool) or not isinstance(max_rank, int)
                                 or not 1 <= max_rank <= MAX_RANK_LIMIT):
        raise CaseFormatError(f"{where}: maxRank must be a whole number from 1 to {MAX_RANK_LIMIT} (the expected "
                              "page or chunk must be at that rank or better)")
    require_covered = _first(obj, "requireCovered", "require_covered")
    if require_covered is not None and not isinstance(require_covered, bool):
        raise CaseFormatError(f"{where}: requireCovered must be true or false")
    if not answerable and (max_rank is not None or require_covered):
        raise CaseFormatError(f"{where}: maxRank and requireCovered are for answerable cases")
    return CaseSpec(
        name=name or default_name, query=query, category=category, filters=dict(filters),
        expected_chunk_ids=chunks, expected_files=files,
        extra={k: v for k, v in obj.items() if k not in _KNOWN}, corpus=corpus.strip(),
        answerable=answerable, max_rank=max_rank, require_covered=bool(require_covered),
    )


def _first(obj: dict, *names: str) -> Any:
    return next((obj[n] for n in names if obj.get(n) is not None), None)


def parse_cases(text: str, source: str = "<cases>") -> list[CaseSpec]:
    """Cases from the text of a JSON or JSONL file; names must be unique."""
    stripped = text.lstrip()
    items: list[tuple[str, Any]] = []
    parsed_whole = False
    if stripped.startswith("["):
        try:
            data = json.loads(text)
            items = [(f"{source}: case {n}", obj) for n, obj in enumerate(data, start=1)]
            parsed_whole = True
        except json.JSONDecodeError:
            parsed_whole = False
    elif stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None  # JSONL whose first line is an object
        if isinstance(data, dict) and isinstance(data.get("cases"), list):
            items = [(f"{source}: case {n}", obj) for n, obj in enumerate(data["cases"], start=1)]
            parsed_whole = True
        elif isinstance(data, dict) and "query" in data:
            items, parsed_whole = [(f"{source}:1", data)], True
    if not parsed_whole:
        for ln, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"{source}:{ln}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise CaseFormatError(f"{source}:{ln}: not JSON ({exc.msg}); expected a JSON array or "
                                      "one JSON object per line") from None
    cases = [parse_case(obj, where, f"q{n}") for n, (where, obj) in enumerate(items, start=1)]
    seen: dict[str, int] = {}
    for n, case in enumerate(cases, start=1):
        if case.name in seen:
            raise CaseFormatError(f"{source}: case name {case.name!r} is used twice (cases {seen[case.name]} "
                                  f"and {n}); names must be unique within a suite")
        seen[case.name] = n
    return cases


def read_cases(path: str | Path) -> list[CaseSpec]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_cases(text, str(path))


def case_to_dict(case: CaseSpec, style: str = "bench") -> dict[str, Any]:
    """One case in either spelling; empty optional fields are left out (the category never is)."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; use one of {', '.join(STYLES)}")
    if style == "bench":
        out: dict[str, Any] = {"id": case.name, "query": case.query}
        if case.expected_chunk_ids:
            out["expected_chunk_ids"] = case.expected_chunk_ids
        if case.expected_files:
            out["expected_files"] = case.expected_files
        out["category"] = case.category
        if case.filters:
            out["filters"] = case.filters
    else:
        out = {"name": case.name, "category": case.category, "query": case.query, "filters": case.filters}
        if len(case.expected_chunk_ids) == 1:
            out["expectedChunkId"] = case.expected_chunk_ids[0]
        else:
            out["expectedChunkIds"] = case.expected_chunk_ids
        if case.expected_files:
            out["expectedFiles"] = case.expected_files
    if case.corpus:
        out["corpus"] = case.corpus
    if not case.answerable:
        out["answerable"] = False
    if case.max_rank is not None:
        out["max_rank" if style == "bench" else "maxRank"] = case.max_rank
    if case.require_covered:
        out["require_covered" if style == "bench" else "requireCovered"] = True
    return {**case.extra, **out}


def dump_cases(cases: list[CaseSpec], fmt: str = "jsonl", style: str | None = None) -> str:
    """JSONL (bench spelling by default) or a JSON array (docs-mcp spelling by default)."""
    if fmt == "jsonl":
        return "".join(json.dumps(case_to_dict(c, style or "bench"), ensure_ascii=False) + "\n" for c in cases)
    if fmt == "json":
        return json.dumps([case_to_dict(c, style or "docs-mcp") for c in cases], ensure_ascii=False, indent=2) + "\n"
    raise ValueError(f"unknown format {fmt!r}; use jsonl or json")
