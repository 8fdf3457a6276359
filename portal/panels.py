"""Report panels: one usage query shown as a chart and a table, with its CSV, API and explorer links.

The dashboard, the detail pages and the explorer build their charts and tables here, from the same rows
the API answers for the panel's query string (`portal/explorer.py`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from urllib.parse import urlencode

from django.db.models import Max
from django.http import QueryDict
from django.urls import reverse

from accounting.models import VO, DailyUsage, Person, Project, ScienceDomain, Site
from accounting.services.reports import QueryError
from portal import explorer
from portal.rollups import month_of, next_month
from portal.scope import PersonLevelDenied, usage_base

# Rows a page's table shows; the chart, CSV and API carry every row. Rendering a table row costs the
# template ~0.2 ms, so 500 rows were half of a day x person explorer page (bench/portal.py).
TABLE_ROWS = 100
DETAIL_PAGES = {
    "site": (Site, "site-detail"),
    "vo": (VO, "vo-detail"),
    "project": (Project, "project-detail"),
    "science_domain": (ScienceDomain, "science-domain-detail"),
    "user": (Person, "person-detail"),
}


def latest_day() -> date | None:
    return DailyUsage.objects.aggregate(last=Max("day"))["last"]


def last_months(count: int, last: date | None = None) -> tuple[date, date]:
    """[first, end) of the `count` calendar months ending with the month of `last` (default: the
    latest day with data, else today), month-aligned so the month rollup can answer."""
    last = last or latest_day() or date.today()
    end = next_month(last)
    first = end
    for _ in range(count):
        first = month_of(first - timedelta(days=1))
    return first, end


def query_string(params: dict | list) -> QueryDict:
    return QueryDict(urlencode(params, doseq=True))


@dataclass
class Panel:
    """A usage query with its rows, chart data and links; `error` when the query was refused."""

    title: str
    params: QueryDict
    chart_id: str = ""
    rows: list[dict] = field(default_factory=list)
    chart: dict | None = None
    columns: list[str] = field(default_factory=list)
    group_by: list[str] = field(default_factory=list)
    view: explorer.View | None = None
    links: dict[str, dict[str, str]] = field(default_factory=dict)
    drill: list[str | None] = field(default_factory=list)
    error: str = ""
    status: int = 200

    @property
    def encoded(self) -> str:
        return self.params.urlencode()

    @property
    def csv_url(self) -> str:
        return f"{reverse('api-usage')}?{self.encoded}&format=csv"

    @property
    def api_url(self) -> str:
        return f"{reverse('api-usage')}?{self.encoded}"

    @property
    def explorer_url(self) -> str:
        return f"{reverse('explorer')}?{self.encoded}"

    @property
    def total(self) -> float | None:
        if self.view is None:
            return None
        sums = {name: sum(r[name] for r in self.rows) for name in explorer.METRICS}
        return explorer.metric_value(sums, self.view.metric)

    @property
    def table_rows(self) -> int:
        return TABLE_ROWS

    @property
    def table_truncated(self) -> bool:
        return len(self.rows) > TABLE_ROWS

    def table(self) -> list[dict]:
        """Rows for the template (the first TABLE_ROWS; CSV and API have them all): dimension cells with
        their detail links, metric cells."""
        out = []
        rows = self.rows[:TABLE_ROWS]
        for row, drill in zip(rows, self.drill or [None] * len(rows), strict=False):
            cells = []
            for name in self.columns:
                value = row.get(name)
                link = self.links.get(name, {}).get(value) if name in self.group_by else None
                cells.append({"name": name, "value": value, "link": link})
            efficiency = explorer.metric_value(row, "cpu_efficiency")
            out.append({"cells": cells, "drill": drill, "efficiency": efficiency})
        return out


def detail_links(rows: list[dict], dimensions: list[str]) -> dict[str, dict[str, str]]:
    """Name -> detail page URL for the dimension values in the rows (one query per dimension)."""
    links: dict[str, dict[str, str]] = {}
    for name in dimensions:
        if name not in DETAIL_PAGES:
            continue
        model, url_name = DETAIL_PAGES[name]
        values = {row.get(name) for row in rows} - {None, explorer.OTHER}
        if not values:
            continue
        pks = model.objects.filter(name__in=values).values_list("name", "pk")
        links[name] = {value: reverse(url_name, args=[pk]) for value, pk in pks}
    return links


def build(user, title: str, params, *, chart_id: str = "", with_drill: bool = False) -> Panel:
    """Run the panel's usage query for `user` (scoped) and shape it for a page."""
    params = params if isinstance(params, QueryDict) else query_string(params)
    panel = Panel(title=title, params=params, chart_id=chart_id)
    try:
        query, view = explorer.parse(params)
        base = usage_base(user, query)
    except QueryError as error:
        panel.error, panel.status = str(error), 400
        return panel
    except PersonLevelDenied as error:
        panel.error, panel.status = f"{error.parameter}: {error.message}", 403
        return panel
    panel.view = view
    panel.group_by = query.group_by
    panel.columns = query.columns()
    panel.rows = explorer.explorer_rows(query, view, base)
    if chart_id:
        panel.chart = explorer.chart_data(panel.rows, query, view)
    panel.links = detail_links(panel.rows[:TABLE_ROWS], query.group_by)
    if with_drill:
        from portal.roles import scope_of

        scope = scope_of(user)
        managed = set(VO.objects.filter(pk__in=scope.person_vo_ids or ()).values_list("name", flat=True)) if scope.people else set()

        def people_ok(key: dict) -> bool:
            """Admins see everyone; a VO manager only below a VO they manage (or a project, already scoped)."""
            if scope.all_people:
                return True
            vos = [key["vo"]] if "vo" in key else query.filters.get("vo", [])
            return scope.people and ("vo" not in key or set(vos) <= managed)

        def drill_url(key: dict) -> str | None:
            items = explorer.drill_params(params, key, people_ok)
            return f"{reverse('explorer')}?{urlencode(items)}" if items is not None else None

        if panel.chart:
            for series in panel.chart["series"]:
                series["drill"] = drill_url(series["key"])
        panel.drill = [
            drill_url(dict(zip(query.group_by, explorer.series_key(r, query), strict=True))) for r in panel.rows[:TABLE_ROWS]
        ]
    return panel
