"""Formatting filters for the eval dashboards."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def get(mapping, key):
    """{{ metrics|get:"mrr@10" }}: dict keys Django's dot lookup cannot spell."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def num(value, digits=3):
    """A metric with fixed decimals, or an en dash when absent."""
    if value is None or value == "":
        return "–"
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return value


@register.filter
def pct(value):
    return "–" if value is None else f"{100 * float(value):.1f}%"


@register.filter
def ms(value):
    return "–" if value is None else f"{float(value):.1f} ms"


@register.filter
def filesize(value):
    if value is None:
        return "–"
    size = float(value)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


@register.filter
def delta(value, digits=3):
    """A signed difference, coloured: green when higher is better and it went up."""
    if value is None:
        return "–"
    v = float(value)
    cls = "up" if v > 0 else "down" if v < 0 else "flat"
    return format_html('<span class="delta {}">{}{}</span>', cls, "+" if v > 0 else "", f"{v:.{int(digits)}f}")


@register.filter
def delta_ms(value):
    """A latency difference: lower is better, so a rise is shown as a regression."""
    if value is None:
        return "–"
    v = float(value)
    cls = "down" if v > 0 else "up" if v < 0 else "flat"
    return format_html('<span class="delta {}">{}{} ms</span>', cls, "+" if v > 0 else "", f"{v:.1f}")


@register.filter
def sortval(value):
    """A value for data-sort: empty (sorts last) for None."""
    return "" if value is None else value
