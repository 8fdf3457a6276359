"""`GET /api/v1/reconciliation/sync/` (admins): per site and month, jobs in the site's APEL summaries against
jobs stored; JSON or CSV (`format=csv`), mismatches only with `mismatches=1`."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting.services import reconciliation
from accounting.services.quotas import add_months, today
from portal.api.admin_only import IsPortalAdmin
from portal.api.publishing import ParameterError, check_known, parse_day
from portal.api.quotas import error
from portal.exports import csv_response

SYNC_PARAMETERS = ("start", "end", "site", "mismatches", "format")


def sync_query(params) -> dict:
    """start/end months (default: the last 12), sites, mismatches only; ParameterError naming the parameter."""
    check_known(params, SYNC_PARAMETERS)
    this_month = today().replace(day=1)
    first = parse_day(params, "start", add_months(this_month, -11), month=True)
    last = parse_day(params, "end", this_month, month=True)
    if (last.year, last.month) < (first.year, first.month):
        raise ParameterError("end", "must not be before start")
    fmt = params.get("format", "json")
    if fmt not in ("json", "csv"):
        raise ParameterError("format", "must be json or csv")
    sites = [s for s in params.getlist("site") if s]
    return {"first": first, "last": last, "sites": sites, "mismatches_only": params.get("mismatches") in ("1", "true", "yes"), "format": fmt}


class SyncView(APIView):
    permission_classes = [IsPortalAdmin]

    @extend_schema(
        parameters=[
            OpenApiParameter("start", str, description="first month YYYY-MM (default: 11 months ago)"),
            OpenApiParameter("end", str, description="last month YYYY-MM, inclusive (default: this month)"),
            OpenApiParameter("site", str, many=True), OpenApiParameter("mismatches", bool),
            OpenApiParameter("format", str, enum=["json", "csv"]),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        try:
            query = sync_query(request.query_params)
        except ParameterError as exc:
            return error(str(exc), exc.parameter)
        rows = [row.as_dict() for row in reconciliation.sync(query["first"], query["last"], query["sites"], query["mismatches_only"])]
        if query["format"] == "csv":
            return csv_response(reconciliation.SYNC_COLUMNS, rows, f"sync_{query['first']:%Y-%m}_{query['last']:%Y-%m}.csv")
        return Response({"columns": reconciliation.SYNC_COLUMNS, "count": len(rows), "results": rows})
