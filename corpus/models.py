from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q


class Corpus(models.Model):
    """A documentation set: the documents tool contract's collection, the techdoc contract's doc_type, the citeloom contract's project."""

    KIND_MARKDOWN = "markdown"
    KIND_CHUNKS = "chunks"
    KIND_CHOICES = [(KIND_MARKDOWN, "Markdown directory"), (KIND_CHUNKS, "Stored chunks (store_chunks)")]

    name = models.CharField(max_length=100, unique=True, validators=[
        RegexValidator(r"^[a-z0-9][a-z0-9_-]{0,99}(@[A-Za-z0-9][A-Za-z0-9._-]{0,63})?$",
                       "a slug (lowercase letters, digits, '-', '_'), or <corpus>@<version> for a version")])
    kind = models.CharField(max_length=20, choices=KIND_CHOICES, default=KIND_MARKDOWN)
    source_dir = models.CharField(max_length=1000, blank=True)
    description = models.TextField(blank=True)
    version = models.CharField(max_length=100, blank=True)
    aliases = models.JSONField(default=list, blank=True, help_text="Other names clients may use for this corpus (e.g. a collection name).")
    settings = models.JSONField(default=dict, blank=True,
                                help_text='e.g. {"embedding_provider": "local", "keep_builds": 3}')
    active_build = models.ForeignKey("BuildRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    version_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="versions",
                                   help_text="The corpus this row is another version of (named <corpus>@<version>).")
    default_version = models.CharField(max_length=100, blank=True,
                                       help_text="The version served under the corpus's own name; empty: this row's.")
    git_url = models.CharField(max_length=1000, blank=True, help_text="Git repository the markdown comes from "
                               "(no password: credentials come from the environment or a deploy key).")
    git_ref = models.CharField(max_length=255, blank=True, help_text="Branch or tag; empty: the remote's HEAD.")
    git_subdir = models.CharField(max_length=1000, blank=True, help_text="The corpus root inside the repository.")
    latest_commit = models.CharField(max_length=64, blank=True,
                                     help_text="The ref's newest commit, as last seen by a fetch or a push webhook.")
    latest_commit_at = models.DateTimeField(null=True, blank=True)
    hook_salt = models.CharField(max_length=64, blank=True, help_text="Salt of the push webhook's secret; "
                                 "the secret itself is derived from the server's secret and never stored.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.name

    @property
    def family(self) -> Corpus:
        """The row users name: itself, or the corpus this row is a version of."""
        return self.version_of if self.version_of_id else self

    @property
    def built_revision(self) -> str:
        build = self.active_build
        return ((build.stats or {}).get("revision") or "") if build else ""

    @property
    def is_stale(self) -> bool:
        """A git source whose ref moved past the active build's commit."""
        return bool(self.git_url and self.latest_commit and self.latest_commit != self.built_revision)


class TaxonomyKey(models.Model):
    """Taxonomy keys and values found by the corpus's last activated build."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="taxonomy")
    key = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    values = models.JSONField(default=list)
    vector_collapse = models.BooleanField(default=False)

    class Meta:
        ordering = ["corpus", "key"]
        constraints = [models.UniqueConstraint(fields=["corpus", "key"], name="unique_taxonomy_key")]

    def __str__(self) -> str:
        return f"{self.corpus.name}:{self.key}"


class BuildRun(models.Model):
    KIND_VALIDATE, KIND_INCREMENTAL, KIND_FULL = "validate", "incremental", "full"
    KIND_CHOICES = [(KIND_VALIDATE, "Validate only"), (KIND_INCREMENTAL, "Incremental"), (KIND_FULL, "Full")]
    QUEUED, RUNNING, COMPLETE, FAILED, CANCELLED = "queued", "running", "complete", "failed", "cancelled"
    STATUS_CHOICES = [(s, s.capitalize()) for s in (QUEUED, RUNNING, COMPLETE, FAILED, CANCELLED)]
    IN_FLIGHT = (QUEUED, RUNNING)

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="builds")
    build_id = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=20, choices=KIND_CHOICES, default=KIND_INCREMENTAL)
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=QUEUED, db_index=True)
    embedding_provider = models.CharField(max_length=40, blank=True)
    embedding = models.JSONField(null=True, blank=True)
    stage = models.CharField(max_length=40, blank=True)
    progress_done = models.IntegerField(default=0)
    progress_total = models.IntegerField(default=0)
    stats = models.JSONField(default=dict, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    findings = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    index_path = models.CharField(max_length=1000, blank=True)
    cancel_requested = models.BooleanField(default=False)
    requested_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["corpus"], condition=Q(status__in=["queued", "running"]),
                                    name="one_build_in_flight_per_corpus"),
        ]

    def __str__(self) -> str:
        return f"{self.corpus.name}@{self.build_id}"

    @property
    def is_active(self) -> bool:
        return self.corpus.active_build_id == self.pk

    @property
    def progress_percent(self) -> int:
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0

    @property
    def error_count(self) -> int:
        return sum(1 for f in self.findings if f.get("severity") == "error")

    @property
    def warning_count(self) -> int:
        return sum(1 for f in self.findings if f.get("severity") == "warning")


class FixProposal(models.Model):
    """One reviewed change to a corpus file: a manifest, a file's front matter or an inline hint.

    Applied only when the target still has the content it had when proposed (`base_hash`);
    otherwise it goes stale and nothing is written.
    """

    PENDING, APPROVED, REJECTED, APPLIED, STALE = "pending", "approved", "rejected", "applied", "stale"
    STATUS_CHOICES = [(s, s.capitalize()) for s in (PENDING, APPROVED, REJECTED, APPLIED, STALE)]
    OPEN = (PENDING, APPROVED)
    SOURCE_HEURISTIC = "heuristic"
    ABSENT_HASH = ""  # base_hash when the target did not exist (bootstrapping a manifest)

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="fix_proposals")
    file = models.CharField(max_length=1000, help_text="The file the fix is about, relative to the corpus root.")
    kind = models.CharField(max_length=40, db_index=True)
    rationale = models.TextField()
    diff = models.TextField(help_text="Unified diff of target_path.")
    target_path = models.CharField(max_length=1000, help_text="The file written on approval, relative to the root.")
    old_content = models.TextField(blank=True, help_text="The target's text when proposed (empty if it did not exist).")
    new_content = models.TextField(help_text="The target's full new text.")
    base_hash = models.CharField(max_length=64, blank=True,
                                 help_text="sha256 of the target when proposed; empty: it did not exist.")
    source = models.CharField(max_length=100, default=SOURCE_HEURISTIC, db_index=True,
                              help_text='"heuristic" or the LLM model name.')
    finding = models.JSONField(null=True, blank=True, help_text="The validate finding that motivated the fix.")
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=PENDING, db_index=True)
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True, help_text="Reject reason, or why the proposal went stale.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["corpus", "status"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} {self.file}"

    @property
    def target_existed(self) -> bool:
        return self.base_hash != self.ABSENT_HASH


class FixDecision(models.Model):
    """History of a proposal: every approve, reject, apply and staleness, with who and when."""

    APPROVE, REJECT, STALE, REFUSE = "approve", "reject", "stale", "refuse"
    ACTION_CHOICES = [(APPROVE, "Approved"), (REJECT, "Rejected"), (STALE, "Went stale"), (REFUSE, "Refused")]

    proposal = models.ForeignKey(FixProposal, on_delete=models.CASCADE, related_name="decisions")
    action = models.CharField(max_length=20, choices=ACTION_CHOICES)
    status_after = models.CharField(max_length=20)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    username = models.CharField(max_length=150, help_text='Kept when the user is deleted; "system" when automatic.')
    note = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.username} {self.action} #{self.proposal_id}"


class QueryRecord(models.Model):
    """One agent call of a search or read tool, written in batches off the request path (corpus/querylog.py).

    Corpora are named, not referenced: a record outlives neither retention nor a deleted corpus's
    purge, but writing it never needs a lookup, so a search never waits on the database for it.
    """

    SURFACE_HTTP = "http"
    SURFACE_STDIO = "stdio"
    SURFACE_REST = "rest"
    SURFACE_EVAL = "eval"
    SURFACE_CHOICES = [(SURFACE_HTTP, "MCP over HTTP"), (SURFACE_STDIO, "MCP over stdio"),
                       (SURFACE_REST, "REST API"), (SURFACE_EVAL, "Eval run")]

    at = models.DateTimeField(db_index=True)
    corpus = models.CharField(max_length=100, help_text="The corpus as served: its name, without the version.")
    version = models.CharField(max_length=100, blank=True)
    build_id = models.CharField(max_length=64, blank=True)
    profile = models.CharField(max_length=40, blank=True)
    tool = models.CharField(max_length=64)
    surface = models.CharField(max_length=10, choices=SURFACE_CHOICES, default=SURFACE_HTTP)
    query = models.TextField(blank=True, help_text="Empty when DOCSMCP_QUERY_LOG=no-text, and for reads.")
    filters = models.JSONField(default=dict, blank=True)
    target = models.CharField(max_length=1000, blank=True, help_text="What a read tool opened: a chunk ID or a path.")
    hits = models.IntegerField(default=0, help_text="Hits returned (reads: 1 when found).")
    top = models.JSONField(default=list, blank=True, help_text="The first hits as [id, score] pairs.")
    top_score = models.FloatField(null=True, blank=True)
    COVERED, PARTIAL, NOT_COVERED = "covered", "partial", "not_covered"
    COVERAGE_CHOICES = [(COVERED, "covered"), (PARTIAL, "partial"), (NOT_COVERED, "not covered")]
    coverage = models.CharField(max_length=12, blank=True, choices=COVERAGE_CHOICES, db_index=True,
                                help_text="Whether the docs answer the question (a search's verdict); empty for "
                                          "reads and for records made before verdicts.")
    coverage_score = models.FloatField(null=True, blank=True, help_text="The verdict's score in [0, 1].")
    latency_ms = models.FloatField(default=0)
    is_error = models.BooleanField(default=False)
    client = models.CharField(max_length=200, blank=True, help_text="MCP clientInfo name/version, else User-Agent.")
    key_name = models.CharField(max_length=100, blank=True, help_text="The API key's name; never the key.")
    is_eval = models.BooleanField(default=False, help_text="Made by an eval run: left out of the analytics.")

    class Meta:
        indexes = [models.Index(fields=["corpus", "is_eval", "at"]),
                   models.Index(fields=["corpus", "tool", "at"]),
                   models.Index(fields=["corpus", "id"])]  # a corpus's newest record: has its gap list changed

    def __str__(self) -> str:
        return f"{self.tool} {self.query or self.target!r} on {self.corpus}"


class Feedback(models.Model):
    """An agent's report on an answer (the docs_feedback tool and its equivalents), with a logged call's context."""

    HELPFUL, NOT_HELPFUL, WRONG, OUTDATED, MISSING = "helpful", "not_helpful", "wrong", "outdated", "missing"
    VERDICTS = (HELPFUL, NOT_HELPFUL, WRONG, OUTDATED, MISSING)
    VERDICT_CHOICES = [(v, v.replace("_", " ")) for v in VERDICTS]

    at = models.DateTimeField(db_index=True)
    corpus = models.CharField(max_length=100)
    version = models.CharField(max_length=100, blank=True)
    build_id = models.CharField(max_length=64, blank=True)
    profile = models.CharField(max_length=40, blank=True)
    tool = models.CharField(max_length=64, blank=True)
    surface = models.CharField(max_length=10, choices=QueryRecord.SURFACE_CHOICES, default=QueryRecord.SURFACE_HTTP)
    verdict = models.CharField(max_length=20, choices=VERDICT_CHOICES, db_index=True)
    chunk_id = models.CharField(max_length=1000, blank=True)
    filepath = models.CharField(max_length=1000, blank=True, help_text="The page of chunk_id, for grouping by page.")
    query = models.TextField(blank=True)
    comment = models.TextField(blank=True)
    client = models.CharField(max_length=200, blank=True)
    key_name = models.CharField(max_length=100, blank=True)
    dismissed_at = models.DateTimeField(null=True, blank=True)
    dismissed_reason = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["corpus", "at"])]

    def __str__(self) -> str:
        return f"{self.verdict} on {self.chunk_id or self.corpus}"


class HookDelivery(models.Model):
    """A push webhook delivery already acted on: the sender's delivery ID, hashed, so a replay or a
    redelivery of it queues nothing (corpus/webhooks.py, which forgets them after 30 days)."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="hook_deliveries")
    key = models.CharField(max_length=64, help_text="SHA-256 of the delivery ID the sender gave.")
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["corpus", "key"], name="hook_delivery_once")]

    def __str__(self) -> str:
        return f"{self.corpus_id} delivery {self.key[:12]}"


