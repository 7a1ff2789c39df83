"""REST routers of the corpus app: corpora and their builds (mounted at /api/v1/ by docsmcp_site.api.assembly).

Each operation parses input, calls one service or selector, and formats the answer; errors are
the services' own (`corpus.errors`), rendered by common.api.errors.
"""

from __future__ import annotations

from django.db.models import Prefetch, prefetch_related_objects
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Status

from common.api.pagination import Page, PageParams, paginate
from corpus import execution, gitsource, selectors, services
from corpus.api.auth import ADMIN, BUILD, READ, caller
from corpus.models import BuildRun, TaxonomyKey

from .schemas import (
    BuildDetailOut,
    BuildIn,
    BuildListParams,
    BuildOut,
    CorpusIn,
    CorpusOut,
    CorpusPatch,
    FindingOut,
    FindingParams,
    build_detail_out,
    build_out,
    build_url,
    corpus_out,
    findings_sorted,
    unredact,
)

router = Router(tags=["corpora"])
builds = Router(tags=["builds"])

_TAXONOMY = Prefetch("taxonomy", queryset=TaxonomyKey.objects.order_by("key"))


def _may_see_source(request: HttpRequest) -> bool:
    principal = getattr(request, "auth", None)
    return principal is not None and principal.has_scope("build")


def _corpus(name: str):
    corpus = selectors.corpus_get(name)
    prefetch_related_objects([corpus], _TAXONOMY)
    return corpus


@router.get("/corpora", response=Page[CorpusOut], auth=READ, url_name="corpora")
def list_corpora(request: HttpRequest, page: Query[PageParams]):
    """Registered corpora, by name."""
    corpora = selectors.corpus_list()
    result = paginate(corpora, page)
    prefetch_related_objects(result["items"], _TAXONOMY)
    result["items"] = [corpus_out(c, show_source=_may_see_source(request)) for c in result["items"]]
    return result


@router.post("/corpora", response={201: CorpusOut}, auth=ADMIN)
def create_corpus(request: HttpRequest, response: HttpResponse, payload: CorpusIn):
    """Register a corpus. It has no index until its first build."""
    git = gitsource.check_git_fields(url=payload.git_url, ref=payload.git_ref, subdir=payload.git_subdir) \
        if payload.git_url else None
    corpus = services.corpus_create(name=payload.name, kind=payload.kind, source_dir=payload.source_dir,
                                    description=payload.description, version=payload.version,
                                    aliases=payload.aliases, corpus_settings=payload.settings, git=git is not None)
    if git is not None:
        corpus.git_url, corpus.git_ref, corpus.git_subdir = git
        corpus.save(update_fields=["git_url", "git_ref", "git_subdir"])
    body = corpus_out(_corpus(corpus.name))
    response["Location"] = body["url"]
    return Status(201, body)


@router.get("/corpora/{name}", response=CorpusOut, auth=READ, url_name="corpus")
def get_corpus(request: HttpRequest, name: str):
    """One corpus, by name or alias."""
    return corpus_out(_corpus(name), show_source=_may_see_source(request))


@router.patch("/corpora/{name}", response=CorpusOut, auth=ADMIN)
def update_corpus(request: HttpRequest, name: str, payload: CorpusPatch):
    """Change description, version, source_dir, aliases or settings; takes effect at the next build."""
    corpus = selectors.corpus_get(name)
    new_settings = None if payload.settings is None else unredact(payload.settings, corpus.settings or {})
    corpus = services.corpus_update(corpus=corpus, description=payload.description, version=payload.version,
                                    source_dir=payload.source_dir, aliases=payload.aliases,
                                    corpus_settings=new_settings)
    if payload.git_url is not None or payload.git_ref is not None or payload.git_subdir is not None:
        corpus.git_url, corpus.git_ref, corpus.git_subdir = gitsource.check_git_fields(
            url=payload.git_url if payload.git_url is not None else corpus.git_url,
            ref=payload.git_ref if payload.git_ref is not None else corpus.git_ref,
            subdir=payload.git_subdir if payload.git_subdir is not None else corpus.git_subdir)
        corpus.save(update_fields=["git_url", "git_ref", "git_subdir", "updated_at"])
    return corpus_out(_corpus(corpus.name))


@router.delete("/corpora/{name}", response={204: None}, auth=ADMIN)
def delete_corpus(request: HttpRequest, name: str):
    """Unregister a corpus and delete its indexes; refused (409) while a build is queued or running."""
    services.corpus_delete(corpus=selectors.corpus_get(name))
    return Status(204, None)


@builds.post("/corpora/{name}/builds", response={202: BuildOut}, auth=BUILD)
def start_build(request: HttpRequest, response: HttpResponse, name: str, payload: BuildIn):
    """Queue a build; poll the returned `url` for progress. One build per corpus at a time (409)."""
    build = services.build_start(corpus=selectors.corpus_get(name), kind=payload.kind,
                                 embedding_provider=payload.embedding_provider,
                                 change_embeddings=payload.change_embeddings, requested_by=caller(request))
    build.refresh_from_db()  # a worker may already have picked it up
    response["Location"] = build_url(build)
    return Status(202, build_out(build))


@builds.get("/corpora/{name}/builds", response=Page[BuildOut], auth=READ, url_name="builds")
def list_builds(request: HttpRequest, name: str, filters: Query[BuildListParams], page: Query[PageParams]):
    """A corpus's builds, newest first."""
    corpus = selectors.corpus_get(name)
    return paginate(selectors.build_list(corpus=corpus, status=filters.status), page,
                    build_out)


@builds.get("/corpora/{name}/builds/{build_id}", response=BuildDetailOut, auth=READ, url_name="build")
def get_build(request: HttpRequest, name: str, build_id: str):
    """Status, progress and the first findings of a build."""
    corpus = selectors.corpus_get(name)
    return build_detail_out(selectors.corpus_build_get(corpus=corpus, build_id=build_id))


@builds.get("/corpora/{name}/builds/{build_id}/findings", response=Page[FindingOut], auth=READ)
def list_findings(request: HttpRequest, name: str, build_id: str, filters: Query[FindingParams],
                  page: Query[PageParams]):
    """Every validation finding of a build (errors first), with file and line."""
    build = selectors.corpus_build_get(corpus=selectors.corpus_get(name), build_id=build_id)
    return paginate(findings_sorted(build, filters.severity), page)


@builds.post("/corpora/{name}/builds/{build_id}/activate", response=BuildOut, auth=BUILD)
def activate_build(request: HttpRequest, name: str, build_id: str):
    """Serve this complete build (a rollback when it is older than the active one)."""
    build = selectors.corpus_build_get(corpus=selectors.corpus_get(name), build_id=build_id)
    return build_out(execution.build_activate(build=build))


@builds.post("/corpora/{name}/builds/{build_id}/cancel", response={200: BuildOut, 202: BuildOut}, auth=BUILD)
def cancel_build(request: HttpRequest, name: str, build_id: str):
    """Cancel a queued build (200, cancelled) or ask a running one to stop (202, it stops at its next step)."""
    build = selectors.corpus_build_get(corpus=selectors.corpus_get(name), build_id=build_id)
    build = services.build_cancel(build=build)
    return Status(202 if build.status == BuildRun.RUNNING else 200, build_out(build))
