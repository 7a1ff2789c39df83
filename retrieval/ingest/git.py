"""Corpus sources in git: fetch into a bare cache repository and read a commit's tree without a work tree.

The `git` command line does the work, so docsmcp needs no git library and speaks every URL git
speaks (`file://`, SSH with a deploy key through `GIT_SSH_COMMAND`, HTTPS with credentials from the
environment or a credential helper set there). One bare repository per URL lives under the cache
directory on the building host's own disk; the index root may be object storage and never holds a
repository.

Every git process runs with a timeout, without a terminal prompt and with the user's and system's
git configuration files ignored (GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM point at /dev/null), so a
build never hangs on a password prompt or a slow remote, and a developer's `~/.gitconfig` (an
`insteadOf`, `protocol.ext.allow=always`) never decides what a build fetches or runs. Configuration
the operator sets on purpose comes from the environment (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_0, ...);
the `ext::` transport stays off even there.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import posixpath
import re
import shlex
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from retrieval.errors import GitError

DEFAULT_TIMEOUT = 120.0
FETCH_DEPTH = 50  # enough history that the last built commit is usually still there to diff against
MODE_LINK = "120000"
MODE_SUBMODULE = "160000"
# after every configuration file and GIT_CONFIG_COUNT: no URL runs a command through a transport helper
NO_HELPERS = ("-c", "protocol.ext.allow=never")
SHA_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class GitSource:
    url: str
    ref: str = ""  # branch or tag; "" is the remote's default branch (HEAD)
    subdir: str = ""  # the corpus root inside the repository, "" for the whole tree
    # A private key file git's ssh uses for this remote (the operator's DOCSMCP_GIT_SSH_KEY), unless
    # the process environment gives GIT_SSH_COMMAND: git's own variables stay git's.
    ssh_key: str = field(default="", compare=False)

    def describe(self) -> str:
        where = f" {self.subdir}/" if self.subdir else ""
        return f"{redact_url(self.url)} {self.ref or 'HEAD'}{where}"


@dataclass(frozen=True)
class GitChange:
    status: str  # git's letter: A(dded), M(odified), D(eleted), R(enamed), T(ype changed)
    path: str  # relative to the source's subdirectory


def redact_url(url: str) -> str:
    """The URL without a password, for messages and the database."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


def has_password(url: str) -> bool:
    return urlsplit(url).password is not None if "://" in url else False


def check_ref(ref: str) -> str:
    """A branch, tag or commit name git accepts; anything that could read as an option is refused."""
    ref = (ref or "").strip()
    if ref.startswith("-") or any(c in ref for c in " ~^:?*[\\\0") or ".." in ref:
        raise GitError(f"ref {ref[:100]!r} is not a valid branch or tag name")
    return ref


def check_subdir(subdir: str) -> str:
    """A relative path inside the repository, normalised ('' for the root)."""
    subdir = (subdir or "").strip().strip("/")
    if not subdir:
        return ""
    normal = posixpath.normpath(subdir)
    if normal.startswith("..") or normal.startswith("/") or "\0" in normal:
        raise GitError(f"subdir {subdir[:200]!r} must be a relative path inside the repository")
    return "" if normal == "." else normal


def cache_path(cache_dir: Path, url: str) -> Path:
    """One bare repository per URL (password stripped, so rotating a credential keeps the cache)."""
    digest = hashlib.sha256(redact_url(url).encode()).hexdigest()[:24]
    return Path(cache_dir) / f"{digest}.git"


def _env(extra: dict[str, str] | None = None, ssh_key: str = "") -> dict[str, str]:
    env = dict(os.environ)  # the git process's own: PATH, HOME, proxies, GIT_CONFIG_COUNT, GIT_SSH_COMMAND
    env.update(extra or {})
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_SYSTEM": os.devnull,
                "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ASKPASS": "", "LC_ALL": "C"})
    if ssh_key and "GIT_SSH_COMMAND" not in env:
        env["GIT_SSH_COMMAND"] = f"ssh -i {shlex.quote(ssh_key)} -o IdentitiesOnly=yes -o BatchMode=yes"
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    return env


def _git(args: list[str], *, cwd: Path | None = None, timeout: float = DEFAULT_TIMEOUT,
         stdin: bytes | None = None, what: str = "", env: dict[str, str] | None = None, ssh_key: str = "") -> bytes:
    try:
        done = subprocess.run(["git", *NO_HELPERS, *args], cwd=cwd, input=stdin, capture_output=True, timeout=timeout,
                              env=_env(env, ssh_key), check=False)
    except FileNotFoundError:
        raise GitError("the `git` program is not installed on this host; install git to build git sources") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {what or args[0]} took longer than {timeout:.0f}s and was stopped; check the "
                       "remote is reachable, or raise DOCSMCP_GIT_TIMEOUT") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = " ".join(message[-3:])[:500] or f"exit status {done.returncode}"
        raise GitError(f"git {what or args[0]} failed: {tail}")
    return done.stdout


