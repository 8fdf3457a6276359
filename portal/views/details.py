"""Detail pages of a site, a VO, a project, a science domain and a person: charts and tables of their
reported usage over a month-aligned range (`start`, `end`; default the last 12 months with data), each
with CSV, API and explorer links. Person-level panels appear only where the role may see them."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import Http404
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from accounting.models import VO, Person, Project, ScienceDomain, Site
from accounting.services.reports import QueryError, build_query
from portal import panels
from portal.roles import scope_of
from portal.scope import visible_to
from portal.views.access import requires

RANGE_PARAMS = ("start", "end")


@dataclass(frozen=True)
class PanelSpec:
    title: str
    group_by: str
    period: str = "total"
    chart: str = ""  # "", "bar" or "pie"
    top: int | None = None
    people: bool = False  # person-level: only built when the role may see people


@dataclass(frozen=True)
class Kind:
    model: type
    dimension: str  # the usage filter that selects this entity
    title: str
    panels: tuple[PanelSpec, ...]
    related: tuple[tuple[str, str], ...] = ()  # (label, attribute) shown under the title


KINDS = {
    "site": Kind(Site, "site", "Site", (
        PanelSpec("Core-hours per month by VO", "vo", "month", "bar", top=10),
        PanelSpec("By VO", "vo", chart="pie"),
        PanelSpec("By resource", "resource"),
        PanelSpec("By science domain", "science_domain"),
    ), related=(("Facility", "facility"),)),
    "vo": Kind(VO, "vo", "VO", (
        PanelSpec("Core-hours per month by site", "site", "month", "bar", top=10),
        PanelSpec("By site", "site", chart="pie"),
        PanelSpec("By project", "project"),
        PanelSpec("By person", "user", people=True),
    ), related=(("Default science domain", "field_of_science"),)),
    "project": Kind(Project, "project", "Project", (
        PanelSpec("Core-hours per month by site", "site", "month", "bar", top=10),
        PanelSpec("By VO", "vo"),
        PanelSpec("By person", "user", people=True),
    ), related=(("Science domain", "field_of_science"), ("PI", "pi"), ("Institution", "institution"))),
    "science_domain": Kind(ScienceDomain, "science_domain", "Science domain", (
        PanelSpec("Core-hours per month by VO", "vo", "month", "bar", top=10),
        PanelSpec("By VO", "vo", chart="pie"),
        PanelSpec("By project", "project"),
    )),
    "person": Kind(Person, "user", "Person", (
        PanelSpec("Core-hours per month by VO", "vo", "month", "bar"),
        PanelSpec("By site", "site"),
        PanelSpec("By project", "project"),
    )),
}  # fmt: skip


def _range(request) -> dict[str, str]:
    unknown = [name for name in request.GET if name not in RANGE_PARAMS]
    if unknown:
        raise QueryError(unknown[0], "unknown parameter")
    if request.GET.get("start") or request.GET.get("end"):
        query = build_query({k: request.GET.getlist(k) for k in RANGE_PARAMS})
        return {"start": query.start.isoformat(), "end": query.end.isoformat()}
    start, end = panels.last_months(12)
    return {"start": start.isoformat(), "end": end.isoformat()}


def categories_url(site_name: str) -> str | None:
    """The categories page for the site, once the categories engine provides it."""
    try:
        return f"{reverse('categories')}?{urlencode({'site': site_name})}"
    except NoReverseMatch:
        return None


def detail_view(key: str):
    kind = KINDS[key]

    @requires("people" if key == "person" else "aggregates")
    def view(request, pk: int):
        queryset = visible_to(request.user, kind.model.objects.all())
        entity = queryset.filter(pk=pk).first()
        if entity is None:
            raise Http404(f"no such {kind.title.lower()}")
        try:
            window = _range(request)
        except QueryError as error:
            return render(request, "portal/entity_detail.html", {"kind": kind, "entity": entity, "error": str(error)}, status=400)
        scope = scope_of(request.user)
        built = []
        for n, spec in enumerate(kind.panels):
            if spec.people and not (scope.all_people or (scope.people and (key != "vo" or pk in scope.person_vo_ids))):
                continue
            params = window | {"period": spec.period, "group_by": spec.group_by, kind.dimension: entity.name}
            if spec.top:
                params["top"] = spec.top
            panel = panels.build(request.user, spec.title, params, chart_id=f"chart-{n}" if spec.chart else "", with_drill=True)
            if panel.chart:
                panel.chart["chart"] = spec.chart
            if panel.status == 200:
                built.append(panel)
        related = [(label, getattr(entity, attr)) for label, attr in kind.related]
        context = {
            "kind": kind,
            "key": key,
            "entity": entity,
            "related": related,
            "panels": built,
            "window": window,
            "explorer_query": urlencode({kind.dimension: entity.name}),
            "categories_url": categories_url(entity.name) if key == "site" else None,
        }
        return render(request, "portal/entity_detail.html", context)

    view.__name__ = f"{key}_detail"
    return view


site_detail = detail_view("site")
vo_detail = detail_view("vo")
project_detail = detail_view("project")
science_domain_detail = detail_view("science_domain")
person_detail = detail_view("person")
