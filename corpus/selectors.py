"""Reads of the corpus app's database. What a serving process caches of them (active-build pointers,
version lists) and the indexes it opens are corpus/serving.py's."""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet

from .access import visible, visible_only
from .errors import CorpusNotFound, NoActiveBuild, UnknownVersion
from .models import BuildRun, Corpus

# What a build reports (every page's findings, stage timings) runs to hundreds of kilobytes of JSON on a
# large corpus. Serving reads a corpus row with its active build several times a second (the pointers
# corpus/serving caches for half a second), and decoding those reports cost more CPU than the searches in
# between; they load when something reads them.
BUILD_REPORTS = ("active_build__findings", "active_build__timings")


def with_active_build(corpora: QuerySet[Corpus]) -> QuerySet[Corpus]:
    """`corpora` (a Corpus queryset) joined to each row's active build, without the build's reports."""
    return corpora.select_related("active_build").defer(*BUILD_REPORTS)


def corpus_list() -> list[Corpus]:
    """Every corpus the caller may see (corpus.access); another version of a corpus is listed as
    `<corpus>@<version>` beside it."""
    return list(visible_only(with_active_build(Corpus.objects)).order_by("name"))


def corpus_get(name: str) -> Corpus:
    """By name or alias, or `<corpus>@<version>` for one version; a corpus the caller may not see is not found.

    The row itself, never its default version: writes (update, delete, build) act on what was named.
    Reads that serve documentation go through `corpus_serving`.
    """
    corpora = visible_only(with_active_build(Corpus.objects))
    corpus = corpora.filter(name=name).first()
    if corpus is None and "@" in name:
        head_name, _, label = name.partition("@")
        head = corpus_get(head_name).family
        for member in family_members(head):
            if member.version == label:
                return member
        raise UnknownVersion(f"corpus {head.name!r} has no version {label!r}; versions: "
                             f"{describe_versions(head)}. Ask for one of these (e.g. {head.name}@<version>), "
                             "or omit the version for the default")
    if corpus is None:
        for candidate in corpora.exclude(aliases=[]):
            if name in (candidate.aliases or []):
                return candidate
        names = ", ".join(corpora.order_by("name").values_list("name", flat=True)) or "none yet"
        raise CorpusNotFound(f"corpus {name!r} not found; available: {names}")
    return corpus


def family_members(corpus: Corpus) -> list[Corpus]:
    """Every version of the corpus users name `corpus` (the row itself first), by label."""
    head = corpus.family
    members = [head, *with_active_build(head.versions).order_by("version", "pk")]
    return members


def default_version(corpus: Corpus) -> Corpus:
    """The version served under the corpus's own name: the head's default_version, else the head."""
    head = corpus.family
    if head.default_version and head.default_version != head.version:
        for member in with_active_build(head.versions):
            if member.version == head.default_version:
                return member
    return head


def served_versions(corpus: Corpus) -> list[Corpus]:
    """Versions with an active build; more than one means agents see a `version` choice."""
    return [m for m in family_members(corpus) if m.active_build_id and m.version]


def describe_versions(corpus: Corpus) -> str:
    default = default_version(corpus).version
    labels = [m.version + (" (default)" if m.version == default else "") + ("" if m.active_build_id else
                                                                            " (not built yet)")
              for m in family_members(corpus) if m.version]
    return ", ".join(labels) or "none labelled"


def corpus_serving(name: str) -> Corpus:
    """The row that answers for `name`: `<corpus>@<version>` as named, a bare corpus name its default version."""
    corpus = corpus_get(name)
    return corpus if "@" in name or corpus.version_of_id else default_version(corpus)


def version_labels(name: str | None) -> tuple[str, list[str]]:
    """(the corpus's name, its versions with an active build when there are several, else [])."""
    head = (corpus_get(name) if name else default_corpus()).family
    versions = [m.version for m in served_versions(head)]
    return head.name, versions if len(versions) > 1 else []


