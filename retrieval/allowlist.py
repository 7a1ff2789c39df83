"""URL allow-lists compared on what a URL names, not on how it is spelled.

A prefix check on the raw string lets `http://host/allowed/../other/repo.git` (or `%2e%2e`) through:
the client or the server resolves the dot segments afterwards and reaches a path the list never
named. So both the URL and the allow-list entry are normalised the same way first: scheme and host
lower-cased, the default port written out, percent-escapes decoded until none is left (a doubly
encoded dot cannot hide), backslashes read as slashes (some servers do), repeated slashes folded,
and `.` and `..` resolved. A path then matches an entry's path only segment by segment.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22, "git": 9418, "ftp": 21, "ftps": 990}
MAX_DECODE_ROUNDS = 4
# git's own syntax for a transport helper (`ext::cmd`, `fd::3`): not a location, never matched
TRANSPORT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
# scp-like `user@host:path` (git reads it so when a colon comes before any slash)
SCP_RE = re.compile(r"^(?:(?P<user>[^@/:]+)@)?(?P<host>\[[^\]/]+\]|[^:/]+):(?P<path>.*)$")


@dataclass(frozen=True)
class NormalURL:
    scheme: str
    host: str
    port: int | None  # the scheme's default when the URL gives none; None for a scheme without one
    path: str  # dot segments resolved; absolute ("/a/b") except for scp-like paths relative to the home
    user: str = ""
    password: bool = False

    def under(self, entry: NormalURL) -> bool:
        """Same scheme, host and port (and user, when the entry names one), and a path equal to the
        entry's or inside it: `/org/docs` is under `/org/` but `/org-evil/docs` is not under `/org`."""
        if (self.scheme, self.host, self.port) != (entry.scheme, entry.host, entry.port):
            return False
        if entry.user and self.user != entry.user:
            return False
        base = entry.path.rstrip("/")
        if not base:  # the host's root, or (scp-like) the home directory
            relative = not self.path.startswith("/") and self.path != ".." and not self.path.startswith("../")
            return self.path.startswith("/") if entry.path.startswith("/") else relative
        return self.path == base or self.path.startswith(base + "/")


def normalise_url(url: str) -> NormalURL | None:
    """The URL as an allow-list compares it, or None when it cannot be compared safely (not a URL,
    a transport helper, a percent-escape that never settles, a control character, a bad port)."""
    url = (url or "").strip()
    if not url or TRANSPORT_RE.match(url):
        return None
    if "://" in url:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return None
        if "\\" in parts.netloc:  # `http://a\\@b/`: some clients read the host as `a`, urlsplit as `b`
            return None
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").rstrip(".")
        user, password, raw_path = unquote(parts.username or ""), parts.password is not None, parts.path or "/"
    else:
        match = SCP_RE.match(url)
        if match is None:
            return None
        scheme, port, password = "ssh", None, False
        host = match["host"].strip("[]").lower().rstrip(".")
        user, raw_path = match["user"] or "", match["path"]
    if not scheme or "%" in host or any(ord(c) < 0x21 for c in host):
        return None
    path = _normal_path(raw_path)
    if path is None:
        return None
    return NormalURL(scheme, host, port if port is not None else DEFAULT_PORTS.get(scheme), path, user, password)


def _normal_path(raw: str) -> str | None:
    path = raw
    for _ in range(MAX_DECODE_ROUNDS):
        decoded = unquote(path, errors="surrogateescape")
        if decoded == path:
            break
        path = decoded
    else:
        return None
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return None
    path = re.sub(r"/{2,}", "/", path.replace("\\", "/"))
    if not path:
        return ""
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = normal[1:]
    return "" if normal == "." else normal


def url_allowed(url: str, entries: list[str]) -> bool:
    """Whether `url` lies under one of the allow-list `entries` (entries that are no URL match nothing)."""
    target = normalise_url(url)
    if target is None:
        return False
    return any(entry is not None and target.under(entry) for entry in map(normalise_url, entries))
