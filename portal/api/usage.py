"""`GET /api/v1/usage/`: reported usage by period and dimensions, as JSON or streamed CSV (CONTRACT.md).

Besides the contract's parameters it takes the explorer's (`metric`, `chart`, `top`), so an explorer
URL's query string answers here with the same rows; `top=N` keeps the N largest series and sums the
rest into "(other)". Person-level queries (group by or filter on `user`) are scoped by role.
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting.services.reports import DIMENSIONS, PERIODS, QueryError
from portal import explorer
from portal.api.errors import bad_request, person_level_denied
from portal.api.permissions import CanSeeAggregates
from portal.api.renderers import FastJSONRenderer
from portal.exports import csv_response, usage_csv_response
from portal.scope import PersonLevelDenied, usage_base

USAGE_PARAMETERS = [
    OpenApiParameter("start", OpenApiTypes.DATE, description="first day (inclusive)"),
    OpenApiParameter("end", OpenApiTypes.DATE, description="last day (exclusive)"),
    OpenApiParameter("period", str, enum=list(PERIODS), description="default month"),
    OpenApiParameter("group_by", str, description=f"comma list of {', '.join(DIMENSIONS)}"),
    *[OpenApiParameter(name, str, many=True, description=f"filter on {name} (repeatable)") for name in DIMENSIONS],
    OpenApiParameter("designation", str, description="reported (default), all, payload_unmatched, payload_excess, pilot_residual, ..."),
    OpenApiParameter("format", str, enum=["json", "csv"]),
    OpenApiParameter("top", int, description="keep the N series (group-by combinations) with the largest totals; the rest sum into '(other)'"),
    OpenApiParameter("metric", str, enum=list(explorer.METRIC_LABELS), description="metric that ranks series for `top` (explorer)"),
    OpenApiParameter("chart", str, enum=list(explorer.CHARTS), description="chart type (explorer only; accepted and ignored here)"),
]


class UsageView(APIView):
    """Rows of reported usage (payload excess and unmatched hours only when asked for by `designation`)."""

    permission_classes = [permissions.IsAuthenticated, CanSeeAggregates]
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]

    def dispatch(self, request, *args, **kwargs):
        """Render here and let go of the rows. DRF's view, request and response refer to each other
        (`view.response`, `response.renderer_context["view"]`), so a response's rows were freed only by
        the cyclic garbage collector's rare full passes: a gunicorn worker grew by ~11 MB per 15,000-row
        answer (bench/portal.py). Once rendered, the response keeps only its bytes and no view."""
        response = super().dispatch(request, *args, **kwargs)
        if isinstance(response, Response):
            response.render()
            response.data = None
            response.renderer_context = None
        self.response = None
        return response

    @extend_schema(parameters=USAGE_PARAMETERS, responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        try:
            query, view = explorer.parse(request.query_params)
            fmt = request.query_params.get("format") or "json"
            if fmt not in ("json", "csv"):
                raise QueryError("format", "must be json or csv")
            base = usage_base(request.user, query)
        except QueryError as error:
            return bad_request(error)
        except PersonLevelDenied as error:
            return person_level_denied(error)
        if fmt == "csv":
            filename = f"usage_{query.start}_{query.end}.csv"
            if view.top is None:
                return usage_csv_response(query, base, filename)
            return csv_response(query.columns(), explorer.explorer_rows(query, view, base), filename)
        rows = explorer.explorer_rows(query, view, base)
        results = list(rows)
        return Response({"columns": query.columns(), "count": len(results), "results": results})
