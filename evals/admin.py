from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from common.admin_base import ReadOnlyAdmin
from corpus.errors import CorpusError

from .errors import EvalError
from .models import EvalCase, EvalResult, EvalRun, EvalSuite
from .selectors import headline, suite_export
from .services import eval_start


def _num(value, digits=3):
    return "—" if value is None else f"{value:.{digits}f}"


def _suites():
    """Every suite, its corpus fetched with it: each is shown as "corpus / name" (EvalSuite.__str__)."""
    return EvalSuite.objects.select_related("corpus").order_by("corpus__name", "name")


class SuiteListFilter(admin.RelatedFieldListFilter):
    """The "By suite" filter, listing suites as "corpus / name" in corpus order, in one query."""

    def field_choices(self, field, request, model_admin):
        return [(suite.pk, str(suite)) for suite in _suites()]


@admin.register(EvalSuite)
class EvalSuiteAdmin(admin.ModelAdmin):
    list_display = ("name", "corpus", "match_mode", "case_count", "cases_link", "updated_at")
    list_filter = ("corpus", "match_mode")
    search_fields = ("name", "description")
    readonly_fields = ("source_file", "created_at", "updated_at", "cases_link")
    actions = ["run_against_active_build", "export_jsonl"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("corpus").annotate(case_count=Count("cases"))

    @admin.display(description="cases", ordering="case_count")
    def case_count(self, obj):
        return getattr(obj, "case_count", None)

    @admin.display(description="browse")
    def cases_link(self, obj):
        if not obj.pk:
            return "—"
        url = reverse("admin:evals_evalcase_changelist") + f"?suite__id__exact={obj.pk}"
        return format_html('<a href="{}">cases</a>', url)

    @admin.action(description="Run against active build")
    def run_against_active_build(self, request, queryset):
        for suite in queryset.select_related("corpus", "corpus__active_build"):
            try:
                run = eval_start(corpus=suite.corpus, suite=suite, requested_by=request.user.get_username())
            except (EvalError, CorpusError) as exc:
                messages.error(request, f"{suite.name}: {exc}")
                continue
            run.refresh_from_db()
            messages.info(request, format_html('{}: run <a href="{}">#{}</a> {} against build {}', suite.name,
                                               reverse("evals:run", args=[run.pk]), run.pk, run.status,
                                               run.build_label))

    @admin.action(description="Export cases (JSONL)")
    def export_jsonl(self, request, queryset):
        body = "".join(suite_export(suite=suite) for suite in queryset)
        name = queryset.first().name if queryset.count() == 1 else "suites"
        response = HttpResponse(body, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
        return response


@admin.register(EvalCase)
class EvalCaseAdmin(admin.ModelAdmin):
    list_display = ("name", "suite", "category", "corpus", "query", "expected", "answerable", "max_rank",
                    "require_covered")
    list_filter = ("suite__corpus", ("suite", SuiteListFilter), "category", "corpus", "answerable")
    search_fields = ("name", "query")
    list_select_related = ("suite__corpus",)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "suite":
            kwargs["queryset"] = _suites()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="expected")
    def expected(self, obj):
        items = obj.expected_chunk_ids or obj.expected_files
        return ", ".join(items[:3]) + (" …" if len(items) > 3 else "") if items else "(not answerable)"


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ("id", "suite", "corpus", "scope", "build_label", "mode", "status_progress", "mrr", "ndcg", "hit1",
                    "pass_rate", "coverage", "resolution", "baseline_delta", "created_at", "dashboard")
    list_filter = ("status", "mode", "scope", "corpus", ("suite", SuiteListFilter))
    list_select_related = ("suite__corpus", "corpus")
    search_fields = ("build_label", "target_url", "error")
    readonly_fields = [f.name for f in EvalRun._meta.fields] + ["dashboard"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="coverage P / R")
    def coverage(self, obj):
        h = headline(obj.metrics)
        return f"{_num(h.get('coverage_precision'))} / {_num(h.get('coverage_recall'))}"

    @admin.display(description="corpus resolution")
    def resolution(self, obj):
        value = ((obj.metrics or {}).get("overall", {}).get("resolution") or {}).get("accuracy")
        return "–" if value is None else f"{value:.1%}"

    @admin.display(description="status")
    def status_progress(self, obj):
        if obj.status in EvalRun.IN_FLIGHT:
            return f"{obj.status} {obj.progress_done}/{obj.progress_total} ({obj.progress_percent}%)"
        return obj.status

    @admin.display(description="MRR@10")
    def mrr(self, obj):
        return _num(headline(obj.metrics).get("mrr@10"))

    @admin.display(description="nDCG@10")
    def ndcg(self, obj):
        return _num(headline(obj.metrics).get("ndcg@10"))

    @admin.display(description="Hit@1")
    def hit1(self, obj):
        return _num(headline(obj.metrics).get("hit@1"))

    @admin.display(description="pass")
    def pass_rate(self, obj):
        value = headline(obj.metrics).get("pass_rate")
        return "—" if value is None else f"{100 * value:.1f}%"

    @admin.display(description="vs baseline")
    def baseline_delta(self, obj):
        delta = obj.delta or {}
        if not delta:
            return "—"
        overall = (delta.get("metrics") or {}).get("overall") or {}
        level = overall.get("chunk") or overall.get("file") or {}
        cases = delta.get("cases") or {}
        mrr = level.get("mrr@10")
        return (f"#{delta.get('baseline')}: MRR {'+' if (mrr or 0) > 0 else ''}{_num(mrr)}, "
                f"{len(cases.get('better') or [])} better / {len(cases.get('worse') or [])} worse")

    @admin.display(description="dashboard")
    def dashboard(self, obj):
        return format_html('<a href="{}">open</a>', reverse("evals:run", args=[obj.pk])) if obj.pk else "—"


@admin.register(EvalResult)
class EvalResultAdmin(ReadOnlyAdmin):
    """Read-only: results are written by runs, never edited."""

    list_display = ("case_name", "run", "category", "passed", "chunk_rank", "file_rank", "rounds", "search_ms",
                    "get_doc_ms", "error")
    list_filter = ("passed", "zero_result", "category")
    list_select_related = ("run", "run__suite", "run__corpus")
    search_fields = ("case_name", "query")
    raw_id_fields = ("run", "case")

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in EvalResult._meta.fields]
