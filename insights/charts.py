"""Server-side SVG for the insights pages, drawn like the eval dashboards' (evals/charts.py): no JavaScript,
every label escaped, every bar with a <title> tooltip."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from evals.charts import MISS, NEAR, PASS

READ = "#2563eb"
OLD = "#9ca3af"
OLD_MISS = "#6b7280"
# (key in each day's row, label, colour), stacked bottom up. Searches logged before verdicts existed have
# none: the zero-hit/low-score rule sorts them into the two grey layers.
DAY_LAYERS = (("reads", "reads", READ), ("covered", "covered", PASS), ("partial", "partial", NEAR),
              ("not_covered", "not covered", MISS), ("old_answered", "no verdict", OLD),
              ("old_unanswered", "no verdict, zero-hit/low-score", OLD_MISS))
VERDICT_COLORS = {"helpful": PASS, "not_helpful": NEAR, "wrong": MISS, "outdated": "#7c3aed", "missing": "#0891b2"}


def day_bars(days: Sequence[dict], *, title: str = "calls per day", width: int = 720, height: int = 200) -> SafeString:
    """One stacked bar per day: reads, then searches by verdict (covered, partial, not covered), then older
    searches without one."""
    left, right, top, bottom = 40, 10, 34, 26
    plot_w, plot_h = width - left - right, height - top - bottom
    rows = [{"reads": d["calls"] - d["searches"], "covered": d["covered"], "partial": d["partial"],
             "not_covered": d["not_covered"], "old_answered": d["unjudged"] - d["old_unanswered"],
             "old_unanswered": d["old_unanswered"], "day": d["day"]} for d in days]
    peak = max((d["calls"] for d in days), default=0) or 1
    n = max(len(rows), 1)
    slot = plot_w / n
    bar = max(1.0, slot * 0.8)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart day-bars" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
             f'<text x="{left}" y="14" font-size="12" font-weight="600">{escape(title)}</text>']
    for frac in (0.0, 0.5, 1.0):
        y = top + plot_h - plot_h * frac
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>'
                     f'<text x="{left - 4}" y="{y + 3:.1f}" font-size="9" text-anchor="end" fill="#6b7280">'
                     f'{round(peak * frac)}</text>')
    for i, row in enumerate(rows):
        x = left + i * slot + (slot - bar) / 2
        base = top + plot_h
        total = sum(row[k] for k, _, _ in DAY_LAYERS)
        for key, label, color in DAY_LAYERS:
            value = row[key]
            if value <= 0:
                continue
            h = plot_h * value / peak
            base -= h
            parts.append(f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{color}">'
                         f'<title>{escape(str(row["day"]))}: {value} {escape(label)} of {total} calls</title></rect>')
    if rows:
        parts.append(f'<text x="{left}" y="{height - 8}" font-size="9" fill="#6b7280">{escape(str(rows[0]["day"]))}'
                     f'</text><text x="{width - right}" y="{height - 8}" font-size="9" text-anchor="end" '
                     f'fill="#6b7280">{escape(str(rows[-1]["day"]))}</text>')
    legend = [layer for layer in DAY_LAYERS if not layer[0].startswith("old_") or any(r[layer[0]] for r in rows)]
    for k, (_, label, color) in enumerate(legend):
        lx = left + 100 * k
        parts.append(f'<rect x="{lx}" y="{top - 14}" width="8" height="8" fill="{color}"/>'
                     f'<text x="{lx + 11}" y="{top - 7}" font-size="9" fill="#374151">{escape(label)}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text above is escaped


def verdict_bar(verdicts: dict[str, int], *, width: int = 220, height: int = 14) -> SafeString:
    """One horizontal bar split by verdict, for a page's feedback."""
    total = sum(verdicts.values()) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="verdict-bar" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="feedback by verdict">']
    x = 0.0
    for verdict, color in VERDICT_COLORS.items():
        n = verdicts.get(verdict, 0)
        if not n:
            continue
        w = width * n / total
        parts.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{height}" fill="{color}">'
                     f'<title>{n} {escape(verdict.replace("_", " "))}</title></rect>')
        x += w
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text above is escaped