# API keys for the MCP endpoint and the REST API; the key itself is never stored.
SCOPES = ("read", "write", "build", "admin")


def default_scopes() -> list[str]:
    return ["read"]


class ApiKey(models.Model):
    """One bearer key: shown once when created in the admin, kept only as its SHA-256 hash."""

    name = models.CharField(max_length=100, help_text="Who or what uses this key.")
    prefix = models.CharField(
        max_length=8, editable=False, help_text="First 8 characters, to recognise the key."
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=default_scopes, help_text="Any of: read, write, build, admin.")
    corpora = models.JSONField(
        default=list, blank=True,
        help_text="Corpus names this key may read and write; empty means every corpus.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        db_table = "mcp_endpoint_apikey"  # created by the mcp_endpoint app, which held keys first
        ordering = ["-created_at"]
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class SpentAuthorizationCode(models.Model):
    """An OAuth authorization code already exchanged, kept as its SHA-256 hash with the refresh token family
    it was exchanged for: presenting it again revokes that family (RFC 6749 section 4.1.2), for as long as
    those tokens could live."""

    code_hash = models.CharField(max_length=64, unique=True)
    client_id = models.CharField(max_length=255)
    token_family = models.UUIDField(null=True)
    expires = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"code for {self.client_id} ({self.code_hash[:8]}…)"
