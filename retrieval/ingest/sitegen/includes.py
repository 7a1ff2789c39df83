"""Includes resolved inside the corpus root: Hugo `include`, MkDocs snippets, Liquid, MyST `{include}`.

An included page is found relative to the including page's folder, then to the corpus root, and
only among the corpus's own markdown pages: nothing outside the root is read (a `../` that leaves
it resolves to nothing). Its text takes the include's one line, so every line of the including
page stays where it was: headings, list markers and fences are dropped and its lines joined, which
keeps its words for search and reads as one paragraph. An included page's own includes are not
followed. The pages a page includes are part of its key (scan.py), so editing one chunks its
includers again.

MkDocs' markdown-include (`{!docs/operator-manual/argocd-cm.yaml!}`) names any file, from the
folder of mkdocs.yml: the corpus's pages and files that are not pages (YAML, JSON, code), read by
the scan when the path lands inside the corpus root (`markdown_include_candidates`). A page is
included as above; another file's text takes the include's place as it is, line for line, inside
the code block it usually sits in.
"""

from __future__ import annotations

import posixpath
import re

from .lines import Page, split_page

REFERENCES = {
    "hugo": re.compile(r"\{\{[<%]\s*include(?:-md)?\s+(?:file=)?\"?(?P<path>[^\"\s>%]+)"),
    "mkdocs": re.compile(r"^[ \t]*-{1,2}8<-{1,2}[ \t]+\"?(?P<path>[^\"\s]+)", re.MULTILINE),
    "jekyll": re.compile(r"\{%-?\s*include(?:_relative)?\s+(?P<path>[^\s%]+)"),
    "sphinx": re.compile(r"^(?:```+|:::+)\{include\}[ \t]+(?P<path>\S+)", re.MULTILINE),
}
REFERENCES["docusaurus"] = re.compile(r"(?!)")  # MDX imports a page as a component; not resolved
FOLDERS = ("", "includes/", "_includes/", "_snippets/", "snippets/")  # where sites keep shared snippets
MAX_INCLUDED = 200_000  # characters of one included page taken into the including one
MAX_INCLUDED_FILE_BYTES = 200_000  # a larger file a markdown-include names is not read
# markdown-include's `{!path!}` alone on its line (the only way real pages write it)
MARKDOWN_INCLUDE = re.compile(r"^[ \t]*\{!(?P<path>[^!\n]+)!\}[ \t]*\r?$", re.MULTILINE)


def references(text: str, generator: str) -> list[str]:
    pattern = REFERENCES.get(generator)
    if pattern is None or ("include" not in text and "8<" not in text):
        return []
    return [m.group("path") for m in pattern.finditer(text)]


def resolve(path: str, relpath: str, pages: set[str] | dict) -> str | None:
    """The corpus page `path` names from the page `relpath`, or None (outside the root, not a page)."""
    path = path.strip().strip("'\"")
    if not path or "://" in path:
        return None
    here = posixpath.dirname(relpath)
    candidates = []
    if path.startswith("/"):
        candidates.append(path.lstrip("/"))
    else:
        candidates.append(posixpath.join(here, path))
        candidates.extend(folder + path for folder in FOLDERS)
    for candidate in candidates:
        candidate = posixpath.normpath(candidate)
        if candidate.startswith("../") or candidate == ".." or candidate.startswith("/"):
            continue
        if candidate in pages:
            return candidate
    return None


def include(page: Page, path: str, line: int, kind: str, what: str) -> str:
    """The text of the corpus page `path` names, on one line; nothing, with a finding, when it
    names none (a file outside the corpus root, or not a markdown page)."""
    target = resolve(path, page.relpath, page.included)
    if target is not None:
        return page.included[target]
    page.notice(kind, line, f"{what} of {path!r} is not resolved (not a page inside the corpus folder): its "
                "text is left out of the page's chunks", "copy the text into the page, or serve the folder that holds both")
    return ""


def markdown_include_key(path: str) -> str:
    """The key of a markdown-include's target among a page's included texts: the include as written,
    which no page path can be (the same path may name different files from different sites)."""
    return "{!" + path.strip() + "!}"


def markdown_includes(text: str) -> list[str]:
    """The paths of the markdown-includes of `text`, each once, as written."""
    if "{!" not in text:
        return []
    return list(dict.fromkeys(m.group("path").strip() for m in MARKDOWN_INCLUDE.finditer(text)))


def markdown_include_candidates(path: str, prefix: str) -> list[str]:
    """The corpus paths a markdown-include's `path` may name, most likely first; none that leaves the root.

    markdown-include reads `path` from the folder of mkdocs.yml; `prefix` is the corpus root's path
    from there (`docs` for Argo CD's docs/ beside its mkdocs.yml, "" when it is that folder), so
    `docs/x.yaml` is the root's `x.yaml`. The path is also tried from the corpus root itself (a site
    whose mkdocs.yml is not beside the folder served), unless it climbs with `..`: from the root
    it would name another file than the one the site shows. Absolute paths, URLs and hidden folders
    name nothing."""
    path = path.strip().strip("'\"")
    if not path or "://" in path or path.startswith(("/", "\\")) or "\\" in path:
        return []
    from_site = posixpath.normpath(path)
    found = []
    if not prefix:
        found.append(from_site)
    elif from_site.startswith(prefix.rstrip("/") + "/"):
        found.append(from_site[len(prefix.rstrip("/")) + 1:])
    if ".." not in path.split("/"):
        found.append(from_site)
    return [c for c in dict.fromkeys(found)
            if c not in (".", "..") and not c.startswith(("../", "/")) and not any(
                part.startswith(".") for part in c.split("/"))]


def included_pages(text: str, relpath: str, generator: str, pages: set[str] | dict) -> list[str]:
    """The corpus pages `text` includes, each once, in order."""
    found: dict[str, None] = {}
    for path in references(text, generator):
        target = resolve(path, relpath, pages)
        if target is not None and target != relpath:
            found.setdefault(target, None)
    return list(found)


FENCE_OR_MARK = re.compile(r"^[ \t]*(?:`{3,}|~{3,}|#{1,6}[ \t]|[-*+][ \t]|\d+[.)][ \t]|>[ \t]?)")


def one_line(text: str) -> str:
    """An included page's text on one line: its front matter, fences and block markers dropped."""
    page = split_page(text[:MAX_INCLUDED])
    words = []
    for line in page.lines[page.body:]:
        line = FENCE_OR_MARK.sub("", line).strip()
        if line and not set(line) <= set("`~-=*_"):
            words.append(line)
    return " ".join(words)
