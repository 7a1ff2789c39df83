"""REST router of push webhooks: POST /api/v1/hooks/git/{name}.

Anonymous but signed: the sender proves it holds the corpus's secret (corpus.webhooks.verify), so
this one route is exempt from the API's key or staff session and from its Origin and JSON-body
checks. A bad signature is 401 and changes nothing.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from corpus import selectors, webhooks

router = Router(tags=["webhooks"])


@router.post("/hooks/git/{name}", auth=None, response={202: dict}, url_name="git-hook")
def git_push(request: HttpRequest, name: str):
    """A push event from GitHub, GitLab or Gitea: queue a build of every version of the corpus that
    tracks the pushed ref (a burst of pushes becomes one build of the newest commit)."""
    corpus = selectors.corpus_get(name)
    body = request.body
    webhooks.verify(corpus, dict(request.headers), body)
    event = request.headers.get("X-GitHub-Event") or request.headers.get("X-Gitea-Event") or \
        request.headers.get("X-Gitlab-Event") or "push"
    if event.lower() in ("ping",):
        return Status(202, {"event": "ping", "queued": []})
    ref, commit, default_branch = webhooks.parse_push(body, request.content_type or "")
    outcome = webhooks.push_received(corpus.family, ref=ref, commit=commit, default_branch=default_branch)
    return Status(202, outcome.as_dict())
