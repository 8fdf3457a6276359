"""Reported usage: summary rows aggregated by period and dimensions (CONTRACT.md `GET /api/v1/usage/`).

One query definition serves the pages, the API and the CSV exports, so the same parameters give the
same numbers everywhere.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.conf import settings
from django.db.models import F, Sum, Value
from django.db.models.functions import TruncMonth, TruncQuarter, TruncWeek, TruncYear

from accounting.choices import REPORTED_DESIGNATIONS, Designation
from accounting.models import DailyUsage

PERIODS = ("day", "week", "month", "quarter", "year", "total")
DIMENSIONS = {
    "site": "site__name",
    "resource": "resource__name",
    "vo": "vo__name",
    "user": "person__name",
    "project": "project__name",
    "science_domain": "science_domain__name",
    "kind": "kind",
}
DESIGNATIONS = ("reported", "all", *Designation.values)
METRICS = ("jobs", "wall_hours", "cpu_hours", "normalized_hours", "gpu_hours")
TRUNC = {"week": TruncWeek, "month": TruncMonth, "quarter": TruncQuarter, "year": TruncYear}


class QueryError(ValueError):
    """A bad query parameter; `parameter` names it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter
        self.message = message


@dataclass
class UsageQuery:
    start: date
    end: date  # exclusive
    period: str = "month"
    group_by: list[str] = field(default_factory=list)
    filters: dict[str, list[str]] = field(default_factory=dict)
    designation: str = "reported"

    def columns(self) -> list[str]:
        return ([] if self.period == "total" else ["period"]) + self.group_by + list(METRICS)


def parse_date(parameter: str, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise QueryError(parameter, f"not a date (YYYY-MM-DD): {value!r}") from None


def build_query(params, *, allowed_group_by=tuple(DIMENSIONS), default_days: int = 365, extra_allowed=()) -> UsageQuery:
    """A UsageQuery from request parameters (a QueryDict or a dict of lists); QueryError on anything wrong."""
    known = {"start", "end", "period", "group_by", "designation", "format", *DIMENSIONS, *extra_allowed}
    for name in params:
        if name not in known:
            raise QueryError(name, "unknown parameter")

    def get(name: str, default: str = "") -> str:
        values = params.getlist(name) if hasattr(params, "getlist") else params.get(name, [])
        if isinstance(values, str):
            values = [values]
        return values[-1] if values else default

    def get_list(name: str) -> list[str]:
        values = params.getlist(name) if hasattr(params, "getlist") else params.get(name, [])
        if isinstance(values, str):
            values = [values]
        return [v for v in values if v]

    end = parse_date("end", get("end")) if get("end") else None
    start = parse_date("start", get("start")) if get("start") else None
    if end is None:
        end = (start + timedelta(days=default_days)) if start else date.today() + timedelta(days=1)
    if start is None:
        start = end - timedelta(days=default_days)
    if end <= start:
        raise QueryError("end", f"must be after start ({start})")
    period = get("period", "month")
    if period not in PERIODS:
        raise QueryError("period", f"must be one of {', '.join(PERIODS)}")
    if period == "day" and (end - start).days > settings.GRIDLEDGER_MAX_DAY_RANGE:
        raise QueryError("end", f"period=day allows at most {settings.GRIDLEDGER_MAX_DAY_RANGE} days")
    group_by: list[str] = []
    for value in get_list("group_by"):
        for name in value.split(","):
            name = name.strip()
            if name not in allowed_group_by:
                raise QueryError("group_by", f"unknown dimension {name!r}; use {', '.join(allowed_group_by)}")
            if name not in group_by:
                group_by.append(name)
    designation = get("designation", "reported")
    if designation not in DESIGNATIONS:
        raise QueryError("designation", f"must be one of {', '.join(DESIGNATIONS)}")
    filters = {name: get_list(name) for name in DIMENSIONS if get_list(name)}
    return UsageQuery(start=start, end=end, period=period, group_by=group_by, filters=filters, designation=designation)


def usage_queryset(query: UsageQuery, base=None):
    """The aggregated rows as a queryset of dicts, ordered by period then dimensions."""
    qs = (base if base is not None else DailyUsage.objects.all()).filter(day__gte=query.start, day__lt=query.end)
    if query.designation == "reported":
        qs = qs.filter(designation__in=REPORTED_DESIGNATIONS)
    elif query.designation != "all":
        qs = qs.filter(designation=query.designation)
    for name, values in query.filters.items():
        qs = qs.filter(**{f"{DIMENSIONS[name]}__in": values})
    annotations = {}
    if query.period == "day":
        annotations["period"] = F("day")
    elif query.period != "total":
        annotations["period"] = TRUNC[query.period]("day")
    keys = ([] if query.period == "total" else ["period"]) + [DIMENSIONS[name] for name in query.group_by]
    sums = {name: Sum(name) for name in METRICS}
    if not keys:  # one grand total: group by a constant
        return qs.annotate(total=Value(1)).values("total").annotate(**sums).order_by()
    return qs.annotate(**annotations).values(*keys).annotate(**sums).order_by(*keys)


def usage_rows(query: UsageQuery, base=None) -> Iterator[dict]:
    """Rows with the CONTRACT.md columns in order; periods as ISO dates, hours rounded to 6 decimals."""
    columns = query.columns()
    for row in usage_queryset(query, base).iterator(chunk_size=5000):
        out = {}
        for name in columns:
            value = row.get(DIMENSIONS.get(name, name))
            if name == "period":
                value = value.isoformat() if hasattr(value, "isoformat") else str(value)[:10]
                value = value[:10]
            elif name in METRICS[1:]:
                value = round(float(value or 0.0), 6)
            elif name == "jobs":
                value = int(value or 0)
            out[name] = value
        yield out
