"""API of quotas, reconciliation and publishing (included by `portal/api/urls.py`)."""
from django.urls import path

from portal.api.publishing import ApelExportView, NcsaExportView
from portal.api.quotas import QuotaCheckView, QuotaListView
from portal.api.reconciliation import SyncView

urlpatterns = [
    path("quotas/", QuotaListView.as_view(), name="api-quotas"),
    path("quotas/check/", QuotaCheckView.as_view(), name="api-quota-check"),
    path("reconciliation/sync/", SyncView.as_view(), name="api-reconciliation-sync"),
    path("publish/apel/", ApelExportView.as_view(), name="api-publish-apel"),
    path("publish/ncsa/", NcsaExportView.as_view(), name="api-publish-ncsa"),
]
