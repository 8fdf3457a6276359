"""`GET/POST /api/v1/quotas/` and `GET /api/v1/quotas/check/` (CONTRACT.md).

The check answers a gatekeeper per job: `limit`, `used`, `percent`, `over_quota`, `period_start`,
`period_end` (exclusive) and `metric` of the subject's most used current quota (all of them under
`quotas`). A subject without a current quota visible to the caller (unknown, or another VO's) answers 200
with `over_quota: false`, `quotas: []` and the other fields null: nothing to enforce, nothing revealed.
"""
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting.models import Quota
from accounting.services import quota_requests, quotas
from accounting.services.quota_requests import QuotaError
from accounting.services.reports import QueryError
from portal import quota_access
from portal.api.token_lookup import TokenLookup
from portal.exports import csv_response

CHECK_PARAMETERS = ("subject_type", "subject", "metric", "vo")
NO_QUOTA_FIELDS = ("limit", "used", "percent", "period_start", "period_end", "metric", "vo", "quota", "as_of")


def error(message: str, parameter: str | None = None, status: int = 400, **extra) -> Response:
    return Response({"error": message, "parameter": parameter, **extra}, status=status)


class QuotaSerializer(serializers.ModelSerializer):
    vo = serializers.SlugRelatedField(slug_field="name", read_only=True)
    percent = serializers.SerializerMethodField()
    over_quota = serializers.SerializerMethodField()

    class Meta:
        model = Quota
        fields = [
            "id", "subject_type", "subject", "vo", "metric", "period", "period_start", "period_end", "limit",
            "thresholds", "status", "window_start", "window_end", "used", "percent", "over_quota", "used_at",
            "created_at", "decided_at",
        ]  # fmt: skip

    def get_percent(self, quota) -> float | None:
        return round(100.0 * quota.used / quota.limit, 6) if quota.used_at else None

    def get_over_quota(self, quota) -> bool | None:
        return quota.used >= quota.limit if quota.used_at else None


LIST_PARAMETERS = {"status": Quota.Status.values, "subject_type": Quota.Subject.values, "format": ["json", "csv"]}


def list_rows(queryset, params) -> tuple[list[str], list[dict]]:
    """The quotas of `queryset` narrowed by the list's parameters, as the API's rows (also `manage.py export
    quotas`, which passes every quota); QueryError naming a bad parameter."""
    for name in params:
        if name not in LIST_PARAMETERS:
            raise QueryError(name, "unknown parameter")
        if params.get(name) not in LIST_PARAMETERS[name]:
            raise QueryError(name, f"must be one of {', '.join(LIST_PARAMETERS[name])}")
    for name in ("status", "subject_type"):
        if params.get(name):
            queryset = queryset.filter(**{name: params[name]})
    rows = QuotaSerializer(queryset.select_related("vo").order_by("pk"), many=True).data
    return list(QuotaSerializer.Meta.fields), [dict(row) for row in rows]


class QuotaInput(serializers.Serializer):
    subject_type = serializers.ChoiceField(choices=Quota.Subject.values)
    subject = serializers.CharField(max_length=500)
    metric = serializers.ChoiceField(choices=Quota.Metric.values, default=Quota.Metric.CORE_HOURS)
    period = serializers.ChoiceField(choices=Quota.Period.values, default=Quota.Period.CUSTOM)
    period_start = serializers.DateField()
    period_end = serializers.DateField(required=False, allow_null=True)
    limit = serializers.FloatField()
    vo = serializers.CharField(max_length=200, required=False, allow_blank=True)
    thresholds = serializers.ListField(child=serializers.IntegerField(), required=False, allow_empty=False)
    notify_emails = serializers.CharField(required=False, allow_blank=True)
    note = serializers.CharField(required=False, allow_blank=True)


