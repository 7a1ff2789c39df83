"""What the endpoint does when the database cannot be reached where it does not refuse: a feedback report is
kept under the name given, the master forks without preloading the query model; and the log says so."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from mcp_endpoint.profiles import Context


def _database_down(*args, **kwargs):
    raise OperationalError("connection refused")


@pytest.mark.parametrize(("module", "argument"), [("documents", "collection"), ("techdoc", "doc_type")])
def test_a_feedback_report_about_a_named_corpus_is_kept_unchecked_through_an_outage(monkeypatch, caplog, module,
                                                                                   argument):
    from mcp_endpoint.profiles import documents, techdoc

    profile = {"documents": documents, "techdoc": techdoc}[module]
    if module == "documents":
        monkeypatch.setattr(documents, "resolve_collection", _database_down)
        resolve = documents._feedback_collection
    else:
        monkeypatch.setattr(techdoc, "_served", _database_down)
        resolve = techdoc._feedback_doc_type
    context = Context(request=None, profile=module)
    assert resolve(context, {argument: "payments", "verdict": "wrong"}) == "payments"
    assert "feedback: database unavailable (connection refused); the report is kept under 'payments'" in caplog.text
    monkeypatch.setattr(profile, "served_corpora", _database_down)
    assert resolve(context, {"verdict": "wrong"}) is None  # the default corpus
    assert "kept under the default corpus" in caplog.text


def test_the_master_forks_without_a_preload_when_the_database_is_away_and_says_why(monkeypatch, caplog):
    from django.db import connections

    import corpus.selectors
    import corpus.warming
    from mcp_endpoint import startup

    monkeypatch.setattr(corpus.warming, "model_threads", lambda: 1)
    monkeypatch.setattr(corpus.selectors, "active_builds_embed_with", _database_down)
    monkeypatch.setattr(connections, "close_all", lambda: None)
    assert startup.preload_model() is False
    assert "query model not preloaded before the workers fork: database unavailable (connection refused)" in caplog.text
