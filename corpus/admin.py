from django import forms
from django.contrib import admin, messages
from django.http import JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince

from .errors import CorpusError
from .execution import build_activate, builds_prune
from .gitsource import check_git_url
from .models import BuildRun, Corpus, FixProposal, TaxonomyKey
from .providers import corpus_embedding
from .queue import enqueue
from .reach import source_warnings
from .services import build_cancel, build_start, check_corpus_settings, check_source_dir


def _dispatch(request, corpora, kind: str, change_embeddings: bool = False) -> None:
    """Start builds and say where each one is, linking to its live progress page."""
    for corpus in corpora:
        try:
            build = build_start(corpus=corpus, kind=kind, change_embeddings=change_embeddings,
                                requested_by=request.user.get_username())
        except CorpusError as exc:
            messages.error(request, f"{corpus.name}: {exc}")
            continue
        build.refresh_from_db()
        link = format_html('<a href="{}">{} build {}</a>', reverse("admin:corpus_buildrun_change", args=[build.pk]),
                           kind, build.build_id)
        if build.status == BuildRun.FAILED:
            messages.error(request, format_html("{}: {} failed: {}", corpus.name, link, build.error))
        else:
            messages.info(request, format_html("{}: {} {}; follow its progress there", corpus.name, link,
                                               build.status))


def _propose(request, corpora, use_llm: bool) -> None:
    from django.conf import settings

    from .tasks import run_fix

    for corpus in corpora:
        url = reverse("admin:corpus_fixproposal_changelist") + f"?corpus__id__exact={corpus.pk}&status__exact=pending"
        try:
            if settings.CELERY_TASK_ALWAYS_EAGER:
                summary = run_fix.delay(corpus.pk, use_llm).get()
            else:
                enqueue("corpus.run_fix", corpus.pk, use_llm)
        except CorpusError as exc:
            messages.error(request, f"{corpus.name}: {exc}")
            continue
        if settings.CELERY_TASK_ALWAYS_EAGER:
            messages.success(request, format_html(
                'corpus {}: {} proposal(s), {} new, {} went stale, {} LLM failure(s). <a href="{}">Review them</a>.',
                corpus.name, len(summary["proposals"]), summary["created"], summary["stale"],
                summary["llm_failures"], url))
        else:
            messages.info(request, format_html('corpus {}: fix scan queued. <a href="{}">Proposals</a>', corpus.name, url))


class TaxonomyInline(admin.TabularInline):
    model = TaxonomyKey
    extra = 0
    can_delete = False
    readonly_fields = ("key", "description", "values", "vector_collapse")


