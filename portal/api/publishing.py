"""Exports for other systems (admins): `GET /api/v1/publish/apel/` (APEL summary messages, v0.3, normalised)
and `GET /api/v1/publish/ncsa/` (NCSA Account Usage Data Format). Both answer `text/plain` files."""
from __future__ import annotations

from datetime import date, timedelta

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.views import APIView

from accounting.services import apel_publish, ncsa_publish
from accounting.services.quotas import add_months, today
from portal.api.admin_only import IsPortalAdmin
from portal.api.quotas import error


class ParameterError(ValueError):
    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


def parse_day(params, name: str, default: date, *, month: bool = False) -> date:
    """A date parameter; `month=True` also takes YYYY-MM (its first day)."""
    value = params.get(name, "")
    if not value:
        return default
    try:
        return date.fromisoformat(f"{value}-01" if month and len(value) == 7 else value)
    except ValueError:
        raise ParameterError(name, f"not a date ({'YYYY-MM or ' if month else ''}YYYY-MM-DD): {value!r}") from None


def check_known(params, known: tuple[str, ...]) -> None:
    for name in params:
        if name not in known:
            raise ParameterError(name, "unknown parameter")


APEL_PARAMETERS = ("start", "end", "site", "vo")
NCSA_PARAMETERS = ("start", "end", "site", "machine", "su_basis", "default_factor")


class ApelExportView(APIView):
    """APEL summary records of reported usage per site, month, VO, person and resource (months inclusive)."""

    permission_classes = [IsPortalAdmin]

    @extend_schema(
        parameters=[
            OpenApiParameter("start", str, description="first month, YYYY-MM (default: last month)"),
            OpenApiParameter("end", str, description="last month, inclusive, YYYY-MM (default: start)"),
            OpenApiParameter("site", str, many=True), OpenApiParameter("vo", str, many=True),
        ],
        responses={(200, "text/plain"): OpenApiTypes.STR},
    )
    def get(self, request):
        params = request.query_params
        try:
            check_known(params, APEL_PARAMETERS)
            last_month = add_months(today().replace(day=1), -1)
            first = parse_day(params, "start", last_month, month=True)
            last = parse_day(params, "end", first, month=True)
        except ParameterError as exc:
            return error(str(exc), exc.parameter)
        if (last.year, last.month) < (first.year, first.month):
            return error("must not be before start", "end")
        if (last.year, last.month) > (today().year, today().month):
            return error("APEL accepts no month in the future", "end")
        records, left_out = apel_publish.summary_records(first, last, params.getlist("site"), params.getlist("vo"))
        totals = apel_publish.totals(records)
        response = HttpResponse(apel_publish.message(records), content_type="text/plain; charset=utf-8")
        name = f"apel-summaries-{first:%Y-%m}-{last:%Y-%m}.txt"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response["X-GridLedger-Records"] = str(totals.records)
        response["X-GridLedger-Jobs"] = str(totals.jobs)
        response["X-GridLedger-Left-Out-Jobs"] = str(left_out["jobs"])
        response["X-GridLedger-Left-Out-Core-Hours"] = f"{left_out['core_hours']:.6f}"
        return response


class NcsaExportView(APIView):
    """One NCSA file: the site's batch and pilot jobs ending in `start`..`end` (end exclusive), streamed."""

    permission_classes = [IsPortalAdmin]

    @extend_schema(
        parameters=[
            OpenApiParameter("start", OpenApiTypes.DATE, description="first day (default: first of last month)"),
            OpenApiParameter("end", OpenApiTypes.DATE, description="day after the last (default: a month after start)"),
            OpenApiParameter("site", str, description="the site charged (default: every site)"),
            OpenApiParameter("machine", str, description="machine id of the header (default: the site)"),
            OpenApiParameter("su_basis", str, enum=list(ncsa_publish.BASES), description="default canonical_core_hours"),
            OpenApiParameter("default_factor", float, description="charge factor of resources without one (default 1)"),
        ],
        responses={(200, "text/plain"): OpenApiTypes.STR},
    )
    def get(self, request):
        params = request.query_params
        try:
            check_known(params, NCSA_PARAMETERS)
            first = parse_day(params, "start", add_months(today().replace(day=1), -1))
            end = parse_day(params, "end", add_months(first.replace(day=1), 1) if first.day == 1 else first + timedelta(days=31))
            formula = _formula(params)
        except ParameterError as exc:
            return error(str(exc), exc.parameter)
        if end <= first:
            return error("must be after start", "end")
        site, machine = params.get("site", ""), params.get("machine", "")
        lines = ncsa_publish.lines(first, end, site=site, machine=machine, formula=formula)
        response = StreamingHttpResponse((f"{line}\n".encode() for line in lines), content_type="text/plain; charset=utf-8")
        name = f"ncsa-{site or 'all'}-{first}-{end}.acct"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


def _formula(params) -> ncsa_publish.SUFormula:
    basis = params.get("su_basis", "canonical_core_hours")
    try:
        factor = float(params.get("default_factor", "1"))
    except ValueError:
        raise ParameterError("default_factor", "not a number") from None
    try:
        return ncsa_publish.SUFormula(basis=basis, default_factor=factor)
    except ValueError as exc:
        raise ParameterError("su_basis" if "basis" in str(exc) else "default_factor", str(exc)) from None
