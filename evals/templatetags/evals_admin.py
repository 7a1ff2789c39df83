"""`{% evals_build_result_list cl %}`: the admin's result table of builds, with an eval-scores column.

Used by templates/admin/evals/buildrun_change_list.html, which the corpus admin opts into with
`change_list_template`. One query for the whole page (evals.selectors.latest_scores_for_builds).
"""

from __future__ import annotations

from django import template
from django.contrib.admin.templatetags.admin_list import result_list
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from evals.selectors import latest_scores_for_builds

register = template.Library()


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def scores_cell(scores: list[dict]) -> str:
    if not scores:
        return format_html('<td class="field-eval_scores">{}</td>', "—")
    lines = format_html_join(
        mark_safe("<br>"), '<a href="{}" title="{} run #{} ({})">{}</a>: MRR@10 {} · nDCG@10 {} · Hit@1 {}',
        ((reverse("evals:run", args=[s["run"]]), s["level"] or "", s["run"], s["mode"], s["suite"],
          _fmt(s.get("mrr@10")), _fmt(s.get("ndcg@10")), _fmt(s.get("hit@1"))) for s in scores))
    return format_html('<td class="field-eval_scores">{}</td>', lines)


@register.simple_tag
def evals_build_result_list(cl):
    context = result_list(cl)
    scores = latest_scores_for_builds([obj.pk for obj in cl.result_list])
    context["result_headers"].append({"text": "eval scores", "sortable": False,
                                      "class_attrib": mark_safe(' class="column-eval_scores"')})
    for obj, row in zip(cl.result_list, context["results"], strict=True):
        row.append(mark_safe(scores_cell(scores.get(obj.pk, []))))
    return mark_safe(render_to_string("admin/change_list_results.html", context))
