"""Reconciliation, sync and publishing are for admins only (pages and API), show the queues with their counts
(also on the admin index), and run audited actions; Django admin actions are audited the same way."""
import io
from datetime import date

import pytest
from django.urls import reverse

from accounting.models import ApelSummary, AuditEntry, Correction, Resource, Site, TopologyMerge, UsageRecord
from accounting.services import quotas
from ingest.models import Bundle
from ingest.parsers.apel import APELParser
from ingest.parsers.base import ParseContext
from tests.portal.conftest import ALICE, CAROL

pytestmark = pytest.mark.django_db

PAGES = ["reconciliation", "reconciliation-sync", "publishing"]
APIS = ["api-reconciliation-sync", "api-publish-apel", "api-publish-ncsa"]
QUEUES = ["unmatched", "excess", "unknown_vo", "unknown_project", "unknown_site", "unknown_resource", "no_benchmark", "silent"]


@pytest.fixture(autouse=True)
def april(monkeypatch):
    monkeypatch.setattr(quotas, "today", lambda: date(2024, 4, 15))


@pytest.mark.parametrize("role", ["manager", "council", "member"])
def test_everyone_but_admins_is_refused(client, grid, request, role):
    client.force_login(request.getfixturevalue(role))
    for name in PAGES:
        assert client.get(reverse(name)).status_code == 403, name
    for queue in QUEUES:
        assert client.get(reverse("reconciliation-queue", args=[queue])).status_code == 403
    for name in APIS:
        assert client.get(reverse(name)).status_code == 403, name
    assert client.post(reverse("reconciliation-actions"), {"action": "rebuild"}).status_code == 403


def test_anonymous_is_sent_to_login_or_gets_401(client, grid):
    for name in PAGES:
        response = client.get(reverse(name))
        assert response.status_code == 302 and response.url.startswith(reverse("login"))
    for name in APIS:
        assert client.get(reverse(name)).status_code == 401


def test_admin_sees_every_queue_with_its_count(client, grid, admin):
    client.force_login(admin)
    text = client.get(reverse("reconciliation")).content.decode()
    assert 'data-queue="unmatched"' in text and '<span class="queue-count">1</span> jobs' in text  # Alice's unmatched payload
    for queue in QUEUES:
        assert client.get(reverse("reconciliation-queue", args=[queue])).status_code == 200, queue
    assert client.get(reverse("reconciliation-queue", args=["nope"])).status_code == 404
    unmatched = client.get(reverse("reconciliation-queue", args=["unmatched"])).content.decode()
    assert "2024-01-10" in unmatched and "SiteA" in unmatched
    index = client.get(reverse("admin:index")).content.decode()
    assert "Reconciliation queues" in index and "Payloads without their pilot" in index


def test_sync_page_highlights_mismatches_and_exports_them(client, grid, admin):
    site_a = grid.sites["SiteA"]
    # The grid stores three batch jobs at SiteA ending on 2024-01-10; the site's summary says it ran 5.
    ApelSummary.objects.create(natural_key="A|2024|1", record_hash="x", site=site_a, year=2024, month=1, number_of_jobs=5)
    client.force_login(admin)
    text = client.get(reverse("reconciliation-sync"), {"start": "2024-01", "end": "2024-03"}).content.decode()
    assert '<tr class="mismatch" data-status="missing">' in text
    csv = client.get(reverse("api-reconciliation-sync"), {"start": "2024-01", "end": "2024-03", "format": "csv"})
    lines = b"".join(csv.streaming_content).decode().splitlines()
    assert lines == ["site,month,source_jobs,summaries,stored_jobs,void_jobs,difference,status", "SiteA,2024-01,5,1,3,0,-2,missing"]
    bad = client.get(reverse("api-reconciliation-sync"), {"start": "January"})
    assert bad.status_code == 400 and bad.json()["parameter"] == "start"


def test_actions_are_audited_and_run(client, grid, admin, django_capture_on_commit_callbacks, monkeypatch):
    client.force_login(admin)
    record = grid.records[CAROL]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("reconciliation-actions"), {"action": "void", "void-records": record.natural_key})
    assert response.status_code == 302
    assert UsageRecord.objects.get(pk=record.pk).void is True
    entry = AuditEntry.objects.get()
    assert (entry.user, entry.action, entry.rows, entry.days, entry.status) == (admin, "void", 1, 1, "done")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("reconciliation-actions"), {
            "action": "correction", "correction-field": "vo", "correction-match": "exact",
            "correction-pattern": "ligo", "correction-target": "cms",
        })  # fmt: skip
    assert response.status_code == 302
    assert Correction.objects.get().target == "cms"
    # Void records are re-attributed too, so unvoiding one later gives the corrected VO.
    assert AuditEntry.objects.filter(action="correction_apply", status="done").get().rows == 1
    assert UsageRecord.objects.get(pk=record.pk).vo == grid.vos["cms"]
    bad = client.post(reverse("reconciliation-actions"), {"action": "correction", "correction-field": "vo", "correction-match": "exact",
                                                          "correction-pattern": "x", "correction-target": "nope"})  # fmt: skip
    assert bad.status_code == 400 and "no vo named" in bad.content.decode()
    assert client.post(reverse("reconciliation-actions"), {"action": "void", "void-records": "missing#1"}).status_code == 400
    assert client.get(reverse("reconciliation-actions")).status_code == 405

    bundle = grid.bundle
    queued = []
    monkeypatch.setattr("portal.views.reconciliation.queue_ingest", queued.append)  # the ingest task has its own tests
    response = client.post(reverse("reconciliation-actions"), {"action": "reingest", "reingest-bundle": bundle.pk})
    assert response.status_code == 302 and queued == [bundle.pk]
    assert AuditEntry.objects.filter(action="reingest").get().details == {"bundle": bundle.pk}