def fetch(source: GitSource, cache_dir: Path, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Fetch the source's ref into its bare cache repository; returns the commit it points at.

    Shallow (the last FETCH_DEPTH commits): a build needs the newest tree, and a diff against the
    previous build only when that commit is still there.
    """
    repo = cache_path(cache_dir, source.url)
    if not (repo / "HEAD").exists():
        repo.parent.mkdir(parents=True, exist_ok=True)
        _git(["init", "--bare", "--quiet", str(repo)], timeout=timeout, what="init")
    ref = check_ref(source.ref) or "HEAD"
    target = f"refs/docsmcp/{hashlib.sha256(ref.encode()).hexdigest()[:16]}"
    depth = [f"--depth={FETCH_DEPTH}"] if source.url.startswith(("file://", "http://", "https://", "ssh://", "git@")) \
        else []
    with _locked(repo):  # two versions of one repository built at once must not race on its shallow file
        _git(["fetch", "--quiet", "--no-tags", "--force", *depth, "--", source.url, f"+{ref}:{target}"],
             cwd=repo, timeout=timeout, what=f"fetch of {source.describe()}", ssh_key=source.ssh_key)
        return _git(["rev-parse", "--verify", f"{target}^{{commit}}"], cwd=repo, timeout=timeout,
                    what="rev-parse").decode().strip()


@contextmanager
def _locked(repo: Path) -> Iterator[None]:
    with open(repo / "docsmcp.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remote_commit(source: GitSource, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The commit the remote's ref points at now, without fetching anything (`git ls-remote`)."""
    ref = check_ref(source.ref) or "HEAD"
    out = _git(["ls-remote", "--", source.url, ref], timeout=timeout, what=f"ls-remote of {source.describe()}",
               ssh_key=source.ssh_key)
    lines = [line.split("\t") for line in out.decode().splitlines() if "\t" in line]
    if not lines:
        raise GitError(f"the remote has no ref {ref!r} ({redact_url(source.url)}); check the branch or tag name")
    exact = [sha for sha, name in lines if name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}")]
    return (exact or [lines[0][0]])[-1]


@dataclass(frozen=True)
class GitTree:
    files: dict[str, bytes]  # relpath -> bytes
    links: dict[str, str]  # link relpath -> target relpath ("" when it points outside the tree)
    oversized: dict[str, int]  # relpath -> size of a blob left unread because it is over the limit


def read_tree(source: GitSource, cache_dir: Path, commit: str, *, timeout: float = DEFAULT_TIMEOUT,
              max_file_bytes: int | None = None) -> GitTree:
    """Files under the source's subdirectory at `commit`.

    Blobs are read with one `git cat-file --batch`, nothing is checked out; a blob over
    `max_file_bytes` is never read (its size comes from `ls-tree -l`). A symbolic link is given as
    its target's path (resolved inside the tree, or "" when it points outside it); submodules are
    skipped.
    """
    repo = cache_path(cache_dir, source.url)
    prefix = f"{source.subdir}/" if source.subdir else ""
    listing = _git(["ls-tree", "-r", "-z", "-l", "--full-tree", commit, "--",
                    *([source.subdir] if source.subdir else [])], cwd=repo, timeout=timeout, what="ls-tree")
    blobs: list[tuple[str, str]] = []
    links: dict[str, str] = {}
    link_shas: dict[str, str] = {}
    oversized: dict[str, int] = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha, size = meta.decode().split()
        relpath = path.decode("utf-8", "surrogateescape")
        if kind != "blob" or mode == MODE_SUBMODULE or not relpath.startswith(prefix):
            continue
        relpath = relpath[len(prefix):]
        if mode == MODE_LINK:
            link_shas[relpath] = sha
        elif max_file_bytes is not None and int(size) > max_file_bytes:
            oversized[relpath] = int(size)
        else:
            blobs.append((relpath, sha))
    contents = _cat_blobs(repo, [sha for _, sha in blobs] + list(link_shas.values()), timeout)
    files = {relpath: contents[sha] for relpath, sha in blobs}
    for relpath, sha in link_shas.items():
        target = posixpath.normpath(posixpath.join(posixpath.dirname(relpath),
                                                   contents[sha].decode("utf-8", "replace")))
        links[relpath] = "" if target.startswith("..") or target.startswith("/") else target
    return GitTree(files, links, oversized)


# The blobs of the trees last read, by repository and SHA, so that the build after a push asks git for
# the pages the push changed and takes the others from here. A SHA names its content: a hit is always
# right, whatever happened to the repository since. One tree per repository, the least recently read
# repositories dropped past BLOB_CACHE_BYTES in all.
BLOB_CACHE_BYTES = 64 * 1024 * 1024
_blobs: dict[Path, dict[str, bytes]] = {}
_blobs_lock = threading.Lock()


def _cat_blobs(repo: Path, shas: list[str], timeout: float) -> dict[str, bytes]:
    if not shas:
        return {}
    unique = list(dict.fromkeys(shas))
    with _blobs_lock:
        known = _blobs.pop(repo, {})
    contents = {sha: known[sha] for sha in unique if sha in known}
    missing = [sha for sha in unique if sha not in contents]
    if missing:
        contents.update(_read_blobs(repo, missing, timeout))
    with _blobs_lock:
        _blobs[repo] = contents  # the newest last
        total = sum(len(data) for tree in _blobs.values() for data in tree.values())
        while _blobs and total > BLOB_CACHE_BYTES:
            oldest = next(iter(_blobs))
            total -= sum(len(data) for data in _blobs.pop(oldest).values())
    return contents


def _read_blobs(repo: Path, unique: list[str], timeout: float) -> dict[str, bytes]:
    out = _git(["cat-file", "--batch"], cwd=repo, stdin="".join(f"{s}\n" for s in unique).encode(), timeout=timeout,
               what="cat-file")
    contents: dict[str, bytes] = {}
    pos = 0
    for sha in unique:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode().split()
        if len(header) < 3 or header[1] == "missing":
            raise GitError(f"object {sha} is missing from the cache repository; run the build again")
        size = int(header[2])
        contents[sha] = out[end + 1: end + 1 + size]
        pos = end + 1 + size + 1
    return contents


def diff(source: GitSource, cache_dir: Path, old: str, new: str, *,
         timeout: float = DEFAULT_TIMEOUT) -> list[GitChange] | None:
    """Files changed under the subdirectory between two commits, or None when `old` is no longer
    in the cache (a shallow fetch dropped it, or the cache was cleared): then every file counts."""
    repo = cache_path(cache_dir, source.url)
    if not SHA_RE.match(old or ""):
        return None
    try:
        _git(["cat-file", "-e", f"{old}^{{commit}}"], cwd=repo, timeout=timeout, what="cat-file")
    except GitError:
        return None
    out = _git(["diff", "--name-status", "-z", "--no-renames", old, new, "--",
                *([source.subdir] if source.subdir else [])], cwd=repo, timeout=timeout, what="diff")
    fields = [f.decode("utf-8", "surrogateescape") for f in out.split(b"\0") if f]
    prefix = f"{source.subdir}/" if source.subdir else ""
    return [GitChange(status, path[len(prefix):]) for status, path in zip(fields[::2], fields[1::2], strict=False)]


def commit_files(source: GitSource, cache_dir: Path, base: str, branch: str, changes: dict[str, str],
                 message: str, *, author: str = "docsmcp <docsmcp@localhost>",
                 timeout: float = DEFAULT_TIMEOUT) -> str:
    """Commit `changes` (relpath under the subdirectory -> new text) on top of `base`, on `branch` of
    the cache repository; returns the new commit. No work tree: blobs and trees are written with
    `hash-object` and a temporary index file."""
    repo = cache_path(cache_dir, source.url)
    branch = check_ref(branch)
    index_file = repo / f"docsmcp-index-{os.getpid()}-{threading.get_ident()}"
    name, _, email = author.partition(" <")
    env = {"GIT_INDEX_FILE": str(index_file), "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"),
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">")}
    try:
        _git(["read-tree", base], cwd=repo, timeout=timeout, what="read-tree", env=env)
        for relpath, text in changes.items():
            path = posixpath.join(source.subdir, relpath) if source.subdir else relpath
            sha = _git(["hash-object", "-w", "--stdin"], cwd=repo, stdin=text.encode(), timeout=timeout,
                       what="hash-object", env=env).decode().strip()
            _git(["update-index", "--add", "--cacheinfo", f"100644,{sha},{path}"], cwd=repo, timeout=timeout,
                 what="update-index", env=env)
        tree = _git(["write-tree"], cwd=repo, timeout=timeout, what="write-tree", env=env).decode().strip()
        commit = _git(["commit-tree", tree, "-p", base, "-F", "-"], cwd=repo, stdin=message.encode(),
                      timeout=timeout, what="commit-tree", env=env).decode().strip()
        _git(["update-ref", f"refs/heads/{branch}", commit], cwd=repo, timeout=timeout, what="update-ref", env=env)
        return commit
    finally:
        index_file.unlink(missing_ok=True)


def format_patch(source: GitSource, cache_dir: Path, commit: str, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The commit as a patch `git am` applies (what a reviewer downloads)."""
    repo = cache_path(cache_dir, source.url)
    return _git(["format-patch", "-1", "--stdout", commit], cwd=repo, timeout=timeout,
                what="format-patch").decode("utf-8", "replace")
