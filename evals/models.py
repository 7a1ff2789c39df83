"""Eval suites and their cases, and the runs that measured a build with them.

A run is tied to the build it measured (`EvalRun.build`). Results keep a copy of the case's
name, category and query, so refreshing or deleting a case never rewrites an old run's history.
"""

from django.db import models


class EvalSuite(models.Model):
    """A named set of cases of one corpus (the row users name, not a version of it). Names are the corpus's
    own: two corpora may each have a suite of the same name, and a caller of one never reaches the other's
    by naming it (its cases carry that corpus's agent questions)."""

    MATCH_EXACT, MATCH_LEAF = "exact", "leaf"
    MATCH_CHOICES = [(MATCH_EXACT, "Exact chunk ID"),
                     (MATCH_LEAF, "Leaf: same file + same last heading segment")]

    name = models.SlugField(max_length=100, help_text="Unique within the corpus.")
    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.CASCADE, related_name="eval_suites",
                               help_text="The corpus the suite belongs to; its runs measure this corpus or a "
                                         "version of it.")
    description = models.TextField(blank=True)
    match_mode = models.CharField(max_length=10, choices=MATCH_CHOICES, default=MATCH_EXACT,
                                  help_text="How a hit's chunk ID is matched against the expected ones.")
    source_file = models.CharField(max_length=1000, blank=True, help_text="File the cases were last imported from.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "corpus_id"]
        constraints = [models.UniqueConstraint(fields=["corpus", "name"], name="unique_eval_suite_name_per_corpus")]

    def __str__(self) -> str:
        # Names repeat across corpora: a list filter or drop-down of bare names shows two "gaps" alike.
        return f"{self.corpus.name} / {self.name}" if self.corpus_id else self.name


class EvalCase(models.Model):
    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=200, help_text="Case ID, unique within the suite.")
    position = models.IntegerField(default=0, help_text="Order in the imported file.")
    category = models.CharField(max_length=100, blank=True, db_index=True)
    query = models.TextField()
    filters = models.JSONField(default=dict, blank=True)
    expected_chunk_ids = models.JSONField(default=list, blank=True)
    expected_files = models.JSONField(default=list, blank=True)
    corpus = models.CharField(max_length=100, blank=True, help_text="The corpus that answers the case, for runs "
                              "across corpora (blank: any).")
    extra = models.JSONField(default=dict, blank=True, help_text="Other keys of the imported case, kept for export.")
    answerable = models.BooleanField(default=True, help_text="False: the docs do not answer the question, and the "
                                     "case passes when the search's coverage verdict says so.")
    max_rank = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The expected page or chunk must "
                                                "be at this rank or better (blank: anywhere in the rounds followed).")
    require_covered = models.BooleanField(default=False, help_text="The verdict must be `covered` (otherwise any "
                                          "verdict but `not_covered` passes).")

    class Meta:
        ordering = ["suite", "position", "pk"]
        constraints = [models.UniqueConstraint(fields=["suite", "name"], name="unique_eval_case_name")]

    def __str__(self) -> str:
        return f"{self.suite.name}:{self.name}" if self.suite_id else self.name

    @property
    def is_zero_result(self) -> bool:
        return not self.answerable


