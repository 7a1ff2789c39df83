"""Gap groups: the unanswered questions of a corpus, grouped by meaning, with IDs that stay put.

A group is persisted so an author's decisions stick to it: a dismissal, the eval case made from it,
the content fix asked for it. Its member texts (GapQuery) tie a query text to one group for good, so
the next recomputation sends a repeat of a known question to the same group, and only new texts are
compared (by embedding or text similarity) with the groups' representatives.
"""

from __future__ import annotations

from django.db import models


class Gap(models.Model):
    OPEN, DISMISSED, CLOSED = "open", "dismissed", "closed"
    STATUS_CHOICES = [(OPEN, "Open"), (DISMISSED, "Dismissed"), (CLOSED, "Closed (fix applied)")]

    corpus = models.CharField(max_length=100, db_index=True, help_text="The corpus as served, without version.")
    representative = models.TextField(help_text="The group's most asked question: what an eval case asks.")
    method = models.CharField(max_length=200, help_text='How members were matched: "text", or '
                              '"embedding:<provider>/<model>".')
    centroid = models.JSONField(null=True, blank=True, help_text="Unit mean vector of the members (embedding).")
    threshold = models.FloatField(null=True, blank=True, help_text="The similarity its members were grouped at: "
                                  "when the corpus's gap_similarity changes, open groups are regrouped.")
    verdict = models.CharField(max_length=12, default="not_covered", help_text="not_covered, or partial when "
                               "every unanswered search of it was judged partly covered.")
    callers = models.IntegerField(default=0, help_text="Distinct callers (API keys, tokens, anonymous clients) "
                                  "in the last period computed.")
    missing_reports = models.IntegerField(default=0, help_text='docs_feedback "missing" reports of its questions.')
    closed_by = models.CharField(max_length=64, blank=True, help_text="The build that closed it: the first "
                                 "complete build after its fix was applied.")
    size = models.IntegerField(default=1, help_text="Member texts, for the running mean of the centroid.")
    count = models.IntegerField(default=0, help_text="Calls in the last period computed.")
    distinct_queries = models.IntegerField(default=0)
    examples = models.JSONField(default=list, blank=True)
    first_seen = models.DateTimeField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=OPEN, db_index=True)
    status_at = models.DateTimeField(null=True, blank=True, help_text="When it was dismissed or closed: "
                                     "a query after this reopens it.")
    dismissed_reason = models.TextField(blank=True)
    decided_by = models.CharField(max_length=150, blank=True)
    eval_case = models.ForeignKey("evals.EvalCase", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    fix_proposal = models.ForeignKey("corpus.FixProposal", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-count", "-last_seen", "pk"]
        indexes = [models.Index(fields=["corpus", "status"])]

    def __str__(self) -> str:
        return f"gap #{self.pk} {self.representative!r} on {self.corpus}"


class GapQuery(models.Model):
    """A query text assigned to a group, once and for good (per corpus)."""

    gap = models.ForeignKey(Gap, on_delete=models.CASCADE, related_name="queries")
    corpus = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, help_text="sha256 of the text, for a unique index of any length.")
    text = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["corpus", "digest"], name="unique_gap_query_text")]

    def __str__(self) -> str:
        return self.text
