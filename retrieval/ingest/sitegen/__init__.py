"""Site generators: which one a docs folder is written for, and its syntax read for what it means.

Teams keep docs as their generator reads them: Hugo shortcodes, MkDocs admonitions and tabs,
Docusaurus MDX, MyST directives, Jekyll's Liquid. Indexed as text, that syntax is noise in every
chunk and hides the words it carries. `clean` rewrites a page before it is parsed and chunked:
text-carrying constructs keep their text, callouts become labelled paragraphs, tabs sub-sections,
the rest vanishes. The rewrite keeps every line where it was (lines.py), so chunk IDs, line
numbers and findings still refer to the file the author edits; a chunk's content is the cleaned
text of its source lines.

`detect` names the generator from the files a site keeps beside its pages (hugo.toml,
mkdocs.yml, docusaurus.config.js, conf.py or myst.yml, _config.yml) or, for a folder without them (a
repository's `content/` alone), from the syntax its pages use.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from . import hugo, liquid, mdx, mkdocs, myst
from .includes import (
    included_pages,
    markdown_include_candidates,
    markdown_include_key,
    markdown_includes,
    one_line,
)
from .lines import Notice, split_page

GENERATORS = ("hugo", "mkdocs", "docusaurus", "sphinx", "jekyll")
CHOICES = ("auto", "none", *GENERATORS)  # the manifest's "generator" values
CLEANER_VERSION = "2"  # part of every cleaned file's key: a change to the cleaners re-chunks the pages

__all__ = ["CHOICES", "CLEANER_VERSION", "GENERATORS", "SIGNATURES_VERSION", "Cleaned", "Detected", "Notice", "clean",
           "detect", "included_pages", "markdown_include_candidates", "markdown_include_key", "markdown_includes"]
PAGE_SUFFIXES = (".md", ".markdown", ".mdx")


@dataclass(frozen=True)
class Cleaned:
    text: str  # the same number of lines as the source, plus the lines of the files markdown-include placed
    notices: list[Notice]


@dataclass(frozen=True)
class Detected:
    name: str  # one of GENERATORS, or "" for plain markdown
    reason: str  # what gave it away, for the build's summary


def clean(text: str, generator: str, relpath: str, included: dict[str, str] | None = None) -> Cleaned:
    """The page as its generator shows it. `.mdx` pages are MDX whatever the generator. `included`
    holds the text of the corpus pages it includes (`includes.included_pages`), and under
    `markdown_include_key` the text of the files its markdown-includes name (`CorpusScan.included`)."""
    is_mdx = relpath.endswith(".mdx")
    if not generator and not is_mdx:
        return Cleaned(text, [])
    page = split_page(text)
    page.relpath = relpath
    for path, body in (included or {}).items():
        if not path.startswith("{!"):
            page.included[path] = one_line(clean(body, generator, path).text)
        elif path[2:-2].endswith(PAGE_SUFFIXES):  # a page, read as one like any included page
            page.files[path] = one_line(clean(body, generator, path[2:-2]).text)
        else:
            page.files[path] = body.replace("\r\n", "\n").rstrip("\n")
    if generator == "hugo":
        hugo.clean(page)
    elif generator == "mkdocs":
        mkdocs.clean(page)
    elif generator == "docusaurus" or is_mdx:
        mdx.clean(page, docusaurus=generator == "docusaurus")
    elif generator == "sphinx":
        myst.clean(page)
    elif generator == "jekyll":
        liquid.clean(page)
    return Cleaned(page.text, page.notices)


# Files a site keeps at its root, per generator, most specific first.
CONFIG_FILES = (
    ("hugo", ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json")),
    ("docusaurus", ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs", "docusaurus.config.cjs")),
    ("mkdocs", ("mkdocs.yml", "mkdocs.yaml")),
    ("sphinx", ("conf.py", "myst.yml", "_toc.yml")),  # Sphinx; mystmd (Jupyter Book 2); Jupyter Book 1
    ("jekyll", ("_config.yml", "_config.yaml")),
)
HUGO_LEGACY_CONFIG = ("config.toml", "config.yaml", "config.yml")  # Hugo's, when a content/ folder is beside it
# Syntax only one generator writes: the page count of each decides when no configuration file is found.
SIGNATURES = {
    "hugo": re.compile(r"\{\{[<%]\s*/?\s*[\w-]+"),
    "mkdocs": re.compile(r'^(?:!!!|\?\?\?\+?)[ \t]+\w|^===\+?[ \t]+"', re.MULTILINE),
    "docusaurus": re.compile(r"^import\s.+\sfrom\s+['\"]@(?:theme|site|docusaurus)/|^:::(?:note|tip|info|caution|"
                             r"danger|warning)\b|<TabItem\b", re.MULTILINE),
    "sphinx": re.compile(r"^(?:```+|:::+)\{[\w-]+\}|^\([\w.-]+\)=[ \t]*$", re.MULTILINE),
    "jekyll": re.compile(r"\{%-?\s*(?:include|highlight|raw|link|post_url|if|for|assign)\b"),
}
# What a page's recorded signatures (`detect`) were found with: other patterns, and they are looked for again.
SIGNATURES_VERSION = hashlib.sha256(repr([(n, p.pattern, p.flags) for n, p in SIGNATURES.items()]).encode()).hexdigest()[:16]
MIN_SIGNATURE_PAGES = 2
SAMPLE_PAGES = 500


def detect(root: Path | None, files: Mapping[str, bytes], *, names: set[str] | None = None,
           look_up: int = 2, signatures: dict[str, list[str]] | None = None) -> Detected:
    """The generator of the folder `root`, or of a tree read from elsewhere (a git commit) whose
    top-level file names are `names`.

    Configuration files are looked for in `root` and up to `look_up` folders above it (a site's
    `docs/` sits beside its mkdocs.yml); nothing there is read, only its name. Hugo's branch bundles
    (`_index.md`) name it too. Failing those, the generator whose syntax the most pages use, if
    at least MIN_SIGNATURE_PAGES do.

    `signatures`, when given, maps a sampled page to the generators whose syntax it shows: pages
    already in it are not read again (their bytes unchanged since it was filled), and the pages
    read are added to it."""
    if names is not None:
        found = _config_in_names(names)
        if found:
            return Detected(found[0], f"{found[1]} in the corpus folder")
    elif root is not None:
        folder = Path(root)
        for depth in range(look_up + 1):
            found = _config_in(folder)
            if found:
                where = "the corpus folder" if depth == 0 else f"{folder}"
                return Detected(found[0], f"{found[1]} in {where}")
            if folder.parent == folder:
                break
            folder = folder.parent
    if any(p == "_index.md" or p.endswith("/_index.md") for p in files):
        return Detected("hugo", "Hugo section pages (_index.md)")
    counts = dict.fromkeys(SIGNATURES, 0)
    paths = list(files)
    step = max(1, len(paths) // SAMPLE_PAGES)  # a large corpus is judged by an even sample of its pages
    known = signatures if signatures is not None else {}
    for relpath in paths[::step]:
        found = known.get(relpath)
        if found is None:
            head = files[relpath][:200_000].decode("utf-8", "replace")
            found = known[relpath] = [name for name, pattern in SIGNATURES.items() if pattern.search(head)]
        for name in found:
            counts[name] += 1
    best = max(counts, key=lambda n: counts[n])
    if counts[best] >= min(MIN_SIGNATURE_PAGES, len(files)) and counts[best]:
        return Detected(best, f"{counts[best]} pages written in its syntax")
    return Detected("", "")


def _config_in(folder: Path) -> tuple[str, str] | None:
    try:
        names = {entry.name for entry in folder.iterdir()}
    except OSError:
        return None
    return _config_in_names(names)


def _config_in_names(names: set[str]) -> tuple[str, str] | None:
    for generator, candidates in CONFIG_FILES:
        for name in candidates:
            if name in names:
                return generator, name
    if "content" in names:
        for name in HUGO_LEGACY_CONFIG:
            if name in names:
                return "hugo", f"{name} beside content/"
    return None


def label_for(name: str) -> str:
    return {"hugo": "Hugo", "mkdocs": "MkDocs", "docusaurus": "Docusaurus", "sphinx": "Sphinx (MyST)",
            "jekyll": "Jekyll"}.get(name, "plain markdown")

