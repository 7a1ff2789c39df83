"""Push webhooks from GitHub, GitLab and Gitea: verify the sender, then rebuild every version that tracks the ref.

Each corpus has its own secret, never stored: it is an HMAC of the server's SECRET_KEY over the
corpus name and a random salt kept on the corpus, so `manage.py git_hook_secret --rotate` (a new
salt) revokes the old one. A burst of pushes costs one build of the newest commit: a queued build
fetches the ref when it starts, so later pushes ride on it; a push while a build runs leaves the
corpus stale, and the running build, once done, queues exactly one follow-up (`build_followup`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .errors import BuildInProgress, CorpusError
from .gitsource import note_latest
from .models import BuildRun, Corpus
from .selectors import family_members
from .services import build_start

log = logging.getLogger("docsmcp.build")


class SignatureInvalid(CorpusError):
    status = 401


@dataclass
class PushOutcome:
    """What a push did, per version: queued a build, joined one already queued, or needs none."""

    ref: str
    commit: str
    queued: list[str] = field(default_factory=list)
    coalesced: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    not_tracking: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"ref": self.ref, "commit": self.commit, "queued": self.queued, "coalesced": self.coalesced,
                "up_to_date": self.up_to_date, "not_tracking": self.not_tracking}


def hook_secret(corpus: Corpus, *, rotate: bool = False) -> str:
    """The corpus's webhook secret; a salt is made on first use, and anew when rotating."""
    head = Corpus.objects.get(pk=corpus.family.pk)
    if rotate or not head.hook_salt:
        head.hook_salt = secrets.token_hex(16)
        head.save(update_fields=["hook_salt", "updated_at"])
    return _derive(head)


def _derive(head: Corpus) -> str:
    message = f"docsmcp-git-hook-v1\0{head.name}\0{head.hook_salt}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()


def verify(corpus: Corpus, headers: dict[str, str], body: bytes) -> None:
    """GitHub's X-Hub-Signature-256 (`sha256=<hex HMAC>`), Gitea's X-Gitea-Signature (hex HMAC) or
    GitLab's X-Gitlab-Token (the secret itself), all compared in constant time."""
    head = corpus.family
    if not head.hook_salt:
        raise SignatureInvalid(f"corpus {head.name!r} has no webhook secret yet; run "
                               f"`manage.py git_hook_secret --corpus {head.name}` and configure the webhook with it")
    secret = _derive(head)
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    github = headers.get("X-Hub-Signature-256", "")
    gitea = headers.get("X-Gitea-Signature", "") or headers.get("X-Gogs-Signature", "")
    gitlab = headers.get("X-Gitlab-Token", "")
    if github and hmac.compare_digest(github.strip(), f"sha256={expected}"):
        return
    if gitea and hmac.compare_digest(gitea.strip(), expected):
        return
    if gitlab and hmac.compare_digest(gitlab.strip(), secret):
        return
    raise SignatureInvalid("webhook signature missing or invalid: send X-Hub-Signature-256 (GitHub), "
                           "X-Gitea-Signature (Gitea) or X-Gitlab-Token (GitLab) made with this corpus's secret")


def parse_push(body: bytes, content_type: str) -> tuple[str, str, str]:
    """(ref, new commit, the repository's default branch or '') of a push event, in any of the three formats."""
    try:
        if content_type.startswith("application/x-www-form-urlencoded"):
            payload = json.loads(parse_qs(body.decode())["payload"][0])
        else:
            payload = json.loads(body)
    except (ValueError, KeyError, UnicodeDecodeError):
        raise CorpusError("the webhook body is not a push event: send the JSON payload (content type "
                          "application/json)") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("ref"), str):
        raise CorpusError("the webhook body has no `ref`: only push events trigger builds")
    after = payload.get("after") or payload.get("checkout_sha") or ""
    repository = payload.get("repository") or payload.get("project") or {}
    default = repository.get("default_branch", "") if isinstance(repository, dict) else ""
    return payload["ref"], str(after), str(default or "")


def _tracks(member: Corpus, ref: str, default_branch: str) -> bool:
    wanted = member.git_ref or default_branch
    return bool(member.git_url and wanted) and ref in (wanted, f"refs/heads/{wanted}", f"refs/tags/{wanted}")


def push_received(corpus: Corpus, *, ref: str, commit: str, default_branch: str = "") -> PushOutcome:
    """Queue a build of every version of `corpus` that tracks `ref` and is behind `commit`."""
    outcome = PushOutcome(ref, commit)
    for member in family_members(corpus):
        if not _tracks(member, ref, default_branch):
            outcome.not_tracking.append(member.name)
            continue
        if commit:
            note_latest(member, commit, seen_at=timezone.now())
        if commit and member.built_revision == commit:
            outcome.up_to_date.append(member.name)
            continue
        try:
            with transaction.atomic():
                build_start(corpus=member, requested_by="webhook")
            outcome.queued.append(member.name)
        except BuildInProgress:
            outcome.coalesced.append(member.name)  # a queued build fetches the newest; a running one follows up
    return outcome


def build_followup(build: BuildRun) -> BuildRun | None:
    """After a build: when a push arrived while it ran (the ref moved past what it built), queue one more."""
    build.refresh_from_db()
    corpus = Corpus.objects.get(pk=build.corpus_id)
    if build.status != BuildRun.COMPLETE or not corpus.git_url or not corpus.latest_commit:
        return None
    if corpus.latest_commit == (build.stats or {}).get("revision"):
        return None
    if corpus.latest_commit_at is None or build.started_at is None or corpus.latest_commit_at < build.started_at:
        return None
    if corpus.builds.filter(created_at__gt=build.created_at).exists():
        return None  # a later build (this follow-up, or another request) already covers the push
    try:
        return build_start(corpus=corpus, requested_by="webhook (follow-up)")
    except BuildInProgress:
        return None
    except CorpusError as exc:
        log.warning("corpus %s: could not queue the follow-up build: %s", corpus.name, exc)
        return None
