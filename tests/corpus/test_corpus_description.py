"""A corpus built by `manage.py build_index` describes itself to agents in words, never by its bare name."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from corpus.models import Corpus
from corpus.serving import active_index, forget_active
from mcp_endpoint.profiles import Context, docs


@pytest.fixture
def k8s_docs(tmp_path, index_root):
    source = tmp_path / "k8s"
    (source / "tasks").mkdir(parents=True)
    (source / "tasks" / "rollout.md").write_text(
        "---\ntitle: Roll out a Deployment\n---\n\n## What's next\n\nRead about scaling a Deployment.\n"
    )
    yield source
    forget_active()


def _build(source, **options) -> Corpus:
    call_command("build_index", corpus="k8s", source=str(source), embedding_provider="none", no_progress=True,
                 **options)
    forget_active()
    return Corpus.objects.get(name="k8s")


def _instructions() -> str:
    return docs.instructions(Context(request=None, profile="docs", corpus="k8s"))


def test_build_index_description_reaches_the_server_instructions(db, k8s_docs):
    corpus = _build(k8s_docs, description="Kubernetes documentation: concepts, tasks and reference")
    assert corpus.description == "Kubernetes documentation: concepts, tasks and reference"
    assert _instructions().startswith(
        "This server searches the Kubernetes documentation: concepts, tasks and reference."
    )


def test_the_root_manifest_description_is_used_when_no_flag_is_given(db, k8s_docs):
    (k8s_docs / ".docs-mcp.json").write_text('{"version": "1", "description": "Kubernetes task guides"}')
    assert _build(k8s_docs).description == "Kubernetes task guides"
    assert _instructions().startswith("This server searches the Kubernetes task guides.")


def test_without_any_description_the_server_never_reads_the_bare_name(db, k8s_docs):
    _build(k8s_docs)
    assert _instructions().startswith("This server searches the k8s documentation.")
    tools = {t.name: t for t in docs.tools(Context(request=None, profile="docs", corpus="k8s"))}
    assert tools["search_docs"].description.startswith("Search the k8s documentation.")
    index = active_index("k8s")
    assert index.metadata.corpus == "k8s"
