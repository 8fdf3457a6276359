"""Pages of quotas, notices, reconciliation and publishing (included by `portal/urls.py`)."""
from django.urls import path

from portal.views import publishing, quotas, reconciliation

urlpatterns = [
    path("quotas/", quotas.quota_list, name="quota-list"),
    path("quotas/<int:pk>/", quotas.quota_detail, name="quota-detail"),
    path("quotas/<int:pk>/decide/", quotas.quota_decide, name="quota-decide"),
    path("notices/", quotas.notice_list, name="notices"),
    path("reconciliation/", reconciliation.overview, name="reconciliation"),
    path("reconciliation/sync/", reconciliation.sync_page, name="reconciliation-sync"),
    path("reconciliation/actions/", reconciliation.actions, name="reconciliation-actions"),
    path("reconciliation/queues/<slug:name>/", reconciliation.queue_page, name="reconciliation-queue"),
    path("publishing/", publishing.publishing, name="publishing"),
]
