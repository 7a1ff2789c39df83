#!/usr/bin/env python
"""Site-generator syntax left in the served chunks of real docs folders, counted per kind and site.

    python bench/site_scan.py argocd=/tmp/sites/argocd/docs mystmd=/tmp/sites/mystmd/docs
    python bench/site_scan.py --index /path/to/indexes/argocd/builds/<build id> --examples 5

Each NAME=DIR is built as `build_index` builds it (full text, no embeddings, into a temporary
folder), then every chunk of the build's LanceDB table is read back, heading and content, as
`search_docs` serves them; `--index` scans an existing build instead. Code (fenced blocks and
inline code spans) is skipped: docs about a generator show its syntax as code on purpose. Prints,
per site, the pages, chunks and build seconds, then one count per kind of construct still there
(0 is the goal), and with `--examples N` the first N chunk lines of each kind.

It also counts the inline code spans of each page's prose (outside HTML comments, a MyST role's
text not counted) that its cleaned text no longer holds as written (`code_spans_altered`): MDX and MyST read a code span literally, so `` `{note}` `` or
`` `Slice<State>` `` must survive reading the page (Hugo and Liquid expand inside code spans, so
their sites are not counted).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# One pattern per kind, matched on a line with its code removed.
KINDS: dict[str, re.Pattern[str]] = {
    "hugo-shortcode": re.compile(r"\{\{[<%]|[<%]\}\}"),
    "mkdocs-admonition": re.compile(r"^\s*(?:!!!|\?\?\?)\+?[ \t]"),
    "mkdocs-tab": re.compile(r'^\s*===\+?[ \t]+"'),
    "mkdocs-snippet": re.compile(r"--8<--"),
    "mkdocs-include": re.compile(r"^\s*\{![^!]+!\}\s*$"),
    "mdx-import-export": re.compile(r"^\s*(?:import|export)\s+(?:[\w{*}]|default\b)"),
    "mdx-comment": re.compile(r"\{/\*|\*/\}"),
    "jsx-attribute": re.compile(r"\bclassName\s*=|^\s*\w+=\{|\s\w+=\{\{?[\w'\"]"),  # <div className=...>, src={...}
    "jsx-tag": re.compile(r"</?[A-Z][a-z][\w.]*(?:\s[^<>]*)?/?>"),  # <Tabs>, not HTML's <B> or a <KEYID>
    "colon-fence": re.compile(r"^\s*:::+\s*(?:[\w{]|$)"),
    "myst-directive": re.compile(r"^\s*(?:`{3,}|~{3,})\s*\{[\w:.-]+\}"),
    "myst-role": re.compile(r"(?<![$\w])\{[a-z][\w:.-]*\}``"),  # matched once code spans are ``
    "myst-target": re.compile(r"^\s*\([\w.:-]+\)=\s*$"),
    "myst-option": re.compile(r"^\s*:[\w-]+:(?:\s|$)"),
    "liquid": re.compile(r"\{%-?|-?%\}|\{\{-?\s*(?:site|page|include|layout|jekyll)\."),
    "html-comment": re.compile(r"<!--"),
    "kramdown-attribute": re.compile(r"^\s*\{:[^}]*\}\s*$"),
    "heading-id": re.compile(r"^#{1,6}\s.*\{#[\w.-]+\}\s*$"),
}
MARKDOWN_INCLUDE = re.compile(r"^\s*\{![^!]+!\}\s*$")
FENCE = re.compile(r"^\s*(?:(?:[-*+]|\d{1,9}[.)]|>)\s+)*(`{3,}|~{3,})(.*)$")  # in a list item too
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def scan_text(text: str) -> list[tuple[str, str]]:
    """(kind, line) for every line of a chunk that still holds generator syntax outside code."""
    found: list[tuple[str, str]] = []
    fence = ""
    for line in text.split("\n"):
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not match.group(2).strip():
                fence = ""
            elif MARKDOWN_INCLUDE.match(line):  # markdown-include's `{!file!}` is syntax even in a code block
                found.append(("mkdocs-include", line))
            continue
        if match:
            if match.group(2).strip().startswith("{"):  # a MyST directive fence is syntax, not code
                found.append(("myst-directive", line))
            fence = match.group(1)
            continue
        bare = CODE_SPAN.sub("``", line)
        for kind, pattern in KINDS.items():
            if kind != "myst-directive" and pattern.search(bare):
                found.append((kind, line))
    return found


def altered_code_spans(folder: Path, examples: int) -> tuple[int, int, list[str]]:
    """(spans in prose, spans the cleaned text lost, examples) over the pages of `folder`."""
    from retrieval.ingest.folder import scan_corpus
    from retrieval.ingest.pages import file_text, served_text

    scan = scan_corpus(folder)
    if scan.generator in ("hugo", "jekyll"):
        return 0, 0, []
    total, lost, shown = 0, 0, []
    for relpath, raw in scan.files.items():
        if not relpath.endswith((".md", ".mdx", ".markdown")):
            continue
        if not scan.generator and not relpath.endswith(".mdx"):
            continue
        cleaned = served_text(scan.files, relpath, scan.generator, scan.included(relpath))
        for line in _prose(COMMENT.sub("", file_text(raw))):  # a comment's code spans vanish with it
            for match in CODE_SPAN.finditer(line):
                if line[:match.start()].endswith("}"):  # a MyST role's text: `{term}`pod`` reads pod
                    continue
                total += 1
                if match.group(0) not in cleaned:
                    lost += 1
                    if len(shown) < examples:
                        shown.append(f"{relpath}: {match.group(0)[:100]}")
    return total, lost, shown


def _prose(text: str):
    fence = ""
    for line in text.split("\n"):
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not match.group(2).strip():
                fence = ""
        elif match:
            fence = "" if match.group(2).strip().startswith("{") else match.group(1)
        else:
            yield line


def read_chunks(build: Path) -> list[dict]:
    import lancedb

    table = lancedb.connect(str(build / "lancedb")).open_table("chunks")
    return table.to_arrow().select(["chunk_id", "filepath", "heading", "content"]).to_pylist()


def build(name: str, folder: Path, out: Path) -> tuple[Path, dict, float]:
    from retrieval.ingest.build import BuildRequest, build_index

    last = {"stage": ""}

    def progress(stage: str, done: int, total: int) -> None:
        if stage != last["stage"] or done == total or done % 50 == 0:
            print(f"\r  {name}: {stage} {done}/{total}   ", end="", file=sys.stderr, flush=True)
            last["stage"] = stage

    started = time.perf_counter()
    result = build_index(BuildRequest(folder, out / name, name, name), progress=progress)
    elapsed = time.perf_counter() - started
    print(file=sys.stderr)
    return Path(str(result.path)), result.stats, elapsed


def report(name: str, chunks: list[dict], examples: int) -> Counter:
    counts: Counter = Counter()
    shown: dict[str, list[str]] = defaultdict(list)
    for chunk in chunks:
        text = (f"# {chunk['heading']}\n" if chunk["heading"] else "") + (chunk["content"] or "")
        for kind, line in scan_text(text):
            counts[kind] += 1
            if len(shown[kind]) < examples:
                shown[kind].append(f"{chunk['chunk_id']}: {line.strip()[:140]}")
    total = sum(counts.values())
    kinds = " ".join(f"{kind}={counts[kind]}" for kind in KINDS if counts[kind])
    print(f"{name}: leftover_lines={total} {kinds}".rstrip(), flush=True)
    for kind, lines in shown.items():
        for line in lines:
            print(f"    [{kind}] {line}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sites", nargs="*", metavar="NAME=DIR", help="a docs folder to build and scan")
    parser.add_argument("--index", action="append", default=[], help="an existing build folder to scan")
    parser.add_argument("--examples", type=int, default=0, help="chunk lines shown per kind")
    args = parser.parse_args()
    if not args.sites and not args.index:
        parser.error("give NAME=DIR or --index BUILD")
    from retrieval.boot import boot

    boot()
    overall: Counter = Counter()
    with tempfile.TemporaryDirectory(prefix="docsmcp-site-scan-") as work:
        for site in args.sites:
            name, _, folder = site.partition("=")
            print(f"building {name} from {folder} ...", file=sys.stderr, flush=True)
            path, stats, seconds = build(name, Path(folder), Path(work))
            chunks = read_chunks(path)
            print(f"{name}: pages={stats['total_files']} chunks={len(chunks)} build_seconds={seconds:.1f}", flush=True)
            overall += report(name, chunks, args.examples)
            spans, lost, shown = altered_code_spans(Path(folder), args.examples)
            print(f"{name}: code_spans={spans} code_spans_altered={lost}", flush=True)
            for line in shown:
                print(f"    [code-span] {line}")
            overall["code_spans_altered"] += lost
        for index in args.index:
            chunks = read_chunks(Path(index))
            print(f"{Path(index).name}: chunks={len(chunks)}", flush=True)
            overall += report(Path(index).name, chunks, args.examples)
    altered = overall.pop("code_spans_altered", 0)
    print(f"all: leftover_lines={sum(overall.values())} "
          + " ".join(f"{kind}={overall[kind]}" for kind in KINDS if overall[kind]) + f" code_spans_altered={altered}")


if __name__ == "__main__":
    main()
