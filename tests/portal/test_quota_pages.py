"""Quota pages and notices by role: admins see and set every quota and decide requests; a VO manager sees
and requests quotas of their own VO and its members only; nobody else gets in."""
import json
import re
from datetime import date

import pytest
from django.urls import reverse

from accounting.models import AuditEntry, Notice, Quota
from accounting.services import quota_requests, quotas
from tests.portal.conftest import ALICE, BOB, CAROL

pytestmark = pytest.mark.django_db
Q1 = {"period": "custom", "period_start": date(2024, 1, 1), "period_end": date(2024, 4, 1), "metric": "core_hours"}


@pytest.fixture(autouse=True)
def mid_march(monkeypatch):
    monkeypatch.setattr(quotas, "today", lambda: date(2024, 3, 15))


@pytest.fixture
def quota_set(grid):
    return {
        "cms": quota_requests.save(quota_requests.build(subject_type="vo", subject="cms", limit=40, **Q1), None, approved=True),
        "carol": quota_requests.save(quota_requests.build(subject_type="user", subject=CAROL, vo="ligo", limit=50, **Q1), None, approved=True),
    }


def page(client, user, url, **kwargs):
    client.force_login(user)
    return client.get(url, **kwargs)


@pytest.mark.parametrize(("role", "status"), [("admin", 200), ("manager", 200), ("council", 403), ("member", 403)])
def test_quota_list_page_by_role(client, quota_set, request, role, status):
    response = page(client, request.getfixturevalue(role), reverse("quota-list"))
    assert response.status_code == status
    text = response.content.decode()
    if role == "admin":
        assert CAROL in text and f'data-quota="{quota_set["carol"].pk}"' in text
    if role == "manager":
        assert f'data-quota="{quota_set["cms"].pk}"' in text
        assert CAROL not in text and "ligo" not in text
        assert ALICE in text and BOB in text  # offered in the request form: their own VO's members


def test_anonymous_is_sent_to_login(client, quota_set):
    for url in (reverse("quota-list"), reverse("quota-detail", args=[quota_set["cms"].pk]), reverse("notices")):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_detail_page_shows_the_gauge_chart_and_forecast_hand_worked(client, quota_set, admin):
    response = page(client, admin, reverse("quota-detail", args=[quota_set["cms"].pk]))
    assert response.status_code == 200
    data = json.loads(re.search(r'<script id="quota-data" type="application/json">(.*?)</script>', response.content.decode()).group(1))
    # cms reported core-hours by day: Jan 10 Alice 10, Jan 11 Bob 4, Feb 5 Alice 6, Mar 1 Bob 8.
    assert data["days"] == ["2024-01-10", "2024-01-11", "2024-02-05", "2024-03-01"]
    assert data["cumulative"] == [10.0, 14.0, 20.0, 28.0]
    assert (data["limit"], data["percent"], data["window"]) == (40.0, 70.0, ["2024-01-01", "2024-03-31"])
    # 28 core-hours in the 75 days from Jan 1 to Mar 15; 16 days left after the 15th: 28 + 28 / 75 x 16.
    assert data["forecast"]["x"] == ["2024-03-15", "2024-03-31"]
    assert data["forecast"]["y"] == [28.0, pytest.approx(28 + 28 / 75 * 16, abs=1e-6)]
    assert "vendor/plotly.min.js" in response.content.decode()


def test_a_vo_manager_cannot_open_another_vos_quota(client, quota_set, manager):
    assert page(client, manager, reverse("quota-detail", args=[quota_set["carol"].pk])).status_code == 404
    assert page(client, manager, reverse("quota-detail", args=[quota_set["cms"].pk])).status_code == 200


def form(**values) -> dict:
    return {"subject_type": "user", "subject": BOB, "vo": "", "metric": "core_hours", "period": "month",
            "period_start": "2024-01-01", "period_end": "", "limit": "30", "thresholds": "80, 100",
            "notify_emails": "", "note": ""} | values  # fmt: skip


def test_a_vo_manager_requests_and_an_admin_approves(client, grid, manager, admin):
    client.force_login(manager)
    response = client.post(reverse("quota-list"), form())
    quota = Quota.objects.get()
    assert response.status_code == 302 and response.url == reverse("quota-detail", args=[quota.pk])
    assert (quota.status, quota.vo.name, quota.thresholds, quota.requested_by) == ("requested", "cms", [80, 100], manager)
    refused = client.post(reverse("quota-list"), form(subject=CAROL))
    assert refused.status_code == 200 and "no such subject in your VOs" in refused.content.decode()
    assert client.post(reverse("quota-decide", args=[quota.pk]), {"decision": "approve"}).status_code == 403

    client.force_login(admin)
    assert client.get(reverse("quota-decide", args=[quota.pk])).status_code == 405
    assert client.post(reverse("quota-decide", args=[quota.pk]), {"decision": "approve"}).status_code == 302
    quota.refresh_from_db()
    assert (quota.status, quota.decided_by, quota.used, quota.window_start) == ("approved", admin, 8.0, date(2024, 3, 1))
    assert list(AuditEntry.objects.order_by("pk").values_list("action", "user__username")) == [
        ("quota_request", "cms-manager"), ("quota_approve", "boss"),
    ]


def test_an_admin_sets_a_quota_on_anyone(client, grid, admin):
    client.force_login(admin)
    response = client.post(reverse("quota-list"), form(subject=CAROL, vo="ligo", limit="10"))
    assert response.status_code == 302
    quota = Quota.objects.get()
    assert (quota.status, quota.subject, quota.used) == ("approved", CAROL, 2.0)
    bad = client.post(reverse("quota-list"), form(period="custom"))
    assert bad.status_code == 200 and "a custom window needs its end" in bad.content.decode()


def test_council_cannot_post_quotas(client, grid, council):
    client.force_login(council)
    assert client.post(reverse("quota-list"), form()).status_code == 403
    assert Quota.objects.count() == 0


def test_notices_are_each_users_own(client, grid, quota_set, manager, admin):
    Notice.objects.create(user=manager, quota=quota_set["cms"], message="cms passed 80 %", url="/quotas/1/")
    Notice.objects.create(user=admin, message="for the admin only")
    client.force_login(manager)
    text = client.get(reverse("notices")).content.decode()
    assert "cms passed 80 %" in text and "for the admin only" not in text
    assert "Notices (1)" in client.get(reverse("quota-list")).content.decode()
    assert client.post(reverse("notices")).status_code == 302
    assert Notice.objects.get(user=manager).read_at is not None
    assert Notice.objects.get(user=admin).read_at is None
