"""The usage-by-site page: a stacked bar chart per day, the same rows as a table, and a CSV link."""
from datetime import timedelta
from urllib.parse import urlencode

from django.db.models import Max
from django.shortcuts import render
from django.urls import reverse

from accounting.models import DailyUsage
from accounting.services.reports import QueryError, UsageQuery, build_query, usage_rows
from portal.scope import usage_base
from portal.views.access import requires


def default_range(params) -> dict:
    """Start/end defaulting to the last 31 days that have data (so the demo month shows at once)."""
    params = params.copy()
    if not params.get("end") and not params.get("start"):
        last = DailyUsage.objects.aggregate(last=Max("day"))["last"]
        if last:
            params["end"] = (last + timedelta(days=1)).isoformat()
            params["start"] = (last - timedelta(days=30)).isoformat()
    return params


@requires("aggregates")
def usage_by_site(request):
    params = default_range(request.GET)
    error = None
    try:
        query = build_query(params, default_days=31)
        query = UsageQuery(start=query.start, end=query.end, period="day", group_by=["site"])
        rows = list(usage_rows(query, usage_base(request.user, query)))
    except QueryError as exc:
        error, rows, query = str(exc), [], None
    sites = sorted({row["site"] or "(unknown site)" for row in rows})
    days = sorted({row["period"] for row in rows})
    series = {site: dict.fromkeys(days, 0.0) for site in sites}
    for row in rows:
        series[row["site"] or "(unknown site)"][row["period"]] = row["wall_hours"]
    chart = {"days": days, "series": [{"name": s, "values": list(series[s].values())} for s in sites]}
    csv_url = None
    if query:
        qs = urlencode({"start": query.start, "end": query.end, "period": "day", "group_by": "site", "format": "csv"})
        csv_url = f"{reverse('api-usage')}?{qs}"
    totals = {
        "wall_hours": sum(r["wall_hours"] for r in rows),
        "cpu_hours": sum(r["cpu_hours"] for r in rows),
        "jobs": sum(r["jobs"] for r in rows),
    }
    return render(
        request,
        "portal/usage_by_site.html",
        {
            "query": query,
            "error": error,
            "rows": rows,
            "chart": chart,
            "csv_url": csv_url,
            "totals": totals,
            "start": params.get("start", ""),
            "end": params.get("end", ""),
        },
    )
