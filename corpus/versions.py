"""Versions of a corpus, and where each one's markdown comes from (a directory or a git ref).

A corpus with several versions is one row per version: the row users name (`k8s`) and one row
per other version (`k8s@v1.26`, `version_of` pointing at the first). Each row keeps its own
builds, activation, rollback and taxonomy, so everything that works for a corpus works for a
version. The first row's `default_version` says which version its bare name serves.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.db import transaction

from retrieval.ingest.build import content_revision
from retrieval.ingest.folder import scan_corpus

from .errors import CorpusError, CorpusNotFound
from .execution import source_root
from .gitsource import check_git_fields, remote_commit
from .models import Corpus
from .selectors import family_members
from .services import check_source_dir, corpus_create

VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_version(label: str) -> str:
    if not VERSION_RE.match(label or ""):
        raise CorpusError(f"version {label!r} is not a version label: use letters, digits, '.', '_' and '-' "
                          "(e.g. v1.27 or main)")
    return label


def corpus_register(*, name: str, version: str = "", source_dir: str | None = None, git_url: str | None = None,
                    git_ref: str | None = None, git_subdir: str | None = None, make_default: bool = False,
                    any_source: bool = False) -> Corpus:
    """Find or create the row for `name` (or `name@version`) and point it at its source.

    `any_source` is the operator's command line: any directory, any git URL. A new version of an
    existing corpus becomes a row `<name>@<version>`; the corpus's first row takes the label when it
    has none yet and no other version exists.
    """
    if "@" in name:
        name, _, label = name.partition("@")
        if version and version != label:
            raise CorpusError(f"--corpus names version {label!r} but --version says {version!r}; give one")
        version = label
    if version:
        check_version(version)
    git = None
    if git_url is not None:
        git = check_git_fields(url=git_url, ref=git_ref or "", subdir=git_subdir or "", any_url=any_source)
    head = Corpus.objects.filter(name=name).first()
    with transaction.atomic():
        if head is None:
            if source_dir is None and git is None:
                raise CorpusNotFound(f"corpus {name!r} does not exist; pass --source DIR or --git URL to register it")
            corpus = corpus_create(name=name, source_dir=source_dir or "", version=version,
                                   any_root=any_source, kind=Corpus.KIND_MARKDOWN, git=git is not None)
        else:
            corpus = _version_row(head, version, creating=source_dir is not None or git is not None)
        _set_source(corpus, source_dir, git, git_ref, git_subdir, any_source)
        if make_default:
            version_set_default(corpus)
    return corpus


def _version_row(head: Corpus, version: str, *, creating: bool) -> Corpus:
    head = head.family
    if not version:
        return head
    for member in family_members(head):
        if member.version == version:
            return member
    if not head.version and not head.versions.exists() and head.active_build_id is None:
        head.version = version
        head.save(update_fields=["version", "updated_at"])
        return head
    if not head.version:
        raise CorpusError(f"corpus {head.name!r} has no version label, so a second version cannot sit beside it; "
                          f"label it first (build_index --corpus {head.name}@LABEL, or the admin)")
    if not creating:
        raise CorpusNotFound(f"corpus {head.name!r} has no version {version!r}; pass --source DIR or --git URL "
                             "(with --ref) to add it")
    return Corpus.objects.create(name=f"{head.name}@{version}", version=version, version_of=head,
                                 kind=Corpus.KIND_MARKDOWN, description=head.description,
                                 settings=dict(head.settings))


def _set_source(corpus: Corpus, source_dir: str | None, git: tuple[str, str, str] | None, git_ref: str | None,
                git_subdir: str | None, any_source: bool) -> None:
    fields = []
    if source_dir is not None:
        corpus.source_dir = str(check_source_dir(source_dir, any_root=any_source))
        corpus.git_url = corpus.git_ref = corpus.git_subdir = ""
        fields += ["source_dir", "git_url", "git_ref", "git_subdir"]
    if git is not None:
        corpus.git_url, corpus.git_ref, corpus.git_subdir = git
        corpus.source_dir = ""
        fields += ["source_dir", "git_url", "git_ref", "git_subdir"]
    elif corpus.git_url and (git_ref is not None or git_subdir is not None):
        _url, ref, subdir = check_git_fields(url=corpus.git_url, ref=git_ref if git_ref is not None else corpus.git_ref,
                                             subdir=git_subdir if git_subdir is not None else corpus.git_subdir,
                                             any_url=True)
        corpus.git_ref, corpus.git_subdir = ref, subdir
        fields += ["git_ref", "git_subdir"]
    if fields:
        corpus.save(update_fields=[*fields, "updated_at"])


def version_set_default(corpus: Corpus) -> Corpus:
    """Serve this version under the corpus's bare name."""
    head = corpus.family
    head.default_version = corpus.version if corpus.pk != head.pk else ""
    head.save(update_fields=["default_version", "updated_at"])
    from .serving import forget_active

    forget_active(head.name)
    return head


def source_revision(corpus: Corpus) -> str:
    """The revision a build would read now: the ref's newest commit, or the directory's content hash."""
    if corpus.git_url:
        return remote_commit(corpus)
    scan = scan_corpus(source_root(corpus), max_file_bytes=settings.DOCSMCP_MAX_FILE_BYTES)
    return content_revision({relpath: scan.file_key(relpath) for relpath in scan.files})


def behind(corpus: Corpus) -> list[tuple[Corpus, str]]:
    """The versions of `corpus` (all of them for its bare name, else the one named) whose source moved
    past their active build, each with the revision it is at now."""
    members = family_members(corpus) if corpus.version_of_id is None and "@" not in corpus.name else [corpus]
    out = []
    for member in members:
        if member.kind != Corpus.KIND_MARKDOWN or not (member.git_url or member.source_dir):
            continue
        revision = source_revision(member)
        if revision != member.built_revision:
            out.append((member, revision))
    return out
