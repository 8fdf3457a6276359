"""`POST /api/v1/bundles/` (upload, queued to a Celery worker) and `GET /api/v1/bundles/<id>/` (CONTRACT.md)."""
from django.conf import settings
from django.db import transaction
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.exceptions import Throttled
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from ingest.models import Bundle
from ingest.parsers import PARSERS
from ingest.services.bundles import create_bundle
from ingest.tasks import queue_ingest
from portal.api.resources import LIST_PARAMETERS, list_response, serializer_for
from portal.resources import BUNDLES
from portal.scope import visible_to

MAX_ERRORS_SHOWN = 1000


class CanUpload(permissions.BasePermission):
    message = "You need the permission to add bundles (ask an admin)."

    def has_permission(self, request, view):
        return request.method in permissions.SAFE_METHODS or request.user.has_perm("ingest.add_bundle")


class UploadThrottle(ScopedRateThrottle):
    """The `uploads` rate (GRIDLEDGER_UPLOAD_RATE) per user, read at each request: DRF's own class keeps the
    rates it found at import, so a changed setting would not apply."""

    PERIODS = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]

    def describe(self) -> str:
        count, seconds = self.parse_rate(self.get_rate())
        return f"{count} upload{'s' if count != 1 else ''} per {self.PERIODS[seconds]}"


def visible_bundles(user):
    """Admins see every bundle; other users the ones they uploaded (`portal.scope.visible_to`)."""
    return visible_to(user, Bundle.objects.all())


class UploadSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.ChoiceField(choices=sorted(PARSERS), required=False, allow_blank=True)
    source = serializers.CharField(required=False, allow_blank=True, max_length=200)
    site = serializers.CharField(required=False, allow_blank=True, max_length=200)


class BundleSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    errors = serializers.SerializerMethodField()

    class Meta:
        model = Bundle
        fields = [
            "id", "url", "status", "format", "original_name", "sha256", "size_bytes", "source_label",
            "records_read", "records_inserted", "records_updated", "duplicates", "rejected", "progress_percent",
            "first_day", "last_day", "message", "created_at", "started_at", "finished_at", "errors",
        ]  # fmt: skip

    def get_url(self, bundle) -> str:
        return reverse("api-bundle-detail", args=[bundle.pk])

    def get_errors(self, bundle) -> list[dict]:
        return [
            {"file": e.file, "line": e.line, "reason": e.reason}
            for e in bundle.errors.all()[:MAX_ERRORS_SHOWN]
        ]


class BundleUploadView(APIView):
    """Upload a log file or archive; it is kept, queued and ingested by a worker. Answers 202."""

    parser_classes = [MultiPartParser, FormParser]
    permission_classes = [permissions.IsAuthenticated, CanUpload]
    throttle_classes = [UploadThrottle]
    throttle_scope = "uploads"
    filter_backends = [DjangoFilterBackend]  # documents the FilterSet's parameters in the schema
    filterset_class = BUNDLES.filterset

    def get_queryset(self):
        return Bundle.objects.none()

    def get_throttles(self):
        return super().get_throttles() if self.request.method == "POST" else []

    def handle_exception(self, exc):
        """429 in the API's error form, saying the limit and when to retry (also in `Retry-After`)."""
        if isinstance(exc, Throttled):
            throttle = UploadThrottle()
            throttle.scope = self.throttle_scope
            message = f"too many uploads: the limit is {throttle.describe()} for each user; try again in {exc.wait} s"
            headers = {"Retry-After": str(exc.wait)} if exc.wait is not None else {}
            return Response({"error": message, "retry_after": exc.wait}, status=429, headers=headers)
        return super().handle_exception(exc)

    @extend_schema(operation_id="bundles_list", parameters=LIST_PARAMETERS, filters=True, responses=serializer_for(BUNDLES))
    def get(self, request):
        """Bundles visible to the user (admins: all; others: their own), filterable, paginated or CSV."""
        return list_response(request, BUNDLES)

    @extend_schema(request={"multipart/form-data": UploadSerializer}, responses={202: OpenApiTypes.OBJECT})
    def post(self, request):
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > settings.BUNDLE_MAX_UPLOAD_BYTES:
            return Response({"error": f"upload larger than {settings.BUNDLE_MAX_UPLOAD_BYTES} bytes"}, status=413)
        form = UploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        try:
            with transaction.atomic():
                bundle = create_bundle(
                    upload,
                    upload.name,
                    fmt=form.validated_data.get("format") or "",
                    source=form.validated_data.get("source") or "",
                    site=form.validated_data.get("site") or "",
                    user=request.user,
                    max_bytes=settings.BUNDLE_MAX_UPLOAD_BYTES,
                )
                queue_ingest(bundle.pk)
        except ValueError as exc:
            return Response({"error": str(exc)}, status=413)
        url = reverse("api-bundle-detail", args=[bundle.pk])
        return Response({"id": bundle.pk, "status": bundle.status, "url": url}, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class BundleDetailView(APIView):
    """A bundle's status, counts and rejections (file, line, reason)."""

    serializer_class = BundleSerializer

    def get(self, request, pk: int):
        bundle = get_object_or_404(visible_bundles(request.user), pk=pk)
        return Response(BundleSerializer(bundle).data)
