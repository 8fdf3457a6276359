"""Report cells and headers: every number carries its unit (in the header or beside it)."""
from django import template

from portal.explorer import DIMENSION_LABELS
from portal.templatetags.humanize_hours import hours

register = template.Library()

COLUMN_LABELS = {
    "period": "Period",
    "jobs": "Jobs",
    "wall_hours": "Core-hours",
    "cpu_hours": "CPU hours",
    "normalized_hours": "Normalised hours (HS06-hours)",
    "gpu_hours": "GPU hours",
} | DIMENSION_LABELS
HOURS = {"wall_hours", "cpu_hours", "normalized_hours", "gpu_hours"}
NUMERIC = HOURS | {"jobs"}


@register.filter
def column_label(name: str) -> str:
    return COLUMN_LABELS.get(name, name.replace("_", " ").capitalize())


@register.filter
def is_numeric(name: str) -> bool:
    return name in NUMERIC


@register.filter
def cell(value, name: str) -> str:
    """A table cell: hours with one decimal, jobs whole, missing dimensions as "(none)"."""
    if name in HOURS:
        return hours(value)
    if name == "jobs":
        return f"{int(value or 0):,}".replace(",", "\u2009")
    if value is None or value == "":
        return "(none)"
    return str(value)


@register.filter
def percent(value) -> str:
    return "-" if value is None else f"{float(value):.1f} %"


@register.filter
def metric_value(value, unit: str) -> str:
    """A metric total with its unit: `1 234.5 core-hours`, `87.3 %`, `12 jobs`."""
    if value is None:
        return "-"
    if unit == "%":
        return f"{float(value):.1f} %"
    if unit == "jobs":
        return f"{int(value):,} jobs".replace(",", "\u2009")
    return f"{hours(value)} {unit}"
