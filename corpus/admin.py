from django.contrib import admin, messages
from django.utils.html import format_html

from .errors import CorpusError
from .models import BuildRun, Corpus, TaxonomyKey
from .services import build_activate, build_cancel, build_start, builds_prune


def _dispatch(request, corpora, kind: str) -> None:
    for corpus in corpora:
        try:
            build = build_start(corpus=corpus, kind=kind, requested_by=request.user.get_username())
            messages.info(request, f"{corpus.name}: {kind} build {build.build_id} queued")
        except CorpusError as exc:
            messages.error(request, f"{corpus.name}: {exc}")


class TaxonomyInline(admin.TabularInline):
    model = TaxonomyKey
    extra = 0
    can_delete = False
    readonly_fields = ("key", "description", "values", "vector_collapse")


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "version", "active_build_link", "last_build_status", "updated_at")
    search_fields = ("name", "description")
    readonly_fields = ("active_build", "created_at", "updated_at")
    inlines = [TaxonomyInline]
    actions = ["validate", "build", "rebuild"]

    @admin.display(description="active build")
    def active_build_link(self, obj):
        build = obj.active_build
        if build is None:
            return "—"
        return format_html('<a href="../buildrun/{}/change/">{}</a>', build.pk, build.build_id)

    @admin.display(description="last build")
    def last_build_status(self, obj):
        last = obj.builds.first()
        return f"{last.status} ({last.kind})" if last else "—"

    @admin.action(description="Validate selected corpora")
    def validate(self, request, queryset):
        _dispatch(request, queryset, BuildRun.KIND_VALIDATE)

    @admin.action(description="Build selected corpora (incremental)")
    def build(self, request, queryset):
        _dispatch(request, queryset, BuildRun.KIND_INCREMENTAL)

    @admin.action(description="Rebuild selected corpora from scratch")
    def rebuild(self, request, queryset):
        _dispatch(request, queryset, BuildRun.KIND_FULL)


@admin.register(BuildRun)
class BuildRunAdmin(admin.ModelAdmin):
    list_display = ("build_id", "corpus", "kind", "status", "progress", "is_active_build", "chunks",
                    "errors_warnings", "created_at", "duration")
    list_filter = ("corpus", "status", "kind")
    readonly_fields = [f.name for f in BuildRun._meta.fields] + ["findings_list"]
    actions = ["activate", "cancel", "delete_old"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="progress")
    def progress(self, obj):
        if obj.status in BuildRun.IN_FLIGHT:
            return f"{obj.stage} {obj.progress_done}/{obj.progress_total} ({obj.progress_percent}%)"
        return obj.status

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
        return f"{total:.1f}s" if total else "—"

    @admin.display(description="findings")
    def findings_list(self, obj):
        rows = "".join(
            format_html("<li><b>{}</b> <code>{}</code> {} <i>{}</i></li>", f["severity"],
                        f"{f['file']}:{f['line']}" if f.get("line") else f["file"], f["message"], f.get("suggestion", ""))
            for f in obj.findings[:500])
        return format_html("<ul>{}</ul>", format_html(rows)) if rows else "none"

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
