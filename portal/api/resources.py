"""Read-only API lists and details of sites, VOs, projects, science domains, people (scoped) and raw
usage records: JSON pages (`limit`, `offset`) or, with `format=csv`, the whole filtered list streamed.
The FilterSets are those of the list pages (`portal/filtersets.py`)."""
from __future__ import annotations

import functools

from django.db import models
from django.http import Http404
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.response import Response

from accounting.services.reports import QueryError
from portal import resources as res
from portal.api.errors import bad_request
from portal.api.permissions import CanSeeAggregates, CanSeePeople
from portal.exports import csv_response
from portal.listing import filtered, page_of

FIELD_TYPES = {
    models.AutoField: serializers.IntegerField, models.BigAutoField: serializers.IntegerField,
    models.IntegerField: serializers.IntegerField, models.PositiveIntegerField: serializers.IntegerField,
    models.BigIntegerField: serializers.IntegerField, models.FloatField: serializers.FloatField,
    models.BooleanField: serializers.BooleanField, models.DateField: serializers.DateField,
    models.DateTimeField: serializers.DateTimeField, models.ForeignKey: serializers.IntegerField,
}  # fmt: skip
LIST_PARAMETERS = [
    OpenApiParameter("limit", int, description="rows per page (default 100, at most 1000)"),
    OpenApiParameter("offset", int, description="rows to skip"),
    OpenApiParameter("format", str, enum=["json", "csv"], description="csv: the whole filtered list, streamed"),
]
ACCESS = {
    "aggregates": [permissions.IsAuthenticated, CanSeeAggregates],
    "people": [permissions.IsAuthenticated, CanSeeAggregates, CanSeePeople],
    "signed_in": [permissions.IsAuthenticated],
}


@functools.cache
def serializer_for(resource: res.Resource) -> type[serializers.Serializer]:
    """A serializer describing the rows (for the OpenAPI schema); the rows themselves are `.values()`."""
    fields = {}
    for name, path in resource.columns:
        field = resource.model_field(path)
        field_class = FIELD_TYPES.get(type(field), serializers.CharField)
        fields[name] = field_class(read_only=True, allow_null=field.null) if field.null else field_class(read_only=True)
    return type(f"{resource.model.__name__}RowSerializer", (serializers.Serializer,), fields)


def list_response(request, resource: res.Resource):
    """A JSON page or the streamed CSV of the resource's rows visible to the user, filtered."""
    fmt = request.query_params.get("format") or "json"
    if fmt not in ("json", "csv"):
        return bad_request(QueryError("format", "must be json or csv"))
    try:
        queryset = filtered(request.user, resource, request.query_params)
        if fmt == "csv":
            return csv_response(resource.names, resource.stream(queryset), f"{resource.key}.csv")
        page = page_of(resource, queryset, request.query_params)
    except QueryError as error:
        return bad_request(error)
    base = request.build_absolute_uri(request.path)
    return Response(
        {
            "count": page.count,
            "next": f"{base}?{page.next_query}" if page.next_query is not None else None,
            "previous": f"{base}?{page.previous_query}" if page.previous_query is not None else None,
            "results": page.rows,
        }
    )


def detail_response(request, resource: res.Resource, pk: int):
    try:
        queryset = filtered(request.user, resource, {})
    except QueryError as error:  # pragma: no cover - no parameters given
        return bad_request(error)
    values = resource.values(queryset.filter(pk=pk)).first()
    if values is None:
        raise Http404
    return Response(resource.row(values))


class ResourceViewSet(viewsets.GenericViewSet):
    """List and detail of one resource (`resource`), scoped by `visible_to`."""

    resource: res.Resource
    filter_backends = [DjangoFilterBackend]  # documents the FilterSet's parameters in the schema
    pagination_class = None
    lookup_value_regex = r"\d+"

    def get_permissions(self):
        return [p() for p in ACCESS[self.resource.access]]

    def get_queryset(self):
        return self.resource.model.objects.none()

    @property
    def filterset_class(self):
        return self.resource.filterset

    def get_serializer_class(self):
        return serializer_for(self.resource)

    @extend_schema(parameters=LIST_PARAMETERS)
    def list(self, request):
        return list_response(request, self.resource)

    @extend_schema(parameters=[OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH)])
    def retrieve(self, request, pk=None):
        return detail_response(request, self.resource, int(pk))


def viewset(resource: res.Resource) -> type[ResourceViewSet]:
    return type(
        f"{resource.model.__name__}ViewSet",
        (ResourceViewSet,),
        {"resource": resource, "__doc__": f"{resource.title}: read-only list (filterable, paginated, CSV) and detail."},
    )


SiteViewSet = viewset(res.SITES)
VOViewSet = viewset(res.VOS)
ProjectViewSet = viewset(res.PROJECTS)
ScienceDomainViewSet = viewset(res.SCIENCE_DOMAINS)
PersonViewSet = viewset(res.PEOPLE)
UsageRecordViewSet = viewset(res.RECORDS)
