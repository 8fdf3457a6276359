"""`/api/v1/quotas/` and `/api/v1/quotas/check/` by role, with the numbers of the hand-made grid
(tests/portal/conftest.py): cms reported Q1 2024 = Alice 10 + 6, Bob 4 + 8 = 28 core-hours (Alice's 100
unmatched payload hours never count); ligo = Carol 20 + 30 + 2 = 52."""
from datetime import date

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from rest_framework.authtoken.models import Token

from accounting.models import AuditEntry, Quota
from accounting.services import quota_requests, quotas
from tests.portal.conftest import ALICE, BOB, CAROL

pytestmark = pytest.mark.django_db
Q1 = {"period": "custom", "period_start": date(2024, 1, 1), "period_end": date(2024, 4, 1), "metric": "core_hours"}


@pytest.fixture(autouse=True)
def mid_march(monkeypatch):
    monkeypatch.setattr(quotas, "today", lambda: date(2024, 3, 15))


@pytest.fixture
def quota_set(grid):
    """cms (limit 40), Alice counted in cms (limit 16), Carol counted in ligo (limit 50): all approved."""
    made = {}
    for key, subject_type, subject, vo, limit in (("cms", "vo", "cms", "", 40), ("alice", "user", ALICE, "cms", 16),
                                                   ("carol", "user", CAROL, "ligo", 50)):  # fmt: skip
        made[key] = quota_requests.save(quota_requests.build(subject_type=subject_type, subject=subject, vo=vo, limit=limit, **Q1),
                                        None, approved=True)  # fmt: skip
    return made


def check(client, **params):
    return client.get(reverse("api-quota-check"), params)


@pytest.mark.parametrize(("role", "status", "subjects"), [
    ("admin", 200, {"cms", ALICE, CAROL}), ("manager", 200, {"cms", ALICE}), ("council", 403, None), ("member", 403, None),
])  # fmt: skip
def test_quota_list_by_role(client, quota_set, request, role, status, subjects):
    client.force_login(request.getfixturevalue(role))
    response = client.get(reverse("api-quotas"))
    assert response.status_code == status
    if subjects is not None:
        assert {q["subject"] for q in response.json()["results"]} == subjects
        assert CAROL not in response.content.decode() or role == "admin"


def test_anonymous_gets_401(client, quota_set):
    assert client.get(reverse("api-quotas")).status_code == 401
    assert check(client, subject_type="vo", subject="cms").status_code == 401


def test_check_answers_the_contract_fields_from_reported_hours(client, quota_set, manager):
    client.force_login(manager)
    answer = check(client, subject_type="vo", subject="cms").json()
    assert {k: answer[k] for k in ("limit", "used", "percent", "over_quota", "period_start", "period_end", "metric")} == {
        "limit": 40.0, "used": 28.0, "percent": 70.0, "over_quota": False,
        "period_start": "2024-01-01", "period_end": "2024-04-01", "metric": "core_hours",
    }  # fmt: skip
    alice = check(client, subject_type="user", subject=ALICE).json()
    assert (alice["used"], alice["percent"], alice["over_quota"], alice["vo"]) == (16.0, 100.0, True, "cms")
    assert len(alice["quotas"]) == 1 and alice["checked_on"] == "2024-03-15"


def test_a_vo_manager_never_sees_another_vos_quota(client, quota_set, manager, admin):
    client.force_login(manager)
    hidden = check(client, subject_type="user", subject=CAROL).json()
    unknown = check(client, subject_type="user", subject="/CN=nobody").json()
    # Another VO's person answers exactly as an unknown one: no quota to enforce, nothing revealed.
    assert {k: v for k, v in hidden.items() if k != "subject"} == {k: v for k, v in unknown.items() if k != "subject"} == {
        "limit": None, "used": None, "percent": None, "over_quota": False, "period_start": None, "period_end": None,
        "metric": None, "vo": None, "quota": None, "as_of": None, "subject_type": "user", "quotas": [], "checked_on": "2024-03-15",
    }  # fmt: skip
    assert check(client, subject_type="vo", subject="ligo").json()["quotas"] == []
    client.force_login(admin)
    carol = check(client, subject_type="user", subject=CAROL).json()
    assert (carol["used"], carol["over_quota"], carol["percent"]) == (52.0, True, 104.0)


