"""Fix proposals on a git-sourced corpus: proposed against the built commit, applied as a commit on a branch.

docsmcp owns no checkout of a git source, so it never writes into one. Fixes are found in an export
of the active build's commit (the same relative paths as a directory source, so findings and
proposals read the same), and an approved fix becomes a commit on `docsmcp/fix-<id>` in the host's
bare cache repository, downloadable as a patch for `git am`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings

from retrieval.ingest import git

from .errors import FixError
from .gitsource import cache_dir, git_source, read_source
from .models import Corpus, FixProposal


def _revision(corpus: Corpus) -> str:
    build = corpus.active_build
    return ((build.stats or {}).get("source_commit") or "") if build else ""


def export_tree(corpus: Corpus) -> Path:
    """The active build's commit as files on this host (made once per commit, owned by docsmcp)."""
    revision = _revision(corpus) or read_source(corpus).revision
    target = cache_dir() / "exports" / corpus.name / revision
    if target.is_dir():
        return target
    tree = git.read_tree(git_source(corpus), cache_dir(), revision, max_file_bytes=settings.DOCSMCP_MAX_FILE_BYTES)
    files, links = tree.files, tree.links
    partial = target.with_name(revision + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for relpath, raw in files.items():
        path = partial / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
    for relpath, linked in links.items():
        if linked in files:
            path = partial / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(files[linked])
    partial.mkdir(parents=True, exist_ok=True)
    partial.rename(target)
    return target


def fix_branch(proposal: FixProposal) -> str:
    return f"docsmcp/fix-{proposal.pk}"


def commit_fix(corpus: Corpus, proposal: FixProposal) -> str:
    """Commit the proposal's new text on top of the commit it was proposed against; returns the commit."""
    base = _revision(corpus)
    if not base:
        raise FixError(f"corpus {corpus.name!r} has no built commit to apply the fix to; build it first")
    message = f"docs: {proposal.kind} in {proposal.target_path}\n\n{proposal.rationale}\n\nProposed by docsmcp " \
              f"(fix #{proposal.pk}), approved by {proposal.decided_by or 'a reviewer'}.\n"
    try:
        return git.commit_files(git_source(corpus), cache_dir(), base, fix_branch(proposal),
                                {proposal.target_path: proposal.new_content}, message)
    except git.GitError as exc:
        raise FixError(f"proposal #{proposal.pk}: committing the fix failed: {exc}") from exc


def fix_patch(proposal: FixProposal) -> str:
    """The applied fix as a patch (`git am`), from its branch in the cache repository."""
    corpus = proposal.corpus
    if not corpus.git_url or proposal.status != FixProposal.APPLIED:
        raise FixError(f"proposal #{proposal.pk} has no patch: only applied fixes of a git-sourced corpus have one")
    try:
        return git.format_patch(git_source(corpus), cache_dir(), f"refs/heads/{fix_branch(proposal)}")
    except git.GitError as exc:
        raise FixError(f"proposal #{proposal.pk}: the fix's branch is gone from this host's git cache ({exc})") \
            from exc
