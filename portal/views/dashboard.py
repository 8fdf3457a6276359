"""The landing dashboard: the latest month and the last 12 months of reported core-hours, top sites,
VOs and science domains, and the pilot-time categories when the engine provides them."""
from collections import defaultdict
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import QueryDict
from django.shortcuts import render

from accounting.choices import Category
from portal import panels
from portal.exporters import categories_engine
from portal.roles import scope_of
from portal.views.access import REASONS, forbidden

TOP = 10


def category_totals(start, end) -> list[dict] | None:
    """Core- and GPU-hours per pilot-time category over [start, end), None when not available yet."""
    engine = categories_engine()
    if engine is None:
        return None
    query = engine.build_category_query(QueryDict(urlencode({"start": start, "end": end, "period": "total"})))
    totals: dict[str, dict] = defaultdict(lambda: {"core_hours": 0.0, "gpu_hours": 0.0})
    for row in engine.category_rows(query):
        totals[row["category"]]["core_hours"] += float(row.get("core_hours") or 0)
        totals[row["category"]]["gpu_hours"] += float(row.get("gpu_hours") or 0)
    grand = sum(t["core_hours"] for t in totals.values())
    return [
        {"category": name, "label": label, **totals[name], "share": 100.0 * totals[name]["core_hours"] / grand if grand else None}
        for name, label in Category.choices
    ]


def dashboard(request):
    """Anonymous visitors see it only with GRIDLEDGER_PUBLIC_SUMMARY on; a user without a role gets 403."""
    scope = scope_of(request.user)
    if not request.user.is_authenticated and not settings.GRIDLEDGER_PUBLIC_SUMMARY:
        return redirect_to_login(request.get_full_path())
    if not scope.aggregates:
        return forbidden(request, REASONS["aggregates"])
    last = panels.latest_day()
    month_start, month_end = panels.last_months(1, last)
    year_start, year_end = panels.last_months(12, last)
    window = {"start": year_start.isoformat(), "end": year_end.isoformat()}
    user = request.user
    month = panels.build(user, "Latest month", {"start": month_start.isoformat(), "end": month_end.isoformat(), "period": "total"})
    year = panels.build(user, "Core-hours per month, last 12 months", window | {"period": "month"}, chart_id="chart-months")
    tops = [
        panels.build(user, title, window | {"period": "total", "group_by": dim, "top": TOP}, chart_id=f"chart-top-{dim}", with_drill=True)
        for title, dim in (("Top sites", "site"), ("Top VOs", "vo"), ("Top science domains", "science_domain"))
    ]
    for panel in tops:
        if panel.chart:
            panel.chart["chart"] = "pie"
    context = {
        "last_day": last,
        "month": month,
        "month_start": month_start,
        "year": year,
        "tops": tops,
        "window": window,
        "categories": category_totals(year_start, year_end),
    }
    return render(request, "portal/dashboard.html", context)
