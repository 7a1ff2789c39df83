"""Push webhooks from GitHub, GitLab and Gitea: verify the sender, then rebuild every version that tracks the ref.

Each corpus has its own secret, never stored: it is an HMAC of the server's SECRET_KEY over the
corpus name and a random salt kept on the corpus, so `manage.py git_hook_secret --rotate` (a new
salt) revokes the old one. A burst of pushes costs one build of the newest commit: a queued build
fetches the ref when it starts, so later pushes ride on it; a push while a build runs leaves the
corpus stale, and the running build, once done, queues exactly one follow-up (`build_followup`).

Deliveries are idempotent: a delivery ID seen before (`delivery_seen`), or a commit a build of the
version has already built or is building, queues nothing, so a replayed or redelivered push costs no
build. A signature covers the body only, so the commit check is what stops a captured body sent
again under a new delivery ID.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import parse_qs

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .errors import BuildInProgress, CorpusError, SignatureInvalid
from .gitsource import note_latest
from .models import BuildRun, Corpus, HookDelivery
from .selectors import family_members
from .services import build_start

log = logging.getLogger("docsmcp.build")

COMMIT_ID = re.compile(r"[0-9a-f]{7,64}")  # abbreviated SHA-1 up to a full SHA-256 object name
MAX_REF_LENGTH = 255  # Corpus.git_ref's length
# The delivery-ID headers of GitHub, Gitea (and Gogs), and GitLab (Idempotency-Key since 17.4; the
# event UUID before), each the same when the sender retries or an admin redelivers.
DELIVERY_HEADERS = ("X-GitHub-Delivery", "X-Gitea-Delivery", "X-Gogs-Delivery", "Idempotency-Key",
                    "X-Gitlab-Event-UUID")
KEEP_DELIVERIES = timedelta(days=30)  # GitHub redelivers up to 3 days back; a replay after this builds nothing new


@dataclass
class PushOutcome:
    """What a push did, per version: queued a build, joined one already queued, or needs none."""

    ref: str
    commit: str
    queued: list[str] = field(default_factory=list)
    coalesced: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    not_tracking: list[str] = field(default_factory=list)
    duplicate: bool = False  # the delivery was acted on before: nothing was looked at or queued

    def as_dict(self) -> dict:
        return {"ref": self.ref, "commit": self.commit, "queued": self.queued, "coalesced": self.coalesced,
                "up_to_date": self.up_to_date, "not_tracking": self.not_tracking, "duplicate": self.duplicate}


@dataclass(frozen=True)
class PushEvent:
    """A push as the sender described it; `commit` is '' when `after` was not a commit ID."""

    ref: str
    commit: str = ""
    default_branch: str = ""
    deleted: bool = False  # the ref was deleted: there is nothing to build


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


def parse_push(body: bytes, content_type: str) -> PushEvent:
    """The push event in a body of any of the three formats.

    Only the ref is required. `after` (GitLab: also `checkout_sha`) counts only when it looks like
    a commit ID; anything else is ignored, never stored, so a sender cannot mark a version stale
    with a made-up commit.
    """
    try:
        if content_type.startswith("application/x-www-form-urlencoded"):
            payload = json.loads(parse_qs(body.decode())["payload"][0])
        else:
            payload = json.loads(body)
    except (ValueError, KeyError, RecursionError):
        raise CorpusError("the webhook body is not a push event: send the JSON payload (content type "
                          "application/json)") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("ref"), str):
        raise CorpusError("the webhook body has no `ref`: only push events trigger builds")
    ref = payload["ref"]
    if not ref or len(ref) > MAX_REF_LENGTH or not ref.isprintable():
        raise CorpusError(f"the push's `ref` is not a git ref (1 to {MAX_REF_LENGTH} printable characters)")
    after = _commit_id(payload.get("after"))
    deleted = payload.get("deleted") is True or (after != "" and set(after) == {"0"})
    commit = "" if deleted else after or _commit_id(payload.get("checkout_sha"))
    repository = payload.get("repository") or payload.get("project") or {}
    default = repository.get("default_branch", "") if isinstance(repository, dict) else ""
    default = default if isinstance(default, str) and len(default) <= MAX_REF_LENGTH and default.isprintable() else ""
    return PushEvent(ref=ref, commit=commit, default_branch=default, deleted=deleted)


def _commit_id(value: object) -> str:
    return value.lower() if isinstance(value, str) and COMMIT_ID.fullmatch(value.lower()) else ""


def delivery_key(headers: Mapping[str, str]) -> str:
    """A fixed-length key for the sender's delivery ID ('' when it sent none), safe to store whatever was sent.
    `headers` must look names up case-insensitively, as Django's request.headers does."""
    for name in DELIVERY_HEADERS:
        value = (headers.get(name) or "").strip()
        if value:
            return hashlib.sha256(f"{name.lower()}\0{value}".encode("utf-8", "surrogatepass")).hexdigest()
    return ""


def delivery_seen(corpus: Corpus, key: str) -> bool:
    return bool(key) and HookDelivery.objects.filter(corpus=corpus.family, key=key).exists()


def delivery_done(corpus: Corpus, key: str) -> None:
    """Remember a delivery once it was acted on (not before: a delivery that failed, say with the task
    queue down, must build when the sender retries it), and forget those older than KEEP_DELIVERIES."""
    if not key:
        return
    HookDelivery.objects.bulk_create([HookDelivery(corpus=corpus.family, key=key)], ignore_conflicts=True)
    HookDelivery.objects.filter(received_at__lt=timezone.now() - KEEP_DELIVERIES).delete()


def _tracks(member: Corpus, ref: str, default_branch: str) -> bool:
    wanted = member.git_ref or default_branch
    return bool(member.git_url and wanted) and ref in (wanted, f"refs/heads/{wanted}", f"refs/tags/{wanted}")


def push_received(corpus: Corpus, *, ref: str, commit: str, default_branch: str = "") -> PushOutcome:
    """Queue a build of every version of `corpus` that tracks `ref` and has not built `commit` yet.

    A commit that any complete build of the version has built is not news (a replayed push, or a
    force-push back to it): it queues nothing and is not recorded as the latest.
    """
    outcome = PushOutcome(ref, commit)
    for member in family_members(corpus):
        if not _tracks(member, ref, default_branch):
            outcome.not_tracking.append(member.name)
            continue
        if commit and member.built_revision == commit:
            note_latest(member, commit, seen_at=timezone.now())
            outcome.up_to_date.append(member.name)
            continue
        if commit and _built(member, commit):
            outcome.up_to_date.append(member.name)
            continue
        if commit:
            note_latest(member, commit, seen_at=timezone.now())
        try:
            with transaction.atomic():
                build_start(corpus=member, requested_by="webhook")
            outcome.queued.append(member.name)
        except BuildInProgress:
            outcome.coalesced.append(member.name)  # a queued build fetches the newest; a running one follows up
    return outcome


def _built(member: Corpus, commit: str) -> bool:
    return member.builds.filter(status=BuildRun.COMPLETE, stats__revision=commit).exists()


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