def default_corpus() -> Corpus:
    name = settings.DOCSMCP_DEFAULT_CORPUS
    if name:
        return corpus_get(name)
    heads = Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, version_of__isnull=True).order_by("created_at")
    corpus = with_active_build(heads).first()
    if corpus is not None and not visible(corpus.name):
        raise CorpusNotFound(f"the default corpus is outside this API key's corpora; name one of them "
                             f"(/mcp/c/<corpus>/): {', '.join(c.name for c in corpus_list()) or 'none'}")
    if corpus is None:
        raise CorpusNotFound("no corpus is registered yet; run `manage.py build_index --corpus NAME --source DIR`")
    return corpus


def active_index_path(name: str) -> str:
    """Where the active build serving `name` lies (corpus_serving); NoActiveBuild before its first build."""
    corpus = corpus_serving(name)
    build = corpus.active_build
    if build is None or not build.index_path:
        raise NoActiveBuild(f"corpus {corpus.name!r} has no active build yet; run "
                            f"`manage.py build_index --corpus {corpus.name}` first")
    return build.index_path


def active_build_pk(corpus_pk: int) -> int | None:
    """The primary key of the corpus's active build, read now (no cache): None without one."""
    return Corpus.objects.filter(pk=corpus_pk).values_list("active_build_id", flat=True).first()


def active_builds_embed_with(provider: str) -> bool:
    """Whether any markdown corpus's active build embeds its queries with `provider`."""
    return Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, active_build__embedding_provider=provider).exists()


def served_corpus_names() -> list[str]:
    """Every markdown corpus with an active build, by name: what a serving process warms."""
    return list(Corpus.objects.filter(kind=Corpus.KIND_MARKDOWN, active_build__isnull=False)
                .order_by("name").values_list("name", flat=True))


def health_summary() -> list[dict]:
    out = []
    for corpus in corpus_list():
        build = corpus.active_build
        out.append({
            "corpus": corpus.name,
            "active_build": build.build_id if build else None,
            "chunks": (build.stats or {}).get("total_chunks") if build else None,
            "activated_at": build.activated_at.isoformat() if build and build.activated_at else None,
            "index_path": build.index_path if build else None,
        })
    return out


def build_get(build_id: str) -> BuildRun:
    from .errors import BuildNotFound

    build = BuildRun.objects.filter(build_id=build_id).select_related("corpus").first()
    if build is None:
        raise BuildNotFound(f"build {build_id!r} not found")
    return build


def build_list(*, corpus: Corpus, status: str | None = None):
    """A corpus's builds, newest first, optionally of one status (a QuerySet, for pagination)."""
    builds = corpus.builds.select_related("corpus").order_by("-created_at", "-pk")
    return builds.filter(status=status) if status else builds


def corpus_build_get(*, corpus: Corpus, build_id: str) -> BuildRun:
    """A build that belongs to `corpus`; another corpus's build is reported as not found."""
    from .errors import BuildNotFound

    build = corpus.builds.filter(build_id=build_id).select_related("corpus").first()
    if build is None:
        raise BuildNotFound(f"build {build_id!r} not found in corpus {corpus.name!r}; list its builds "
                            "to find the ID")
    return build


def fix_list(*, corpus: Corpus, status: str | None = None):
    """A corpus's fix proposals, newest first, optionally of one status (a QuerySet, for pagination)."""
    from .models import FixProposal

    proposals = FixProposal.objects.filter(corpus=corpus).select_related("corpus").order_by("-created_at", "-pk")
    return proposals.filter(status=status) if status else proposals


def fix_get(*, corpus: Corpus, proposal_id: int):
    """A fix proposal of `corpus`; another corpus's proposal is reported as not found."""
    from .errors import FixNotFound
    from .models import FixProposal

    proposal = FixProposal.objects.filter(corpus=corpus, pk=proposal_id).select_related("corpus").first()
    if proposal is None:
        raise FixNotFound(f"fix proposal #{proposal_id} not found in corpus {corpus.name!r}; list its proposals "
                          "to find the ID")
    return proposal
