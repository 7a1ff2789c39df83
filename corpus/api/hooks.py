"""REST router of push webhooks: POST /api/v1/hooks/git/{name}.

Anonymous but signed: the sender proves it holds the corpus's secret (corpus.webhooks.verify), so
this one route is exempt from the API's key or staff session and from its Origin and JSON-body
checks. A bad signature is 401 and changes nothing.

An unknown corpus is a 404 that says "not found" and no more: the caller is anonymous, so the
answer must not list the corpora. With MCP_AUTH_REQUIRED a bad signature is that same 404 (the
reason goes to the log), so a caller without the secret cannot even tell which names exist.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest
from ninja import Router, Status

from corpus import selectors, webhooks
from corpus.errors import CorpusNotFound
from corpus.models import Corpus

log = logging.getLogger("docsmcp.build")

router = Router(tags=["webhooks"])


@router.post("/hooks/git/{name}", auth=None, response={202: dict}, url_name="git-hook")
def git_push(request: HttpRequest, name: str):
    """A push event from GitHub, GitLab or Gitea: queue a build of every version of the corpus that
    tracks the pushed ref (a burst of pushes becomes one build of the newest commit)."""
    corpus = _signed_corpus(request, name)
    event = request.headers.get("X-GitHub-Event") or request.headers.get("X-Gitea-Event") or \
        request.headers.get("X-Gitlab-Event") or "push"
    if event.lower() in ("ping",):
        return Status(202, {"event": "ping", "queued": []})
    push = webhooks.parse_push(request.body, request.content_type or "")
    delivery = webhooks.delivery_key(request.headers)
    if webhooks.delivery_seen(corpus, delivery):
        return Status(202, webhooks.PushOutcome(push.ref, push.commit, duplicate=True).as_dict())
    if push.deleted:
        outcome = webhooks.PushOutcome(push.ref, "")
    else:
        outcome = webhooks.push_received(corpus.family, ref=push.ref, commit=push.commit,
                                         default_branch=push.default_branch)
    webhooks.delivery_done(corpus, delivery)
    return Status(202, outcome.as_dict())


def _signed_corpus(request: HttpRequest, name: str) -> Corpus:
    try:
        corpus = selectors.corpus_get(name)
    except CorpusNotFound:
        raise CorpusNotFound("not found") from None
    try:
        webhooks.verify(corpus, dict(request.headers), request.body)
    except webhooks.SignatureInvalid as exc:
        if not settings.MCP_AUTH_REQUIRED:
            raise
        log.warning("webhook for corpus %s refused: %s", corpus.name, exc)
        raise CorpusNotFound("not found") from None
    return corpus
