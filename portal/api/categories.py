"""`GET /api/v1/categories/`: pilot time per category in canonical units (CONTRACT.md), JSON or CSV."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting.models import CategoryDaily
from accounting.services.categories import CATEGORY_DIMENSIONS, build_category_query, category_columns, category_rows
from accounting.services.reports import PERIODS, QueryError
from portal.exports import csv_response

PARAMETERS = [
    OpenApiParameter("start", OpenApiTypes.DATE, description="first day (inclusive)"),
    OpenApiParameter("end", OpenApiTypes.DATE, description="last day (exclusive)"),
    OpenApiParameter("period", str, enum=list(PERIODS), description="default month"),
    OpenApiParameter("group_by", str, description=f"comma list of {', '.join(CATEGORY_DIMENSIONS)}"),
    *[OpenApiParameter(name, str, many=True, description=f"filter on {name} (repeatable)") for name in CATEGORY_DIMENSIONS],
    OpenApiParameter("category", str, many=True, description="filter on category (repeatable)"),
    OpenApiParameter("format", str, enum=["json", "csv"]),
]


def visible_categories(user):
    """Category rows are aggregates by site, resource and VO: open to every role, to nobody else."""
    has_role = user.is_authenticated and (user.is_staff or user.groups.filter(name__in=("council", "vo_manager")).exists())
    if not has_role:
        raise PermissionDenied("your account has no GridLedger role yet (ask an admin)")
    return CategoryDaily.objects.all()


class CategoriesView(APIView):
    """Pilot core-hours and GPU-hours per category (validation fails ... insufficient demand)."""

    @extend_schema(parameters=PARAMETERS, responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        base = visible_categories(request.user)
        try:
            query = build_category_query(request.query_params)
        except QueryError as error:
            return Response({"error": error.message, "parameter": error.parameter}, status=400)
        fmt = request.query_params.get("format", "json")
        if fmt not in ("json", "csv"):
            return Response({"error": "must be json or csv", "parameter": "format"}, status=400)
        rows = category_rows(query, base)
        if fmt == "csv":
            return csv_response(category_columns(query), rows, f"categories_{query['start']}_{query['end']}.csv")
        results = list(rows)
        return Response({"columns": category_columns(query), "count": len(results), "results": results})