class QuotaListView(APIView):
    """Quotas visible to the caller; admins set quotas (approved), VO managers request them for their VOs."""

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=Quota.Status.values), OpenApiParameter("subject_type", str, enum=Quota.Subject.values),
            OpenApiParameter("format", str, enum=["json", "csv"]),
        ],
        responses={200: QuotaSerializer(many=True)},
    )
    def get(self, request):
        if not quota_access.may_use_quotas(request.user):
            return error(quota_access.NO_QUOTA_ROLE, status=403)
        try:
            columns, rows = list_rows(quota_access.visible_quotas(request.user), request.query_params)
        except QueryError as exc:
            return error(exc.message, exc.parameter)
        if request.query_params.get("format") == "csv":
            return csv_response(columns, rows, "quotas.csv")
        return Response({"columns": columns, "count": len(rows), "results": rows})

    @extend_schema(request=QuotaInput, responses={201: QuotaSerializer})
    def post(self, request):
        user = request.user
        if not (quota_access.is_admin(user) or quota_access.managed_vo_ids(user)):
            return error("Only admins set quotas, and VO managers request them for their VOs.", status=403)
        form = QuotaInput(data=request.data)
        if not form.is_valid():
            parameter, messages = next(iter(form.errors.items()))
            return error(str(messages[0]), parameter)
        data = dict(form.validated_data)
        if not quota_access.is_admin(user) and not data.get("vo") and data["subject_type"] != Quota.Subject.VO:
            data["vo"] = quota_access.only_managed_vo(user)
        try:
            quota = quota_requests.build(**data)
        except QuotaError as exc:
            if not quota_access.is_admin(user) and exc.parameter in ("subject", "vo"):
                return error("no such subject in your VOs", exc.parameter)
            return error(exc.message, exc.parameter)
        if not quota_access.may_request(user, quota):
            return error("no such subject in your VOs", "subject")
        with transaction.atomic():
            quota = quota_requests.save(quota, user, approved=quota_access.is_admin(user))
        return Response(QuotaSerializer(quota).data, status=201)


class QuotaCheckView(APIView):
    """Is this subject over quota? The gatekeeper's question, answered from the current summaries."""

    authentication_classes = [TokenLookup, SessionAuthentication]

    @extend_schema(
        parameters=[
            OpenApiParameter("subject_type", str, enum=Quota.Subject.values, required=True),
            OpenApiParameter("subject", str, required=True, description="VO name, person DN or project name"),
            OpenApiParameter("metric", str, enum=Quota.Metric.values, description="only quotas in this metric"),
            OpenApiParameter("vo", str, description="only person/project quotas counted in this VO"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        if not quota_access.may_use_quotas(request.user):
            return error(quota_access.NO_QUOTA_ROLE, status=403)
        params = request.query_params
        for name in params:
            if name not in CHECK_PARAMETERS:
                return error("unknown parameter", name)
        subject_type, subject = params.get("subject_type", ""), params.get("subject", "")
        if subject_type not in Quota.Subject.values:
            return error(f"must be one of {', '.join(Quota.Subject.values)}", "subject_type")
        if not subject:
            return error("required", "subject")
        metric = params.get("metric", "")
        if metric and metric not in Quota.Metric.values:
            return error(f"must be one of {', '.join(Quota.Metric.values)}", "metric")
        day = quotas.today()
        scope = quota_access.quota_scope(request.user)
        states = quotas.check_subject(
            subject_type, subject, vo_ids=None if scope.all else scope.vo_ids, metric=metric, vo=params.get("vo", ""), day=day
        )
        if not states:  # not over quota: there is none (an unknown subject, or one the caller may not see)
            answer = dict.fromkeys(NO_QUOTA_FIELDS) | {"over_quota": False, "subject_type": subject_type, "subject": subject}
            return Response(answer | {"quotas": [], "checked_on": day.isoformat()})
        answer = states[0].as_dict()
        answer["quotas"] = [s.as_dict() for s in states]
        answer["checked_on"] = day.isoformat()
        return Response(answer)
