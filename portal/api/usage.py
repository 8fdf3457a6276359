"""`GET /api/v1/usage/`: reported usage by period and dimensions, as JSON or streamed CSV (CONTRACT.md)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting.services.reports import DIMENSIONS, PERIODS, QueryError, build_query, usage_rows
from portal.exports import csv_response

USAGE_PARAMETERS = [
    OpenApiParameter("start", OpenApiTypes.DATE, description="first day (inclusive)"),
    OpenApiParameter("end", OpenApiTypes.DATE, description="last day (exclusive)"),
    OpenApiParameter("period", str, enum=list(PERIODS), description="default month"),
    OpenApiParameter("group_by", str, description=f"comma list of {', '.join(DIMENSIONS)}"),
    *[OpenApiParameter(name, str, many=True, description=f"filter on {name} (repeatable)") for name in DIMENSIONS],
    OpenApiParameter("designation", str, description="reported (default), all, payload_unmatched, payload_excess, pilot_residual, ..."),
    OpenApiParameter("format", str, enum=["json", "csv"]),
]


def bad_request(error: QueryError) -> Response:
    return Response({"error": error.message, "parameter": error.parameter}, status=400)


class UsageView(APIView):
    """Rows of reported usage (payload excess and unmatched hours only when asked for by `designation`)."""

    @extend_schema(parameters=USAGE_PARAMETERS, responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        try:
            query = build_query(request.query_params)
        except QueryError as error:
            return bad_request(error)
        fmt = request.query_params.get("format", "json")
        if fmt not in ("json", "csv"):
            return bad_request(QueryError("format", "must be json or csv"))
        rows = usage_rows(query)
        if fmt == "csv":
            return csv_response(query.columns(), rows, f"usage_{query.start}_{query.end}.csv")
        results = list(rows)
        return Response({"columns": query.columns(), "count": len(results), "results": results})
