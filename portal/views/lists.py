"""List pages of sites, VOs, projects, science domains, people and raw usage records: the resource's
FilterSet, scope and columns (`portal/resources.py`), a limit/offset page, and CSV/JSON links to the API
list with the same query string."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse

from accounting.services.reports import QueryError
from portal import resources
from portal.listing import filtered, page_of
from portal.views.access import requires

API_LIST = {
    "sites": "api-site-list", "vos": "api-vo-list", "projects": "api-project-list",
    "science-domains": "api-science-domain-list", "people": "api-person-list", "records": "api-record-list",
    "bundles": "api-bundles",
}  # fmt: skip


def list_view(resource: resources.Resource):
    @requires(resource.access)
    def view(request):
        error = page = None
        try:
            page = page_of(resource, filtered(request.user, resource, request.GET), request.GET)
        except QueryError as exc:
            error = str(exc)
        filterset = resource.filterset(request.GET)
        fields = [
            {"name": name, "label": f.label or name.replace("_", " "), "value": request.GET.get(name, "")}
            for name, f in filterset.filters.items()
            if name != "ordering"
        ]
        query = request.GET.urlencode()
        api = reverse(API_LIST[resource.key])
        rows = []
        for row in page.rows if page else []:
            link = reverse(resource.detail_page, args=[row["id"]]) if resource.detail_page else None
            rows.append({"cells": [row[name] for name in resource.names], "link": link})
        context = {
            "resource": resource,
            "page": page,
            "rows": rows,
            "fields": fields,
            "error": error,
            "api_url": f"{api}?{query}" if query else api,
            "csv_url": f"{api}?{query}&format=csv" if query else f"{api}?format=csv",
        }
        return render(request, "portal/resource_list.html", context, status=400 if error else 200)

    view.__name__ = f"{resource.key.replace('-', '_')}_list"
    return view


site_list = list_view(resources.SITES)
vo_list = list_view(resources.VOS)
project_list = list_view(resources.PROJECTS)
science_domain_list = list_view(resources.SCIENCE_DOMAINS)
person_list = list_view(resources.PEOPLE)
record_list = list_view(resources.RECORDS)
