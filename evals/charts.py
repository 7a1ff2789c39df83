"""Server-side SVG charts for the dashboards: no JavaScript library, no network.

`line_chart` draws metrics across runs (one point per run, oldest left); `rank_bars` draws one
bar per case (height = reciprocal rank, red stub = not found). Every label is HTML-escaped;
every point and bar carries a <title> tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#2563eb", "#d97706", "#059669", "#7c3aed", "#dc2626", "#0891b2")
PASS, NEAR, FAR, MISS = "#16a34a", "#ca8a04", "#9ca3af", "#dc2626"


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]
    color: str | None = None  # None: the palette's next; a series that means a verdict keeps its verdict's colour


def _fmt(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def line_chart(series: Sequence[Series], x_labels: Sequence[str], *, title: str = "", y_min: float = 0.0,
               y_max: float | None = 1.0, width: int = 340, height: int = 180, digits: int = 3,
               unit: str = "", axis_labels: Sequence[str] | None = None) -> SafeString:
    """A line per series over len(x_labels) points; None values leave a gap.

    `x_labels` go in the tooltips; `axis_labels` (default: the same) label the first and last point.
    """
    axis_labels = list(axis_labels) if axis_labels is not None else list(x_labels)
    left, right, top, bottom = 52, 10, 34, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for s in series for v in s.values if v is not None]
    if y_max is None:
        y_max = max(values) * 1.1 if values and max(values) > 0 else 1.0
    span = (y_max - y_min) or 1.0
    n = len(x_labels)

    def x(i: int) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h - plot_h * (min(max(v, y_min), y_max) - y_min) / span

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart line-chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">']
    if title:
        parts.append(f'<text x="{left}" y="14" class="chart-title" font-size="12" font-weight="600">'
                     f'{escape(title)}</text>')
    for frac in (0.0, 0.5, 1.0):
        v = y_min + span * frac
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e5e7eb"/>')
        parts.append(f'<text x="{left - 4}" y="{y(v) + 3:.1f}" font-size="9" text-anchor="end" fill="#6b7280">'
                     f'{escape(_fmt(v, 0 if unit else digits - 1))}{escape(unit)}</text>')
    if n:
        parts.append(f'<text x="{left}" y="{height - 8}" font-size="9" fill="#6b7280">{escape(axis_labels[0])}</text>')
        if n > 1:
            parts.append(f'<text x="{width - right}" y="{height - 8}" font-size="9" text-anchor="end" '
                         f'fill="#6b7280">{escape(axis_labels[-1])}</text>')
    else:
        parts.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" font-size="11" text-anchor="middle" '
                     'fill="#9ca3af">no runs yet</text>')
    for k, s in enumerate(series):
        color = s.color or PALETTE[k % len(PALETTE)]
        segment: list[str] = []
        segments: list[list[str]] = []
        for i, v in enumerate(s.values):
            if v is None:
                if segment:
                    segments.append(segment)
                segment = []
                continue
            segment.append(f"{x(i):.1f},{y(v):.1f}")
        if segment:
            segments.append(segment)
        for seg in segments:
            if len(seg) > 1:
                parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{" ".join(seg)}"/>')
        for i, v in enumerate(s.values):
            if v is None:
                continue
            label = x_labels[i] if i < len(x_labels) else ""
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.6" fill="{color}">'
                         f'<title>{escape(s.name)} {escape(_fmt(v, digits))}{escape(unit)} · {escape(label)}'
                         '</title></circle>')
        lx = left + 100 * k
        parts.append(f'<rect x="{lx}" y="{top - 14}" width="8" height="8" fill="{color}"/>'
                     f'<text x="{lx + 11}" y="{top - 7}" font-size="9" fill="#374151">{escape(s.name)}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text above is escaped


def _bar_color(rank: int | None, passed: bool, zero_result: bool) -> str:
    if zero_result:
        return PASS if passed else MISS
    if rank is None:
        return MISS
    return PASS if rank == 1 else NEAR if rank <= 10 else FAR


def rank_bars(items: Sequence[tuple[str, int | None, bool, bool]], *, height: int = 120, bar: int = 6,
              gap: int = 1, title: str = "") -> SafeString:
    """items: (case name, rank or None, passed, zero_result). Bar height = 1/rank; a miss is a red stub."""
    top, bottom, left = 18, 14, 30
    plot_h = height - top - bottom
    width = max(240, left + len(items) * (bar + gap) + 10)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart rank-bars" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title or "rank per case")}">']
    if title:
        parts.append(f'<text x="{left}" y="12" font-size="11" font-weight="600">{escape(title)}</text>')
    base = top + plot_h
    for frac, label in ((1.0, "1"), (0.5, "2"), (0.1, "10")):
        yy = base - plot_h * frac
        parts.append(f'<line x1="{left}" x2="{width - 4}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#f3f4f6"/>'
                     f'<text x="{left - 4}" y="{yy + 3:.1f}" font-size="8" text-anchor="end" fill="#6b7280">'
                     f'#{label}</text>')
    for i, (name, rank, passed, zero) in enumerate(items):
        xx = left + i * (bar + gap)
        color = _bar_color(rank, passed, zero)
        if zero:
            h = plot_h if passed else 4
            what = "not answered, as expected" if passed else "a question the docs do not answer, told covered"
        elif rank is None:
            h, what = 4, "not found"
        else:
            h, what = max(2.0, plot_h / rank), f"rank {rank}"
        parts.append(f'<rect x="{xx}" y="{base - h:.1f}" width="{bar}" height="{h:.1f}" fill="{color}">'
                     f'<title>{escape(name)}: {escape(what)}</title></rect>')
    parts.append(f'<line x1="{left}" x2="{width - 4}" y1="{base}" y2="{base}" stroke="#9ca3af"/>')
    parts.append(f'<text x="{left}" y="{height - 2}" font-size="8" fill="#6b7280">bar height = 1/rank of the '
                 'expected chunk · red = not found</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text above is escaped
