"""What a corpus leaves out: defaults, a manifest's `exclude` list and `.docsmcpignore` files.

A docs folder as a team keeps it holds more than its pages: a site generator's output (`site/`,
`public/`, `_build/`), installed packages (`node_modules/`), drafts. Patterns follow .gitignore's
rules, which authors already know: `name` matches at any depth, a pattern with a `/` is relative to
the folder of the file that lists it, a trailing `/` matches folders only, `!` takes a path back,
`**` spans folders, and the last matching pattern wins. Defaults come first, so a
`.docsmcpignore` line `!build/` keeps a `build/` folder of real pages.
"""

from __future__ import annotations

from dataclasses import dataclass

from .manifest import _glob_regex

IGNORE_FILE = ".docsmcpignore"
# Installed packages anywhere; a generator's output folder at the corpus root only (a `public/`
# deeper down is more likely a section of pages).
DEFAULT_EXCLUDES = ("node_modules/", "__pycache__/", "/_build/", "/site/", "/public/", "/build/", "/_site/",
                    "/.docusaurus/", "/resources/_gen/")


@dataclass(frozen=True)
class Rule:
    pattern: str  # as written
    base: str  # folder of the file that lists it, "" for the corpus root
    negate: bool
    dir_only: bool
    anchored: bool
    body: str  # the glob without `!`, leading and trailing `/`

    def matches(self, relpath: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not relpath.startswith(self.base + "/"):
                return False
            relpath = relpath[len(self.base) + 1:]
        if self.anchored:
            return bool(_glob_regex(self.body).match(relpath))
        return bool(_glob_regex("**/" + self.body).match(relpath))


def parse_rules(lines: list[str] | str, base: str = "") -> list[Rule]:
    """Rules from .gitignore-style lines; blank lines and `#` comments are skipped."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    rules = []
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        body = line[1:] if negate else line
        if body.startswith("\\"):
            body = body[1:]
        dir_only = body.endswith("/")
        body = body.rstrip("/")
        anchored = "/" in body
        body = body.lstrip("/")
        if body:
            rules.append(Rule(line, base, negate, dir_only, anchored, body))
    return rules


DEFAULT_RULES = tuple(parse_rules(list(DEFAULT_EXCLUDES)))


class Excluder:
    """The rules met so far on a walk down the tree; a folder's own rules are added before its entries are checked."""

    def __init__(self, rules: list[Rule] | tuple[Rule, ...] = DEFAULT_RULES):
        self.rules = list(rules)
        self._folders: dict[str, bool] = {}  # folder -> excluded, it or a folder above it, under these rules

    def add(self, rules: list[Rule]) -> None:
        self.rules.extend(rules)
        self._folders.clear()

    def excluded(self, relpath: str, is_dir: bool = False) -> bool:
        verdict = False
        for rule in self.rules:
            if rule.negate == verdict and rule.matches(relpath, is_dir):
                verdict = not rule.negate
        return verdict

    def excluded_path(self, relpath: str) -> bool:
        """A file, or any folder on its way, excluded: what a walk that prunes folders would skip. Each
        folder is judged once while the rules stay the same, as a walk does: the pages of a tree read
        from git share their folders, which were otherwise judged again for every page below them."""
        folder = relpath.rpartition("/")[0]
        return (bool(folder) and self._folder_excluded(folder)) or self.excluded(relpath)

    def _folder_excluded(self, folder: str) -> bool:
        known = self._folders.get(folder)
        if known is None:
            parent = folder.rpartition("/")[0]
            known = (bool(parent) and self._folder_excluded(parent)) or self.excluded(folder, is_dir=True)
            self._folders[folder] = known
        return known
