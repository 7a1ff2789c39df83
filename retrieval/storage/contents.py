"""`contents.json`: the files of a finished build with their sizes.

Written at the end of a build, just before metadata.json, so a host copying the build into its
local cache knows exactly what to fetch and can check that it got all of it, without listing
the object store (a listing may be slow, and shows the objects of a build still being written).
"""

from __future__ import annotations

import json

from .objectstore import list_tree, read_bytes, write_bytes
from .uri import Location, join

CONTENTS_FILE = "contents.json"
_NOT_LISTED = {CONTENTS_FILE, "metadata.json"}


def write_contents(build: Location) -> dict[str, int]:
    files = {path: size for path, size in sorted(list_tree(build).items()) if path not in _NOT_LISTED}
    write_bytes(join(build, CONTENTS_FILE), json.dumps({"files": files}, indent=1).encode("utf-8"))
    return files


def read_contents(build: Location) -> dict[str, int]:
    """relative path -> size; FileNotFoundError for a build written before the list existed."""
    return {str(k): int(v) for k, v in json.loads(read_bytes(join(build, CONTENTS_FILE)))["files"].items()}