class EvalRun(models.Model):
    MODE_IN_PROCESS, MODE_HTTP = "in-process", "http"
    MODE_CHOICES = [(MODE_IN_PROCESS, "In-process (docs profile tools)"), (MODE_HTTP, "HTTP (any MCP server URL)")]
    SCOPE_CORPUS, SCOPE_ALL, SCOPE_NAMED = "corpus", "all", "named"
    SCOPE_CHOICES = [(SCOPE_CORPUS, "The run's corpus"),
                     (SCOPE_ALL, "Across corpora: /mcp/ without a corpus argument"),
                     (SCOPE_NAMED, "Each case's corpus, as the corpus argument at /mcp/")]
    QUEUED, RUNNING, COMPLETE, FAILED = "queued", "running", "complete", "failed"
    STATUS_CHOICES = [(s, s.capitalize()) for s in (QUEUED, RUNNING, COMPLETE, FAILED)]
    IN_FLIGHT = (QUEUED, RUNNING)

    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="runs")
    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.CASCADE, related_name="eval_runs")
    build = models.ForeignKey("corpus.BuildRun", null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="eval_runs", help_text="The build this run measured.")
    build_label = models.CharField(max_length=64, blank=True, help_text="Build ID, kept if the build row is deleted.")
    mode = models.CharField(max_length=20, choices=MODE_CHOICES, default=MODE_IN_PROCESS)
    target_url = models.CharField(max_length=1000, blank=True)
    scope = models.CharField(max_length=10, choices=SCOPE_CHOICES, default=SCOPE_CORPUS,
                             help_text="Which corpora the searches cover; runs across corpora also measure "
                                       "corpus resolution (list_corpora).")
    match_mode = models.CharField(max_length=10, choices=EvalSuite.MATCH_CHOICES, default=EvalSuite.MATCH_EXACT)
    max_rounds = models.PositiveSmallIntegerField(default=3)
    extra_filters = models.JSONField(default=dict, blank=True, help_text="Filters added to every case's call.")
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=QUEUED, db_index=True)
    progress_done = models.IntegerField(default=0)
    progress_total = models.IntegerField(default=0)
    metrics = models.JSONField(default=dict, blank=True, help_text="overall and by_category aggregates")
    latency = models.JSONField(default=dict, blank=True, help_text="search / get_doc p50, p95, p99 (ms)")
    build_seconds = models.FloatField(null=True, blank=True)
    index_bytes = models.BigIntegerField(null=True, blank=True)
    baseline = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    delta = models.JSONField(default=dict, blank=True, help_text="Against the baseline: per metric and per case.")
    error = models.TextField(blank=True)
    requested_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last progress report of a running run.")

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["corpus", "suite", "-created_at"], name="evalrun_corpus_suite_created")]

    def __str__(self) -> str:
        return f"run {self.pk} {self.suite.name} on {self.corpus.name}"

    @property
    def progress_percent(self) -> int:
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    def headline(self, key: str, level: str = "chunk") -> float | None:
        """An overall metric, e.g. headline("mrr@10"), or None when this run has no such level."""
        return ((self.metrics or {}).get("overall", {}).get(level) or {}).get(key)


class EvalResult(models.Model):
    """One case of one run. Ranks are 1-based over every round's hits; None = not found."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(EvalCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="results")
    case_name = models.CharField(max_length=200)
    category = models.CharField(max_length=100, blank=True)
    query = models.TextField(blank=True)
    passed = models.BooleanField(default=False)
    zero_result = models.BooleanField(default=False, help_text="The case is not answerable: the docs should say "
                                      "they do not cover it.")
    score = models.FloatField(default=0.0, help_text="1/rank over every round (0 if not found); for a "
                                                     "zero-result case 1 if it got no hits. Compared across runs.")
    chunk_rank = models.IntegerField(null=True, blank=True, help_text="Rank of the first expected chunk.")
    file_rank = models.IntegerField(null=True, blank=True, help_text="Rank of the first hit in an expected file.")
    rounds = models.IntegerField(null=True, blank=True, help_text="search_docs calls until the right chunk.")
    file_rounds = models.IntegerField(null=True, blank=True)
    calls = models.IntegerField(default=0, help_text="search_docs calls made (rounds followed).")
    hit_count = models.IntegerField(default=0, help_text="Hits returned by the first call.")
    top_hits = models.JSONField(default=list, blank=True, help_text="Chunk IDs returned, every round, in order.")
    search_ms = models.FloatField(null=True, blank=True, help_text="First search_docs call.")
    search_ms_total = models.FloatField(null=True, blank=True, help_text="All rounds.")
    get_doc_ms = models.FloatField(null=True, blank=True, help_text="get_doc on the top hit.")
    metrics = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    coverage = models.CharField(max_length=20, blank=True, help_text="The first search's coverage verdict "
                                "(covered, partial, not_covered; blank: the target gave none).")
    coverage_score = models.FloatField(null=True, blank=True)
    why = models.CharField(max_length=300, blank=True, help_text="Why a case that found its page failed.")

    class Meta:
        ordering = ["run", "passed", "pk"]
        constraints = [models.UniqueConstraint(fields=["run", "case_name"], name="unique_eval_result_case")]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.case_name}"

    @property
    def rank(self) -> int | None:
        """The rank a person looks at: chunk level when the case names chunks, else file level."""
        return self.chunk_rank if (self.metrics or {}).get("chunk") is not None else self.file_rank
