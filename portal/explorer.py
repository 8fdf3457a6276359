"""The usage explorer's query: the usage query of `accounting.services.reports` plus how to show it
(metric, chart type, top N with "other"). The API accepts the same parameters, so an explorer URL's
query string gives the same rows from `/api/v1/usage/`.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from accounting.services.reports import METRICS, QueryError, UsageQuery, build_query

VIEW_PARAMS = ("metric", "chart", "top")
# metric -> (label, unit)
METRIC_LABELS = {
    "wall_hours": ("Core-hours", "core-hours"),
    "cpu_hours": ("CPU hours", "CPU hours"),
    "normalized_hours": ("Normalised hours", "HS06-hours"),
    "gpu_hours": ("GPU hours", "GPU hours"),
    "jobs": ("Jobs", "jobs"),
    "cpu_efficiency": ("CPU efficiency (CPU / wall)", "%"),
}
CHARTS = {"bar": "Stacked bar", "line": "Line", "area": "Stacked area", "pie": "Pie (totals)"}
DIMENSION_LABELS = {
    "site": "Site", "resource": "Resource", "vo": "VO", "user": "Person", "project": "Project",
    "science_domain": "Science domain", "kind": "Kind",
}  # fmt: skip
OTHER = "(other)"
MAX_TOP = 1000
# Drill-down: clicking a series narrows to it and groups by the next dimension.
DRILL = {"site": "vo", "resource": "vo", "vo": "user", "science_domain": "project", "project": "user", "kind": "site"}


@dataclass(frozen=True)
class View:
    """How the rows are shown: `metric` charted, `chart` type, `top` series kept (None: all)."""

    metric: str = "wall_hours"
    chart: str = "bar"
    top: int | None = None

    @property
    def rank_metric(self) -> str:
        """Series are ranked by the metric, by core-hours for efficiency (a ratio does not add up)."""
        return "wall_hours" if self.metric == "cpu_efficiency" else self.metric

    @property
    def label(self) -> str:
        return METRIC_LABELS[self.metric][0]

    @property
    def unit(self) -> str:
        return METRIC_LABELS[self.metric][1]


def parse(params, **kwargs) -> tuple[UsageQuery, View]:
    """The usage query and the view from request parameters; QueryError names a bad parameter."""
    query = build_query(params, extra_allowed=VIEW_PARAMS, **kwargs)
    metric = params.get("metric") or "wall_hours"
    if metric not in METRIC_LABELS:
        raise QueryError("metric", f"must be one of {', '.join(METRIC_LABELS)}")
    chart = params.get("chart") or "bar"
    if chart not in CHARTS:
        raise QueryError("chart", f"must be one of {', '.join(CHARTS)}")
    top = None
    raw = params.get("top") or ""
    if raw:
        try:
            top = int(raw)
        except ValueError:
            raise QueryError("top", f"not a whole number: {raw!r}") from None
        if not 1 <= top <= MAX_TOP:
            raise QueryError("top", f"must be between 1 and {MAX_TOP}")
    return query, View(metric=metric, chart=chart, top=top)


def series_key(row: dict, query: UsageQuery) -> tuple:
    return tuple(row.get(name) for name in query.group_by)


def _sort_key(key: tuple) -> tuple:
    return tuple("" if v is None else str(v) for v in key)


def top_values(rows: list[list], query: UsageQuery, view: View) -> list[list]:
    """Keep the `top` series with the largest totals of the ranked metric over the whole range; the
    others are summed, per period, into one series whose dimensions all read "(other)".

    Rows are lists in `query.columns()` order (as `portal.exports.usage_values` reads them); the rows
    merged into "(other)" are never turned into dicts."""
    if not view.top or not query.group_by:
        return rows
    columns = query.columns()
    dims = [columns.index(name) for name in query.group_by]
    first, last = dims[0], dims[-1] + 1
    rank = columns.index(view.rank_metric)
    totals: dict[tuple, float] = defaultdict(float)
    for row in rows:
        totals[tuple(row[first:last])] += row[rank]
    if len(totals) <= view.top:
        return rows
    keep = set(sorted(totals, key=lambda k: (-totals[k], _sort_key(k)))[: view.top])
    metrics = range(last, len(columns))
    has_period = query.period != "total"
    kept: list[list] = []
    other: dict[str | None, list] = {}
    for row in rows:
        if tuple(row[first:last]) in keep:
            kept.append(row)
            continue
        period = row[0] if has_period else None
        merged = other.get(period)
        if merged is None:
            merged = other[period] = list(row)
            merged[first:last] = [OTHER] * (last - first)
            continue
        for i in metrics:
            merged[i] += row[i]
    for merged in other.values():
        for i in metrics[1:]:
            merged[i] = round(merged[i], 6)
    if not has_period:
        return kept + list(other.values())
    out: list[list] = []
    by_period: dict[str, list[list]] = defaultdict(list)
    for row in kept:
        by_period[row[0]].append(row)
    for period in sorted(set(by_period) | set(other)):
        out.extend(by_period.get(period, []))
        if period in other:
            out.append(other[period])
    return out


def apply_top(rows, query: UsageQuery, view: View) -> list[dict]:
    """`top_values` for rows as dicts by column name."""
    columns = query.columns()
    values = [[row[name] for name in columns] for row in rows]
    return [dict(zip(columns, row, strict=True)) for row in top_values(values, query, view)]


def explorer_rows(query: UsageQuery, view: View, base=None) -> list[dict]:
    """The rows the explorer and the API show for the query: usage rows, top N applied."""
    from portal.exports import usage_values

    columns = query.columns()
    return [dict(zip(columns, row, strict=True)) for row in top_values(list(usage_values(query, base)), query, view)]


def metric_value(values: dict, metric: str) -> float | None:
    """A metric of summed values; CPU efficiency in percent (None when there are no core-hours)."""
    if metric == "cpu_efficiency":
        wall = values["wall_hours"]
        return round(100.0 * values["cpu_hours"] / wall, 2) if wall else None
    return values[metric]


def series_label(key: tuple) -> str:
    return " / ".join("(none)" if v is None else str(v) for v in key) if key else "all"


def chart_data(rows: list[dict], query: UsageQuery, view: View) -> dict:
    """The JSON the page's Plotly script draws: periods on x, one series per group, values of the
    metric; totals per series for pie charts. Series are ordered by total, "(other)" last."""
    periods = sorted({row["period"] for row in rows}) if query.period != "total" else ["total"]
    index = {p: i for i, p in enumerate(periods)}
    sums: dict[tuple, list[dict]] = {}
    totals: dict[tuple, dict] = {}
    for row in rows:
        key = series_key(row, query)
        points = sums.get(key)
        if points is None:  # (not setdefault: that would build a series' points for every row)
            points = sums[key] = [dict.fromkeys(METRICS, 0.0) for _ in periods]
            totals[key] = dict.fromkeys(METRICS, 0.0)
        total = totals[key]
        point = points[index[row.get("period", "total")]]
        for name in METRICS:
            point[name] += row[name]
            total[name] += row[name]
    order = sorted(sums, key=lambda k: (k and k[0] == OTHER, -totals[k][view.rank_metric], _sort_key(k)))
    series = [
        {
            "name": series_label(key),
            "key": dict(zip(query.group_by, key, strict=True)),
            "values": [metric_value(p, view.metric) for p in sums[key]],
            "total": metric_value(totals[key], view.metric),
        }
        for key in order
    ]
    return {
        "periods": periods,
        "period": query.period,
        "series": series,
        "metric": view.metric,
        "label": view.label,
        "unit": view.unit,
        "chart": view.chart,
    }


def drill_params(params, key: dict, people_ok) -> list[tuple[str, str]] | None:
    """The query of the drill-down into one series: its dimension values become filters and the
    explorer groups by the next dimension (site -> VO -> person). None when there is nowhere to go;
    `people_ok(key)` says whether the user may see the people below that series."""
    if not key or any(v is None or v == OTHER for v in key.values()):
        return None
    last = list(key)[-1]
    nxt = DRILL.get(last)
    if nxt == "user" and not people_ok(key):
        nxt = None
    if nxt is None:
        return None
    items = [(k, v) for k, values in params.lists() if k not in key and k != "group_by" for v in values]
    items += [(dim, str(value)) for dim, value in key.items()]
    items.append(("group_by", nxt))
    return items