@pytest.mark.parametrize(("params", "parameter"), [
    ({"subject": "cms"}, "subject_type"),
    ({"subject_type": "site", "subject": "cms"}, "subject_type"),
    ({"subject_type": "vo"}, "subject"),
    ({"subject_type": "vo", "subject": "cms", "metric": "wall"}, "metric"),
    ({"subject_type": "vo", "subject": "cms", "colour": "red"}, "colour"),
])  # fmt: skip
def test_check_rejects_bad_parameters_naming_them(client, quota_set, admin, params, parameter):
    client.force_login(admin)
    response = check(client, **params)
    assert response.status_code == 400 and response.json()["parameter"] == parameter


def test_check_filters_metric_and_vo_and_picks_the_most_used(client, grid, quota_set, admin):
    quota_requests.save(quota_requests.build(subject_type="user", subject=ALICE, limit=100, **Q1), None, approved=True)
    client.force_login(admin)
    both = check(client, subject_type="user", subject=ALICE).json()
    assert [(q["vo"], q["percent"]) for q in both["quotas"]] == [("cms", 100.0), (None, 16.0)]
    assert check(client, subject_type="user", subject=ALICE, vo="cms").json()["limit"] == 16.0
    assert check(client, subject_type="user", subject=ALICE, metric="gpu_hours").json()["over_quota"] is False
    assert check(client, subject_type="vo", subject="nobody").json()["quotas"] == []