def test_apel_and_ncsa_exports_for_admins(client, grid, admin):
    client.force_login(admin)
    response = client.get(reverse("api-publish-apel"), {"start": "2024-01", "end": "2024-03"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    parsed = list(APELParser().parse(io.BytesIO(response.content), "x", ParseContext()))
    assert sum(p.number_of_jobs for p in parsed) == 2 + 1 + 3 + 1 + 2 + 4 + 1  # reported jobs; the unmatched one left out
    assert sum(p.wall_seconds for p in parsed) == (10 + 4 + 20 + 6 + 30 + 8 + 2) * 3600
    assert response["X-GridLedger-Jobs"] == "14"
    assert client.get(reverse("api-publish-apel"), {"start": "2030-01"}).json()["parameter"] == "end"
    ncsa = client.get(reverse("api-publish-ncsa"), {"start": "2024-01-01", "end": "2024-02-01", "site": "SiteA"})
    lines = b"".join(ncsa.streaming_content).decode().splitlines()
    assert lines[0] == "H|Charges|SiteA|20240101:000000|20240131:235959||SESS_ACCT" and lines[-1].startswith("T|3|")
    assert client.get(reverse("api-publish-ncsa"), {"su_basis": "nope"}).json()["parameter"] == "su_basis"
    assert client.get(reverse("publishing")).status_code == 200


def test_django_admin_actions_void_records_and_merge_sites_audited(client, grid, admin, django_capture_on_commit_callbacks):
    client.force_login(admin)
    record = grid.records[ALICE]
    changelist = reverse("admin:accounting_usagerecord_changelist")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(changelist, {"action": "void_records", "_selected_action": [record.pk]})
    assert response.status_code == 302 and UsageRecord.objects.get(pk=record.pk).void is True
    assert AuditEntry.objects.get().action == "void"

    old = Site.objects.create(name="SiteA-old")
    Resource.objects.create(name="ce-old", site=old)
    sites = reverse("admin:accounting_site_changelist")
    form_page = client.post(sites, {"action": "merge_sites", "_selected_action": [old.pk]})
    assert form_page.status_code == 200 and "Merge into" in form_page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(sites, {"action": "merge_sites", "_selected_action": [old.pk], "apply": "1", "into": grid.sites["SiteA"].pk})
    assert done.status_code == 302
    assert TopologyMerge.objects.get().old_name == "SiteA-old"
    assert Resource.objects.get(name="ce-old").site == grid.sites["SiteA"]
    assert client.get(reverse("admin:accounting_auditentry_changelist")).status_code == 200


def test_silent_sources_queue(client, grid, admin):
    Bundle.objects.create(original_name="old.tgz", stored_path="o", sha256="1" * 64, source_label="CE dump")
    client.force_login(admin)
    text = client.get(reverse("reconciliation-queue", args=["silent"])).content.decode()
    assert "CE dump" not in text  # just created: not silent
    Bundle.objects.filter(source_label="CE dump").update(created_at="2020-01-01T00:00:00Z")
    assert "CE dump" in client.get(reverse("reconciliation-queue", args=["silent"])).content.decode()


def test_quota_edits_in_django_admin_are_audited_and_rechecked(client, grid, admin):
    from accounting.models import Quota

    client.force_login(admin)
    data = {"subject_type": "vo", "vo": grid.vos["cms"].pk, "metric": "core_hours", "period": "month",
            "period_start": "2024-01-01", "limit": "40", "thresholds": "[80, 100]", "status": "approved", "note": "",
            "notify_emails": ""}  # fmt: skip
    response = client.post(reverse("admin:accounting_quota_add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    quota = Quota.objects.get()
    assert (quota.subject, quota.requested_by, quota.used_at) == ("cms", admin, None)  # the next check decides
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.user, entry.details) == ("quota_set", admin, {"quota": quota.pk})


def test_corrections_in_django_admin_are_validated_and_applied_by_an_action(client, grid, admin, django_capture_on_commit_callbacks):
    client.force_login(admin)
    add = reverse("admin:accounting_correction_add")
    bad = client.post(add, {"field": "vo", "match": "regex", "pattern": "li(go", "target": "cms", "active": "on", "note": ""})
    assert bad.status_code == 200 and "not a usable regular expression" in bad.content.decode()
    assert client.post(add, {"field": "vo", "match": "exact", "pattern": "ligo", "target": "cms", "active": "on", "note": ""}).status_code == 302
    correction = Correction.objects.get()
    assert correction.created_by == admin
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("admin:accounting_correction_changelist"), {"action": "apply_corrections", "_selected_action": [correction.pk]})
    assert response.status_code == 302
    assert UsageRecord.objects.get(pk=grid.records[CAROL].pk).vo == grid.vos["cms"]
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.user, entry.rows, entry.status) == ("correction_apply", admin, 1, "done")