class CorpusForm(forms.ModelForm):
    class Meta:
        model = Corpus
        fields = "__all__"

    def clean_source_dir(self):
        source_dir = self.cleaned_data["source_dir"]
        if self.cleaned_data.get("kind", Corpus.KIND_MARKDOWN) != Corpus.KIND_MARKDOWN or (
                self.instance.pk and source_dir == self.instance.source_dir) or (
                not source_dir and (self.data.get("git_url") or "").strip()):
            return source_dir
        try:
            return str(check_source_dir(source_dir))
        except CorpusError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_git_url(self):
        url = (self.cleaned_data.get("git_url") or "").strip()
        if not url or (self.instance.pk and url == self.instance.git_url):
            return url
        try:
            return check_git_url(url)
        except CorpusError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_settings(self):
        try:
            return check_corpus_settings(self.cleaned_data["settings"] or {})
        except CorpusError as exc:
            raise forms.ValidationError(str(exc)) from exc


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    form = CorpusForm
    list_display = ("name", "kind", "source_dir", "version", "freshness", "embeddings", "taxonomy_found",
                    "active_build_link", "last_build_status", "findings_link", "open_fixes", "updated_at")
    search_fields = ("name", "description")
    fields = ("name", "kind", "source_dir", "git_url", "git_ref", "git_subdir", "description", "version",
              "version_of", "default_version", "aliases", "settings", "freshness", "embeddings",
              "active_build_link", "last_build_status", "taxonomy_found", "findings_link", "open_fixes", "created_at",
              "updated_at")
    readonly_fields = ("freshness", "embeddings", "active_build_link", "last_build_status", "taxonomy_found",
                       "findings_link", "open_fixes", "created_at", "updated_at")

    @admin.display(description="freshness")
    def freshness(self, obj):
        """Built commit, latest known commit, how long ago it was built, and STALE when the ref moved on."""
        build = obj.active_build
        if build is None:
            return "not built"
        built = obj.built_revision[:12] or "?"
        when = build.activated_at or build.finished_at
        age = f"{timesince(when)} ago" if when else ""
        if not obj.git_url:
            return format_html("{} · {}", built, age)
        latest = obj.latest_commit[:12] or "unknown"
        if obj.is_stale:
            return format_html('{} · latest {} · {} · <strong style="color:#ba2121">STALE</strong>', built, latest, age)
        return format_html("{} · latest {} · {} · up to date", built, latest, age)
    inlines = [TaxonomyInline]
    actions = ["validate", "build", "rebuild", "build_change_embeddings", "prune", "propose_fixes",
               "propose_fixes_llm"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        for warning in source_warnings(obj):
            messages.warning(request, f"{obj.name}: {warning}")

    @admin.display(description="embeddings")
    def embeddings(self, obj):
        """What the next build uses (the corpus's setting) and, when different, what the active build has."""
        provider, options = corpus_embedding(obj)
        text = provider + (f" {options}" if options else "")
        spec = obj.active_build.embedding if obj.active_build else None
        active = (spec or {}).get("provider", "none") if obj.active_build else None
        if active is not None and active != provider:
            text += f" (active build: {active})"
        return text

    @admin.display(description="active build")
    def active_build_link(self, obj):
        build = obj.active_build
        if build is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("admin:corpus_buildrun_change", args=[build.pk]),
                           build.build_id)

    @admin.display(description="last build")
    def last_build_status(self, obj):
        last = obj.builds.first()
        if last is None:
            return "—"
        return format_html('<a href="{}">{} ({})</a>', reverse("admin:corpus_buildrun_change", args=[last.pk]),
                           last.status, last.kind)

    @admin.display(description="taxonomy")
    def taxonomy_found(self, obj):
        keys = list(obj.taxonomy.all())
        if not keys:
            return "—"
        return "; ".join(f"{t.key}: {', '.join(t.values[:8])}{' …' if len(t.values) > 8 else ''}" for t in keys)

    @admin.display(description="findings")
    def findings_link(self, obj):
        last = obj.builds.first()
        if last is None:
            return "—"
        url = reverse("admin:corpus_buildrun_change", args=[last.pk]) + "#findings"
        return format_html('<a href="{}">{} error(s), {} warning(s)</a>', url, last.error_count, last.warning_count)

    @admin.display(description="open fixes")
    def open_fixes(self, obj):
        count = obj.fix_proposals.filter(status=FixProposal.PENDING).count()
        url = reverse("admin:corpus_fixproposal_changelist") + f"?corpus__id__exact={obj.pk}&status__exact=pending"
        return format_html('<a href="{}">{} pending</a>', url, count)

    @admin.action(description="Validate selected corpora")
    def validate(self, request, queryset):
        _dispatch(request, queryset, BuildRun.KIND_VALIDATE)

    @admin.action(description="Build selected corpora (incremental)")
    def build(self, request, queryset):
        _dispatch(request, queryset, BuildRun.KIND_INCREMENTAL)

    @admin.action(description="Rebuild selected corpora from scratch")
    def rebuild(self, request, queryset):
        _dispatch(request, queryset, BuildRun.KIND_FULL)

    @admin.action(description="Build selected corpora, confirming a change of embeddings (drops or replaces "
                              "the active build's vectors)")
    def build_change_embeddings(self, request, queryset):
        _dispatch(request, queryset, BuildRun.KIND_INCREMENTAL, change_embeddings=True)

    @admin.action(description="Prune old builds and leftover build directories")
    def prune(self, request, queryset):
        for corpus in queryset:
            removed = builds_prune(corpus=corpus)
            messages.info(request, f"{corpus.name}: removed {len(removed)} old build(s) or leftover directories")

    @admin.action(description="Propose fixes (heuristics)")
    def propose_fixes(self, request, queryset):
        _propose(request, queryset, use_llm=False)

    @admin.action(description="Propose fixes (heuristics + LLM)")
    def propose_fixes_llm(self, request, queryset):
        _propose(request, queryset, use_llm=True)


def _table(rows) -> str:
    return format_html('<table class="kv">{}</table>', format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows)) \
        if rows else "—"


