"""One FilterSet per resource: the list page, the API list and its CSV export all filter through it,
with the same parameter names (a page's query string works against the API, and the reverse).

Names follow the usage query where they mean the same thing (`site`, `vo`, `user`, `project`,
`science_domain`, `kind`, `start`, `end`); name filters are repeatable (`vo=cms&vo=atlas`). Unknown
parameters and bad values raise `QueryError` naming the parameter, as `GET /api/v1/usage/` does.
"""
from __future__ import annotations

from datetime import UTC, datetime, time

import django_filters as filters
from django import forms
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from accounting.models import VO, DailyUsage, Person, Project, ScienceDomain, Site, UsageRecord
from accounting.services.reports import QueryError
from ingest.models import Bundle

# Parameters every list accepts besides its filters: output format and limit/offset pagination.
COMMON_PARAMS = frozenset({"format", "limit", "offset"})


class ValuesWidget(forms.Widget):
    """Every value of a repeated parameter (`vo=a&vo=b`), empty ones dropped."""

    def value_from_datadict(self, data, files, name):
        values = data.getlist(name) if hasattr(data, "getlist") else data.get(name)
        if values is None:
            return []
        if isinstance(values, str):
            values = [values]
        return [v for v in values if v]


class ValuesField(forms.Field):
    widget = ValuesWidget

    def clean(self, value):
        return list(value or [])


@extend_schema_field(OpenApiTypes.STR)
class NamesFilter(filters.Filter):
    """Exact match on any of the values given (repeatable parameter)."""

    field_class = ValuesField

    def filter(self, qs, value):
        if not value:
            return qs
        return qs.filter(**{f"{self.field_name}__in": value})


def _day_start(day) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


class StrictFilterSet(filters.FilterSet):
    """A FilterSet that refuses unknown parameters and reports the first bad one by name."""

    def check(self) -> None:
        for name in self.data:
            if name not in self.filters and name not in COMMON_PARAMS:
                raise QueryError(name, "unknown parameter")
        if not self.is_valid():
            name, errors = next(iter(self.errors.items()))
            raise QueryError(name, " ".join(str(e) for e in errors))

    def filtered(self):
        """The filtered queryset; QueryError on a bad parameter."""
        self.check()
        return self.qs


class SiteFilterSet(StrictFilterSet):
    name = NamesFilter(field_name="name")
    q = filters.CharFilter(field_name="name", lookup_expr="icontains", label="name contains")
    facility = NamesFilter(field_name="facility")
    ordering = filters.OrderingFilter(fields=("name", "facility"))

    class Meta:
        model = Site
        fields: list[str] = []


class VOFilterSet(StrictFilterSet):
    name = NamesFilter(field_name="name")
    q = filters.CharFilter(field_name="name", lookup_expr="icontains", label="name contains")
    science_domain = NamesFilter(field_name="field_of_science__name", label="default science domain")
    ordering = filters.OrderingFilter(fields=("name",))

    class Meta:
        model = VO
        fields: list[str] = []


class ProjectFilterSet(StrictFilterSet):
    name = NamesFilter(field_name="name")
    q = filters.CharFilter(field_name="name", lookup_expr="icontains", label="name contains")
    science_domain = NamesFilter(field_name="field_of_science__name")
    pi = filters.CharFilter(field_name="pi", lookup_expr="icontains", label="PI contains")
    institution = filters.CharFilter(field_name="institution", lookup_expr="icontains", label="institution contains")
    ordering = filters.OrderingFilter(fields=("name", "pi", "institution"))

    class Meta:
        model = Project
        fields: list[str] = []


class ScienceDomainFilterSet(StrictFilterSet):
    name = NamesFilter(field_name="name")
    q = filters.CharFilter(field_name="name", lookup_expr="icontains", label="name contains")
    ordering = filters.OrderingFilter(fields=("name",))

    class Meta:
        model = ScienceDomain
        fields: list[str] = []


class PersonFilterSet(StrictFilterSet):
    name = NamesFilter(field_name="name", label="DN or token subject")
    q = filters.CharFilter(field_name="name", lookup_expr="icontains", label="DN contains")
    vo = NamesFilter(method="filter_vo", label="has usage in VO")
    ordering = filters.OrderingFilter(fields=("name",))

    class Meta:
        model = Person
        fields: list[str] = []

    def filter_vo(self, qs, name, value):
        if not value:
            return qs
        return qs.filter(pk__in=DailyUsage.objects.filter(vo__name__in=value).values("person_id"))


class BundleFilterSet(StrictFilterSet):
    status = NamesFilter(field_name="status")
    parser = filters.CharFilter(field_name="format", lookup_expr="icontains", label="detected format contains")
    q = filters.CharFilter(field_name="original_name", lookup_expr="icontains", label="file name contains")
    ordering = filters.OrderingFilter(fields=("created_at", "id", "records_read", "rejected"))

    class Meta:
        model = Bundle
        fields: list[str] = []


class UsageRecordFilterSet(StrictFilterSet):
    kind = NamesFilter(field_name="kind")
    site = NamesFilter(field_name="site__name")
    resource = NamesFilter(field_name="resource__name")
    vo = NamesFilter(field_name="vo__name")
    user = NamesFilter(field_name="person__name", label="DN or token subject")
    project = NamesFilter(field_name="project__name")
    start = filters.DateFilter(method="filter_start", label="ended on or after this day (UTC)")
    end = filters.DateFilter(method="filter_end", label="started before this day (UTC, exclusive)")
    bundle = filters.NumberFilter(field_name="bundle_id")
    natural_key = filters.CharFilter(field_name="natural_key")
    void = filters.BooleanFilter(field_name="void")
    ordering = filters.OrderingFilter(fields=("end", "start", "wall_seconds", "id"))

    class Meta:
        model = UsageRecord
        fields: list[str] = []

    def filter_start(self, qs, name, value):
        return qs.filter(end__gte=_day_start(value)) if value else qs

    def filter_end(self, qs, name, value):
        return qs.filter(start__lt=_day_start(value)) if value else qs
