"""Corpora whose markdown lives in git: which URLs may be registered, and reading the tree a build needs.

A git-sourced corpus stores its URL (never a password), ref and subdirectory. A build fetches the ref
into the host's git cache (DOCSMCP_GIT_CACHE_DIR), reads the commit's tree straight from git and
records the commit as the build's revision; the diff from the previous build's commit says which
files changed.
"""

from __future__ import annotations

import logging
import posixpath
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.utils import timezone

from retrieval.allowlist import url_allowed
from retrieval.ingest import git
from retrieval.ingest.scan import CorpusScan
from retrieval.ingest.tree import scan_tree

from .errors import CorpusError, SourceDirNotAllowed
from .models import Corpus

log = logging.getLogger("docsmcp.build")


@dataclass
class SourceSnapshot:
    """The tree one build reads: the scan, the commit, and what changed since the previous build's commit."""

    scan: CorpusScan
    revision: str
    changes: list[git.GitChange] | None  # None: no previous commit to compare with


def cache_dir() -> Path:
    return settings.DOCSMCP_GIT_CACHE_DIR


def git_source(corpus: Corpus) -> git.GitSource:
    return git.GitSource(corpus.git_url, corpus.git_ref, corpus.git_subdir, ssh_key=settings.DOCSMCP_GIT_SSH_KEY)


def check_git_url(url: str, *, any_url: bool = False) -> str:
    """A URL a corpus may be built from. Passwords are refused (they would sit in the database in
    clear). `any_url` is the operator's command line; the REST API and the admin are held to
    DOCSMCP_GIT_ALLOWED_URLS, and to DOCSMCP_SOURCE_ROOTS for `file://` URLs."""
    url = (url or "").strip()
    if not url:
        raise CorpusError("git_url is required: give the repository URL, e.g. https://github.com/org/docs.git")
    if url.startswith("-") or any(c.isspace() for c in url) or "\0" in url:
        raise CorpusError(f"git_url {url[:200]!r} is not a URL git accepts")
    if git.has_password(url):
        raise CorpusError("git_url must not carry a password: it would be stored in clear. Give the URL without "
                          "it and provide credentials to git from the environment (a credential helper, "
                          "GIT_SSH_COMMAND or DOCSMCP_GIT_SSH_KEY for a deploy key)")
    if len(url) > Corpus._meta.get_field("git_url").max_length:
        raise CorpusError("git_url is too long")
    if any_url:
        return url
    if url.startswith("file://"):
        path = Path(unquote(urlsplit(url).path)).resolve()
        roots = _roots()
        if any(path.is_relative_to(root) for root in roots):
            return path.as_uri()  # stored resolved, so every read can tell it still resolves there
        raise SourceDirNotAllowed(f"git_url {url} is outside the allowed roots ({', '.join(map(str, roots)) or 'none'}); "
                                  "put the repository under one of DOCSMCP_SOURCE_ROOTS, or register it with "
                                  "`manage.py build_index --git URL`")
    allowed = settings.DOCSMCP_GIT_ALLOWED_URLS
    if url_allowed(url, allowed):
        return url
    raise SourceDirNotAllowed(f"git_url {git.redact_url(url)} is not under an allowed prefix "
                              f"({', '.join(allowed) or 'none configured'}) once `..`, `%2e` and default ports are "
                              "resolved; add one to DOCSMCP_GIT_ALLOWED_URLS, or register the corpus with "
                              "`manage.py build_index --git URL`")


def _roots() -> list[Path]:
    return [Path(r).expanduser().resolve() for r in settings.DOCSMCP_SOURCE_ROOTS]


def check_file_source(url: str) -> None:
    """Before every fetch: a `file://` repository inside DOCSMCP_SOURCE_ROOTS (as registered through
    the REST API or the admin) must still resolve inside them, so a link put in its place cannot
    lead a build elsewhere. A path outside every root was registered by the operator's command line."""
    if not url.startswith("file://"):
        return
    recorded = Path(posixpath.normpath(unquote(urlsplit(url).path)))
    roots = _roots()
    if not any(recorded.is_relative_to(root) for root in roots):
        return
    if any(recorded.resolve().is_relative_to(root) for root in roots):
        return
    log.warning("git_url %s now resolves to %s, outside DOCSMCP_SOURCE_ROOTS; refused", url, recorded.resolve())
    raise SourceDirNotAllowed(f"git_url {url} no longer resolves inside DOCSMCP_SOURCE_ROOTS (a symbolic link now "
                              "leads elsewhere), so nothing was fetched; put the repository back, or register it "
                              "with `manage.py build_index --git URL`")


def check_git_fields(*, url: str, ref: str, subdir: str, any_url: bool = False) -> tuple[str, str, str]:
    try:
        return check_git_url(url, any_url=any_url), git.check_ref(ref), git.check_subdir(subdir)
    except git.GitError as exc:
        raise CorpusError(str(exc)) from None


def read_source(corpus: Corpus, previous_revision: str = "") -> SourceSnapshot:
    """Fetch the corpus's ref and read its tree; records the commit as the latest known one."""
    source = git_source(corpus)
    check_file_source(source.url)
    started = timezone.now()
    timeout = settings.DOCSMCP_GIT_TIMEOUT
    commit = git.fetch(source, cache_dir(), timeout=timeout)
    note_latest(corpus, commit, seen_at=started)
    limit = settings.DOCSMCP_MAX_FILE_BYTES
    tree = git.read_tree(source, cache_dir(), commit, timeout=timeout, max_file_bytes=limit)
    if source.subdir and not tree.files and not tree.links and not tree.oversized:
        raise CorpusError(f"{source.describe()}: commit {commit[:12]} has no files under {source.subdir!r}; "
                          "check the subdirectory")
    changes = git.diff(source, cache_dir(), previous_revision, commit, timeout=timeout) if previous_revision else None
    scan = scan_tree(Path(f"{git.redact_url(source.url)}#{commit}"), tree.files, tree.links,
                     oversized=tree.oversized, max_file_bytes=limit, site_prefix=source.subdir)
    return SourceSnapshot(scan, commit, changes)


def note_latest(corpus: Corpus, commit: str, *, seen_at=None) -> None:
    """Record the ref's newest commit, unless a newer sighting (a push webhook) is already recorded."""
    seen_at = seen_at or timezone.now()
    rows = Corpus.objects.filter(pk=corpus.pk)
    if corpus.latest_commit_at is not None:
        rows = rows.filter(latest_commit_at__lte=seen_at)
    rows.update(latest_commit=commit, latest_commit_at=seen_at)
    corpus.refresh_from_db(fields=["latest_commit", "latest_commit_at"])


def remote_commit(corpus: Corpus) -> str:
    """The ref's newest commit on the remote (`git ls-remote`), recorded as the latest known one."""
    check_file_source(corpus.git_url)
    commit = git.remote_commit(git_source(corpus), timeout=settings.DOCSMCP_GIT_TIMEOUT)
    note_latest(corpus, commit)
    return commit


def caches_remove(urls: Iterable[str]) -> list[Path]:
    """Remove the cache repositories of `urls` that no remaining corpus builds from (versions of one
    repository share a cache); called once their corpus is deleted. Returns the directories removed."""
    in_use = {git.redact_url(url) for url in Corpus.objects.exclude(git_url="").values_list("git_url", flat=True)}
    removed = []
    for url in dict.fromkeys(urls):
        repo = git.cache_path(cache_dir(), url)
        if url and git.redact_url(url) not in in_use and repo.is_dir():
            shutil.rmtree(repo, ignore_errors=True)
            removed.append(repo)
    return removed