@admin.register(BuildRun)
class BuildRunAdmin(admin.ModelAdmin):
    change_list_template = "admin/evals/buildrun_change_list.html"  # adds the eval scores column
    list_display = ("build_id", "corpus", "kind", "status", "progress", "is_active_build", "chunks",
                    "errors_warnings", "created_at", "duration")
    list_filter = ("corpus", "status", "kind")
    fieldsets = [
        (None, {"fields": ("build_id", "corpus", "kind", "status", "live_progress", "is_active_build",
                           "requested_by", "embedding_provider")}),
        ("Timings", {"fields": ("created_at", "started_at", "finished_at", "activated_at", "duration",
                                "timings_table")}),
        ("Counts", {"fields": ("stats_table",)}),
        ("Findings", {"fields": ("findings_list",)}),
        ("Errors", {"fields": ("error",)}),
        ("Details", {"classes": ("collapse",), "fields": ("index_path", "embedding", "stage", "progress_done",
                                                          "progress_total", "heartbeat_at", "cancel_requested")}),
    ]
    readonly_fields = [f.name for f in BuildRun._meta.fields] + [
        "findings_list", "live_progress", "timings_table", "stats_table", "is_active_build", "duration"]
    actions = ["activate", "cancel", "delete_old"]

    def has_add_permission(self, request):
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        # Every field is read-only: the page reports on a build, there is nothing to save.
        extra = {"show_save": False, "show_save_and_continue": False, "show_save_and_add_another": False,
                 **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra_context=extra)

    def get_urls(self):
        return [path("<int:pk>/progress.json", self.admin_site.admin_view(self.progress_json),
                     name="corpus_buildrun_progress"), *super().get_urls()]

    def progress_json(self, request, pk: int):
        """Polled by the change page while a build runs (staff only, through admin_view)."""
        build = get_object_or_404(BuildRun, pk=pk)
        if not self.has_view_permission(request, build):
            return JsonResponse({"error": "forbidden"}, status=403)
        return JsonResponse({
            "status": build.status, "stage": build.stage, "done": build.progress_done,
            "total": build.progress_total, "percent": build.progress_percent,
            "in_flight": build.status in BuildRun.IN_FLIGHT, "error": build.error,
        })

    @admin.display(description="progress")
    def progress(self, obj):
        if obj.status in BuildRun.IN_FLIGHT:
            return f"{obj.stage} {obj.progress_done}/{obj.progress_total} ({obj.progress_percent}%)"
        return obj.status

    @admin.display(description="live progress")
    def live_progress(self, obj):
        in_flight = obj.status in BuildRun.IN_FLIGHT
        percent = obj.progress_percent if in_flight else (100 if obj.status == BuildRun.COMPLETE else obj.progress_percent)
        label = (f"{obj.status}: {obj.stage} {obj.progress_done}/{obj.progress_total} ({obj.progress_percent}%)"
                 if in_flight else obj.status)
        return format_html(
            '<div id="build-progress" data-url="{}" data-in-flight="{}"><progress max="100" value="{}"></progress> '
            '<span class="label">{}</span></div>',
            reverse("admin:corpus_buildrun_progress", args=[obj.pk]), "1" if in_flight else "0", percent, label)

    @admin.display(description="active", boolean=True)
    def is_active_build(self, obj):
        return obj.is_active

    @admin.display(description="chunks")
    def chunks(self, obj):
        return (obj.stats or {}).get("total_chunks", "—")

    @admin.display(description="errors / warnings")
    def errors_warnings(self, obj):
        return f"{obj.error_count} / {obj.warning_count}"

    @admin.display(description="duration")
    def duration(self, obj):
        total = (obj.timings or {}).get("total")
        if total:
            return f"{total:.1f}s"
        if obj.started_at and obj.finished_at:
            return f"{(obj.finished_at - obj.started_at).total_seconds():.1f}s"
        return "—"

    @admin.display(description="timings (seconds)")
    def timings_table(self, obj):
        return _table([(stage, f"{seconds:.3f}") for stage, seconds in (obj.timings or {}).items()
                       if isinstance(seconds, int | float)])

    @admin.display(description="counts")
    def stats_table(self, obj):
        rows = [(key, value) for key, value in (obj.stats or {}).items() if isinstance(value, int | float | str)]
        return _table(rows + [("errors", obj.error_count), ("warnings", obj.warning_count)])

    @admin.display(description="findings")
    def findings_list(self, obj):
        rows = format_html_join(
            "", "<li><b>{}</b> <code>{}</code> {} <i>{}</i> <small>[{}]</small></li>",
            ((f["severity"], f"{f['file']}:{f['line']}" if f.get("line") else f["file"], f["message"],
              f.get("suggestion", ""), f.get("code", "")) for f in obj.findings[:500]))
        more = f" … and {len(obj.findings) - 500} more" if len(obj.findings) > 500 else ""
        return format_html('<ul id="findings">{}</ul>{}', rows, more) if obj.findings else "none"

    @admin.action(description="Activate (roll back to) the selected build")
    def activate(self, request, queryset):
        if queryset.count() != 1:
            messages.error(request, "select exactly one build to activate")
            return
        try:
            build = build_activate(build=queryset.first())
            messages.success(request, f"{build.corpus.name}: build {build.build_id} is now active")
        except CorpusError as exc:
            messages.error(request, str(exc))

    @admin.action(description="Cancel the selected builds")
    def cancel(self, request, queryset):
        for build in queryset:
            try:
                build_cancel(build=build)
                messages.info(request, f"cancel requested for {build.build_id}")
            except CorpusError as exc:
                messages.error(request, str(exc))

    @admin.action(description="Delete old build indexes of the selected builds' corpora")
    def delete_old(self, request, queryset):
        for corpus in {b.corpus for b in queryset}:
            removed = builds_prune(corpus=corpus)
            messages.info(request, f"{corpus.name}: removed {len(removed)} old build(s)")


from . import admin_fixes, admin_keys  # noqa: E402,F401  (register FixProposalAdmin, ApiKeyAdmin)
