"""The usage explorer: metric, group by, period, range, filters on every dimension, chart type and top N,
all in the URL; the same query string answers from `/api/v1/usage/`. Clicking a series drills down."""
from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.db.models import Min
from django.shortcuts import redirect, render
from django.urls import reverse

from accounting.choices import RecordKind
from accounting.models import VO, DailyUsage, Project, Resource, ScienceDomain, Site
from accounting.services.reports import DESIGNATIONS, PERIODS
from portal import explorer, panels
from portal.roles import scope_of
from portal.views.access import requires

DEFAULTS = {"group_by": "site", "metric": "wall_hours", "chart": "bar", "top": "10"}
CANONICAL = ("start", "end", "period", *DEFAULTS)
SHORT_DATA_DAYS = 92
DATALISTS = {"site": Site, "resource": Resource, "vo": VO, "project": Project, "science_domain": ScienceDomain}
DATALIST_LIMIT = 2000


def default_range() -> dict[str, str]:
    """The last 12 months by month; when the data span less than ~3 months, its days by day."""
    last = panels.latest_day()
    first = DailyUsage.objects.aggregate(first=Min("day"))["first"] if last else None
    if last and first and (last - first).days < SHORT_DATA_DAYS:
        start = max(first, last - timedelta(days=61))
        return {"start": start.isoformat(), "end": (last + timedelta(days=1)).isoformat(), "period": "day"}
    start, end = panels.last_months(12, last)
    return {"start": start.isoformat(), "end": end.isoformat(), "period": "month"}


def canonical_redirect(request):
    """Fill in the defaults so the address bar always holds the whole state (and works against the API)."""
    items = [(k, v) for k, values in request.GET.lists() for v in values]
    defaults = DEFAULTS | (default_range() if not {"start", "end", "period"} <= set(request.GET) else {})
    items += [(k, v) for k, v in defaults.items() if k not in request.GET]
    return redirect(f"{reverse('explorer')}?{urlencode(items)}")


@requires("aggregates")
def explorer_page(request):
    if any(name not in request.GET for name in CANONICAL):
        return canonical_redirect(request)
    scope = scope_of(request.user)
    panel = panels.build(request.user, "Usage", request.GET, chart_id="explorer-chart", with_drill=True)
    dimensions = {k: v for k, v in explorer.DIMENSION_LABELS.items() if k != "user" or scope.people}
    filters = [
        {"name": name, "label": label, "values": request.GET.getlist(name) + [""], "datalist": name in DATALISTS}
        for name, label in dimensions.items()
    ]
    datalists = {
        name: model.objects.order_by("name").values_list("name", flat=True)[:DATALIST_LIMIT]
        for name, model in DATALISTS.items()
    }
    group_by = request.GET.get("group_by", "")
    context = {
        "panel": panel,
        "params": request.GET,
        "dimensions": dimensions,
        "group_by": group_by,
        "group_by_is_custom": bool(group_by) and group_by not in dimensions,
        "filters": filters,
        "datalists": datalists,
        "kinds": RecordKind.values,
        "periods": [p for p in PERIODS],
        "designations": DESIGNATIONS,
        "metrics": explorer.METRIC_LABELS,
        "charts": explorer.CHARTS,
    }
    return render(request, "portal/explorer.html", context, status=panel.status)
