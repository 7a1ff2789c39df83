from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from .models import Gap


@admin.register(Gap)
class GapAdmin(admin.ModelAdmin):
    """The stored groups, for search and bulk review; the actions live on the insights pages."""

    list_display = ("id", "corpus", "representative", "count", "status", "last_seen", "eval_case", "fix_proposal",
                    "open_page")
    list_filter = ("corpus", "status")
    search_fields = ("representative",)
    readonly_fields = ("corpus", "representative", "method", "size", "count", "distinct_queries", "examples",
                       "first_seen", "last_seen", "status_at", "decided_by", "eval_case", "fix_proposal", "centroid")
    fields = ("status", "dismissed_reason", *readonly_fields)

    def has_add_permission(self, request):
        return False

    @admin.display(description="actions")
    def open_page(self, obj: Gap):
        return format_html('<a href="{}">open</a>', reverse("insights:gap", args=[obj.corpus, obj.pk]))
