"""Projects (docs/contracts/citeloom-tools.md): corpora of kind "chunks", fed by store_chunks instead of built from markdown.

A project's identity is `settings["project_id"]` (e.g. `citeloom/clean-arch`, which is not a slug)
or, when unset, the corpus name; its name and aliases work too. Its embedding model is recorded in
`settings["embed_model"]` and `settings["dimensions"]` by the first write (or at creation), and
`settings["hybrid_enabled"]` (default true) allows query_hybrid. The chunks live in a LanceDB table
under `<DOCSMCP_INDEX_ROOT>/<corpus>/store/` (retrieval/chunkstore.py), shared by every worker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from retrieval import storage
from retrieval.chunkstore.store import ChunkStore, StoredChunk, as_vector
from retrieval.embeddings import get_provider
from retrieval.embeddings.base import EmbeddingProvider
from retrieval.errors import InvalidArgument

from .access import visible_only
from .errors import CorpusError, ProjectEmbeddingMismatch, ProjectNotFound
from .models import Corpus

PROJECT_ID = "project_id"
EMBED_MODEL = "embed_model"
DIMENSIONS = "dimensions"
HYBRID = "hybrid_enabled"
# Models this server can embed a query with, by (lower-cased) last segment of the project's embed_model:
# all-MiniLM-L6-v2 under any prefix (fastembed/, sentence-transformers/, local/) is the local provider.
MINILM = ("all-minilm-l6-v2", 384)



# --- reads ----------------------------------------------------------------------------------------

def project_id(corpus: Corpus) -> str:
    return str((corpus.settings or {}).get(PROJECT_ID) or corpus.name)


def project_list() -> list[Corpus]:
    return list(visible_only(Corpus.objects.filter(kind=Corpus.KIND_CHUNKS)).order_by("name"))


def project_get(project: str) -> Corpus:
    """The project whose id, name or alias is `project`; ProjectNotFound listing the ids otherwise."""
    projects = project_list()
    for matches in (lambda c: project_id(c) == project, lambda c: c.name == project,
                    lambda c: project in (c.aliases or [])):
        found = next((c for c in projects if matches(c)), None)
        if found is not None:
            return found
    raise ProjectNotFound(project, [project_id(c) for c in projects])


def project_store(corpus: Corpus) -> ChunkStore:
    return ChunkStore(storage.join(storage.as_location(settings.DOCSMCP_INDEX_ROOT), corpus.name, "store"))


def hybrid_enabled(corpus: Corpus) -> bool:
    return bool((corpus.settings or {}).get(HYBRID, True))


def project_model(corpus: Corpus) -> tuple[str | None, int | None]:
    values = corpus.settings or {}
    dims = values.get(DIMENSIONS)
    return values.get(EMBED_MODEL) or None, int(dims) if dims else None


def query_embedder(corpus: Corpus) -> EmbeddingProvider | None:
    """A local provider that embeds queries in the project's vector space, or None when the project was
    embedded with a model this server cannot run (the caller must then send `query_embedding`).

    Local MiniLM for an all-MiniLM-L6-v2 project of 384 dimensions; the hash provider for a project
    embedded as `hash/feature-hash-v1`."""
    model, dims = project_model(corpus)
    if not model or not dims:
        return None
    last = model.rsplit("/", 1)[-1].lower()
    if (last, dims) == MINILM:
        return get_provider("local")
    if model.lower() == "hash/feature-hash-v1":
        return get_provider("hash", dimensions=dims)
    return None


# --- writes ---------------------------------------------------------------------------------------

def _project_name(project: str) -> str:
    """`citeloom/clean-arch` -> `proj-citeloom-clean-arch` (the citeloom contract's collection naming)."""
    slug = re.sub(r"[^a-z0-9]+", "-", project.lower()).strip("-")
    return f"proj-{slug}"[:100]


def project_create(*, project: str, name: str | None = None, embed_model: str = "", dimensions: int | None = None,
                   hybrid: bool = True, description: str = "", aliases: list[str] | None = None) -> Corpus:
    """Register a project; its corpus is named `proj-<slug of the id>` unless `name` is given."""
    from .services import corpus_create

    if not project or not project.strip():
        raise CorpusError("a project needs an id, e.g. 'citeloom/clean-arch'")
    if any(project_id(c) == project for c in project_list()):
        raise CorpusError(f"project {project!r} already exists")
    values: dict[str, Any] = {PROJECT_ID: project, HYBRID: bool(hybrid)}
    if embed_model:
        values[EMBED_MODEL] = embed_model
    if dimensions:
        values[DIMENSIONS] = int(dimensions)
    return corpus_create(name=name or _project_name(project), kind=Corpus.KIND_CHUNKS, description=description,
                         aliases=aliases, corpus_settings=values)


@dataclass(frozen=True)
class StoreOutcome:
    written: int
    embed_model: str
    warnings: list[str] = field(default_factory=list)


def _mismatch(corpus: Corpus, model: str, dims: int, have_model: str | None, have_dims: int | None) -> None:
    raise ProjectEmbeddingMismatch(
        f"Project '{project_id(corpus)}' is embedded with {have_model} ({have_dims} dims); this batch is "
        f"{model} ({dims} dims). Embed with the project's model, or set allow_model_migration: true to "
        "switch the project to the new model (its chunks of the old model are removed).",
        {"project_id": project_id(corpus), "expected_model": have_model, "expected_dimensions": have_dims,
         "received_model": model, "received_dimensions": dims},
    )


def _chunks(corpus: Corpus, items: Sequence[Mapping[str, Any]], default_model: str | None,
            warnings: list[str]) -> list[StoredChunk]:
    """Items as stored chunks: one model and one dimension per batch, a duplicate ID keeps its last item."""
    by_id: dict[str, StoredChunk] = {}
    for n, item in enumerate(items):
        metadata = dict(item.get("metadata") or {})
        model = str(metadata.get(EMBED_MODEL) or default_model or "")
        if not model:
            raise InvalidArgument(f"items[{n}] has no embed_model: set metadata.embed_model (or the "
                                  "embed_model argument)")
        vector = as_vector(item.get("embedding"), f"items[{n}].embedding")
        pid = project_id(corpus)
        if metadata.get("project") not in (None, pid):
            warnings.append(f"items[{n}]: metadata.project {metadata['project']!r} is not {pid!r}; "
                            f"stored in {pid!r}")
        metadata["project"] = pid
        metadata.setdefault(EMBED_MODEL, model)
        if item["id"] in by_id:
            warnings.append(f"items[{n}]: chunk ID {item['id']!r} appears more than once; the last one is kept")
        by_id[item["id"]] = StoredChunk(item["id"], item.get("text") or "", vector, model, metadata)
    chunks = list(by_id.values())
    models = sorted({c.embed_model for c in chunks})
    sizes = sorted({len(c.vector) for c in chunks})
    if len(models) > 1 or len(sizes) > 1:
        raise ProjectEmbeddingMismatch(
            f"one batch must use one embedding model and dimension; got models {models}, dimensions {sizes}",
            {"project_id": project_id(corpus), "received_models": models, "received_dimensions": sizes},
        )
    return chunks


def chunks_store(*, corpus: Corpus, items: Sequence[Mapping[str, Any]], embed_model: str | None = None,
                 allow_model_migration: bool = False) -> StoreOutcome:
    """Upsert a batch into the project. The first write records the project's model and dimension;
    later writes must match them unless `allow_model_migration`."""
    warnings: list[str] = []
    have_model, have_dims = project_model(corpus)
    chunks = _chunks(corpus, items, embed_model or have_model, warnings)
    model, dims = chunks[0].embed_model, len(chunks[0].vector)
    migrate = (have_model is not None and model != have_model) or (have_dims is not None and dims != have_dims)
    if migrate and not allow_model_migration:
        _mismatch(corpus, model, dims, have_model, have_dims)
    result = project_store(corpus).upsert(chunks, dimensions=dims, migrate_to=model if migrate else None)
    if migrate:
        warnings.append(f"project migrated from {have_model} ({have_dims} dims) to {model} ({dims} dims); "
                        f"{result.removed} chunk(s) of the old model were removed: store them again")
    if (model, dims) != (have_model, have_dims):
        with transaction.atomic():
            fresh = Corpus.objects.select_for_update().get(pk=corpus.pk)
            fresh.settings = {**(fresh.settings or {}), EMBED_MODEL: model, DIMENSIONS: dims}
            fresh.save(update_fields=["settings", "updated_at"])
    return StoreOutcome(result.written, model, warnings)
