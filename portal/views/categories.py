"""The categories page: the eight categories of pilot time over time as a stacked chart, and a table."""
from datetime import timedelta
from urllib.parse import urlencode

from django.db.models import Max
from django.shortcuts import render
from django.urls import reverse

from accounting.choices import Category
from accounting.services.categories import build_category_query, category_rows
from accounting.services.reports import QueryError
from portal.api.categories import visible_categories
from portal.views.access import requires


@requires("aggregates")
def categories_page(request):
    base = visible_categories(request.user)
    params = request.GET.copy()
    if not params.get("start") and not params.get("end"):
        last = base.aggregate(last=Max("day"))["last"]
        if last:
            params["end"] = (last + timedelta(days=1)).isoformat()
            params["start"] = (last - timedelta(days=30)).isoformat()
    params.setdefault("period", "day")
    error, rows, query = None, [], None
    try:
        query = build_category_query(params)
        rows = list(category_rows(query, base))
    except QueryError as exc:
        error = str(exc)
    periods = sorted({row.get("period", "total") for row in rows})
    labels = dict(Category.choices)
    series = []
    for category in Category.values:
        values = {row.get("period", "total"): 0.0 for row in rows}
        for row in rows:
            if row["category"] == category:
                values[row.get("period", "total")] += row["core_hours"]
        series.append({"name": labels[category], "values": [values.get(p, 0.0) for p in periods]})
    totals = {labels[c]: sum(r["core_hours"] for r in rows if r["category"] == c) for c in Category.values}
    csv_url = None
    if query:
        keep = {k: v for k, v in params.items() if k in ("start", "end", "period", "site", "resource", "vo", "group_by")}
        csv_url = f"{reverse('api-categories')}?{urlencode(keep | {'format': 'csv'})}"
    return render(request, "portal/categories.html", {
        "rows": rows, "error": error, "query": query, "params": params, "csv_url": csv_url, "totals": totals,
        "grand_total": sum(totals.values()), "estimated": any(r["estimated"] for r in rows),
        "chart": {"periods": periods, "series": series},
        "periods_choices": ["day", "week", "month", "quarter", "year"],
    })  # fmt: skip