def test_a_gatekeeper_token_with_view_quota_reads_every_check_in_few_queries(client, quota_set, django_assert_max_num_queries):
    gatekeeper = User.objects.create_user("gatekeeper")
    gatekeeper.user_permissions.add(Permission.objects.get(codename="view_quota"))
    token = Token.objects.create(user=gatekeeper)
    # the token with its user, the caller's quota scope, the quotas with their staleness: 3 statements
    with django_assert_max_num_queries(3):
        response = client.get(reverse("api-quota-check"), {"subject_type": "user", "subject": CAROL}, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200 and response.json()["over_quota"] is True


def test_the_cached_usage_follows_rebuilds_of_its_window(client, grid, quota_set, manager):
    from accounting.models import DailyUsage, SummaryRun
    from accounting.services import quota_alerts

    client.force_login(manager)
    assert check(client, subject_type="vo", subject="cms").json()["used"] == 28.0
    # A rebuild of a day in the window commits new rows: the check sees them at once (summed, not from the cache)...
    DailyUsage.objects.create(day=date(2024, 3, 10), vo=grid.vos["cms"], kind="batch", designation="batch", jobs=1, wall_hours=5.0)
    SummaryRun.objects.create(start=date(2024, 3, 10), end=date(2024, 3, 10), status="done")
    assert check(client, subject_type="vo", subject="cms").json()["used"] == 33.0
    # ...and the threshold check after the rebuild caches it again: the quotas whose window has the rebuilt day
    # (all three here), cms crossing 80 % (33 of 40).
    assert quota_alerts.check_all().as_dict() == {"checked": 3, "raised": 1, "cleared": 0}
    assert quota_alerts.check_all().as_dict() == {"checked": 0, "raised": 0, "cleared": 0}
    # The cache is what is read: rows appearing without a rebuild of the window (here, by hand) are not seen,
    # nor while the rebuild that writes them is still running; once it is done they are.
    SummaryRun.objects.create(start=date(2024, 6, 1), end=date(2024, 6, 1), status="done")
    DailyUsage.objects.create(day=date(2024, 3, 11), vo=grid.vos["cms"], kind="batch", designation="batch", jobs=1, wall_hours=7.0)
    assert check(client, subject_type="vo", subject="cms").json()["used"] == 33.0
    SummaryRun.objects.create(start=date(2024, 3, 11), end=date(2024, 3, 11), status="running")
    assert check(client, subject_type="vo", subject="cms").json()["used"] == 33.0
    SummaryRun.objects.filter(status="running").update(status="done")
    assert check(client, subject_type="vo", subject="cms").json()["used"] == 40.0


def test_a_vo_managers_check_takes_few_queries(client, quota_set, manager, django_assert_max_num_queries):
    token = Token.objects.create(user=manager)
    # the same 3 statements: the scope reads the VO-manager group and links with the permission
    with django_assert_max_num_queries(3):
        response = client.get(reverse("api-quota-check"), {"subject_type": "vo", "subject": "cms"}, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.json()["used"] == 28.0


def test_admins_set_quotas_and_vo_managers_request_them_for_their_own_members_only(client, grid, admin, manager, council):
    body = {"subject_type": "vo", "subject": "ligo", "limit": 500, "period": "month", "period_start": "2024-01-01"}
    client.force_login(admin)
    made = client.post(reverse("api-quotas"), body, content_type="application/json")
    assert made.status_code == 201 and made.json()["status"] == "approved" and made.json()["used"] == 2.0  # March: Carol 2
    assert AuditEntry.objects.get().action == "quota_set"

    client.force_login(manager)
    asked = client.post(reverse("api-quotas"), body | {"subject_type": "user", "subject": BOB}, content_type="application/json")
    assert asked.status_code == 201 and (asked.json()["status"], asked.json()["vo"]) == ("requested", "cms")
    for refused in ({"subject_type": "user", "subject": CAROL}, {"subject_type": "vo", "subject": "ligo"},
                    {"subject_type": "user", "subject": "/CN=nobody"}, {"subject_type": "user", "subject": ALICE, "vo": "ligo"},
                    {"subject_type": "project", "subject": "proj-ligo"}):  # fmt: skip
        response = client.post(reverse("api-quotas"), body | refused, content_type="application/json")
        assert response.status_code == 400 and response.json()["error"] == "no such subject in your VOs", refused
    assert client.post(reverse("api-quotas"), body | {"limit": -1}, content_type="application/json").json()["parameter"] == "limit"
    assert Quota.objects.count() == 2

    client.force_login(council)
    assert client.post(reverse("api-quotas"), body, content_type="application/json").status_code == 403
    assert Quota.objects.filter(status="requested").get().subject == BOB


def test_csv_and_manage_py_export_quotas_give_the_api_rows(client, quota_set, admin):
    import csv
    import json as jsonlib
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    client.force_login(admin)
    api = client.get(reverse("api-quotas"), {"status": "approved"}).json()
    out = StringIO()
    call_command("export", "quotas", "--status", "approved", "--format", "json", stdout=out)
    assert jsonlib.loads(out.getvalue())["results"] == api["results"]
    out = StringIO()
    call_command("export", "quotas", stdout=out)
    rows = list(csv.DictReader(StringIO(out.getvalue())))
    assert [(r["subject"], r["used"], r["over_quota"]) for r in rows] == [("cms", "28.0", "False"), (ALICE, "16.0", "True"), (CAROL, "52.0", "True")]
    streamed = client.get(reverse("api-quotas"), {"format": "csv"})
    assert b"".join(streamed.streaming_content).decode().replace("\r\n", "\n") == out.getvalue().replace("\r\n", "\n")
    with pytest.raises(CommandError, match="status: must be one of"):
        call_command("export", "quotas", "--status", "maybe")
    assert client.get(reverse("api-quotas"), {"colour": "red"}).json()["parameter"] == "colour"
