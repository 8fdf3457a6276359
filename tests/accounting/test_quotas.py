"""Quota windows, usage from reported hours only, the cached usage and the forecast (DOMAIN.md "Quotas")."""
from datetime import date

import pytest

from accounting.models import VO, DailyUsage, Person, Project, Quota
from accounting.services import quota_requests, quotas, summaries
from accounting.services.quota_requests import QuotaError
from tests.accounting.ledger_helpers import ALICE, BOB, at, job, topology

pytestmark = pytest.mark.django_db


def quota(**values) -> Quota:
    values = {"subject_type": "vo", "subject": "cms", "metric": "core_hours", "period": "month",
              "period_start": date(2024, 1, 1), "period_end": None, "limit": 100.0} | values  # fmt: skip
    return quota_requests.build(**values)


@pytest.mark.parametrize(
    ("period", "start", "end", "day", "window"),
    [
        ("month", date(2024, 1, 1), None, date(2024, 3, 15), (date(2024, 3, 1), date(2024, 4, 1))),
        ("month", date(2024, 1, 10), None, date(2024, 1, 20), (date(2024, 1, 10), date(2024, 2, 1))),  # clipped
        ("quarter", date(2024, 1, 1), None, date(2024, 5, 31), (date(2024, 4, 1), date(2024, 7, 1))),
        ("year", date(2023, 1, 1), None, date(2024, 12, 31), (date(2024, 1, 1), date(2025, 1, 1))),
        ("month", date(2024, 1, 1), date(2024, 3, 20), date(2024, 3, 5), (date(2024, 3, 1), date(2024, 3, 20))),
        ("custom", date(2024, 2, 10), date(2024, 5, 10), date(2024, 3, 1), (date(2024, 2, 10), date(2024, 5, 10))),
        ("custom", date(2024, 2, 10), date(2024, 5, 10), date(2024, 5, 10), None),  # the end is exclusive
        ("month", date(2024, 1, 1), None, date(2023, 12, 31), None),  # not started
    ],
)
def test_windows_are_calendar_periods_clipped_to_the_quota(period, start, end, day, window):
    topology()
    assert quotas.window(quota(period=period, period_start=start, period_end=end), day) == window


def test_usage_counts_reported_hours_only_and_the_vo_scope_of_a_person_quota():
    topology()
    cms, atlas = VO.objects.get(name="cms"), VO.objects.get(name="atlas")
    alice, bob = Person.objects.get(name=ALICE), Person.objects.get(name=BOB)
    rows = [  # day, vo, person, designation, core-hours, HS06-hours, GPU hours
        (date(2024, 3, 1), cms, alice, "batch", 10.0, 100.0, 0.0),
        (date(2024, 3, 2), cms, alice, "payload", 5.0, 50.0, 2.0),
        (date(2024, 3, 3), cms, alice, "pilot_residual", 3.0, 30.0, 0.0),
        (date(2024, 3, 3), cms, alice, "payload_excess", 40.0, 400.0, 0.0),  # never counts
        (date(2024, 3, 4), cms, alice, "payload_unmatched", 70.0, 700.0, 0.0),  # never counts
        (date(2024, 3, 4), atlas, alice, "batch", 11.0, 110.0, 0.0),
        (date(2024, 3, 5), cms, bob, "batch", 7.0, 70.0, 0.0),
        (date(2024, 2, 29), cms, alice, "batch", 1000.0, 0.0, 0.0),  # the month before
    ]
    for day, vo, person, designation, wall, normalized, gpu in rows:
        DailyUsage.objects.create(day=day, vo=vo, person=person, kind="batch", designation=designation, jobs=1,
                                  wall_hours=wall, normalized_hours=normalized, gpu_hours=gpu)  # fmt: skip
    march = (date(2024, 3, 1), date(2024, 4, 1))
    assert quotas.compute_used(quota(), *march) == 10 + 5 + 3 + 7
    assert quotas.compute_used(quota(metric="normalized_hours"), *march) == 100 + 50 + 30 + 70
    assert quotas.compute_used(quota(metric="gpu_hours"), *march) == 2.0
    assert quotas.compute_used(quota(subject_type="user", subject=ALICE), *march) == 10 + 5 + 3 + 11  # every VO
    assert quotas.compute_used(quota(subject_type="user", subject=ALICE, vo="cms"), *march) == 10 + 5 + 3
    assert quotas.compute_used(quota(subject_type="user", subject=ALICE, vo="atlas"), *march) == 11


def test_state_reads_the_cached_row_until_a_rebuild_of_its_window_commits(monkeypatch):
    from accounting.services import quota_alerts

    monkeypatch.setattr(quotas, "today", lambda: date(2024, 3, 15))
    topology()
    job("j1", at(date(2024, 3, 2), 1), 10)
    summaries.rebuild(date(2024, 3, 2), date(2024, 3, 2))
    q = quota_requests.save(quota(), None, approved=True)  # approval checks it: usage cached with its alerts
    assert (q.window_start, q.window_end, q.used) == (date(2024, 3, 1), date(2024, 4, 1), 10.0)
    first = quotas.state(q, date(2024, 3, 15))
    assert (first.used, first.percent, first.over_quota, first.as_of) == (10.0, 10.0, False, q.used_at)

    job("j2", at(date(2024, 3, 3), 1), 95)
    assert quotas.state(q, date(2024, 3, 15)).used == 10.0  # the summaries have not changed yet: the cache is them
    summaries.rebuild(date(2024, 3, 3), date(2024, 3, 7))
    q = Quota.objects.get(pk=q.pk)
    after = quotas.state(q, date(2024, 3, 15))  # summed from the summaries: the rebuild touched the window
    assert (after.used, after.percent, after.over_quota) == (105.0, 105.0, True)
    assert Quota.objects.get(pk=q.pk).used == 10.0  # caching it is the threshold check's job (with the alerts)
    quota_alerts.check_all(date(2024, 3, 15))
    q = Quota.objects.get(pk=q.pk)
    assert q.used == 105.0 and quotas.is_stale(q, (date(2024, 3, 1), date(2024, 4, 1))) is False
    summaries.rebuild(date(2024, 5, 1), date(2024, 5, 1))  # outside the window: the cache stays valid
    assert quotas.is_stale(Quota.objects.get(pk=q.pk), (date(2024, 3, 1), date(2024, 4, 1))) is False
    assert quotas.is_stale(q, (date(2024, 4, 1), date(2024, 5, 1))) is True  # the next month: another window


def test_forecast_at_the_current_rate_hand_worked():
    topology()
    q = quota(limit=300.0)
    # March (31 days), 100 core-hours used by the 10th: 10 a day; 21 days left -> 310 (103.3 %); 300 is reached
    # after (300 - 100) / 10 = 20 more days, on the 30th.
    ahead = quotas.forecast(q, 100.0, (date(2024, 3, 1), date(2024, 4, 1)), date(2024, 3, 10))
    assert ahead.rate_per_day == 10.0
    assert ahead.at_end == 310.0
    assert ahead.percent_at_end == pytest.approx(103.333333, rel=1e-6)
    assert ahead.limit_reached_on == date(2024, 3, 30)
    slow = quotas.forecast(quota(limit=1000.0), 100.0, (date(2024, 3, 1), date(2024, 4, 1)), date(2024, 3, 10))
    assert slow.limit_reached_on is None and slow.at_end == 310.0


def test_daily_usage_of_the_window():
    topology()
    job("j1", at(date(2024, 3, 2), 20), 8)  # 4 h on the 2nd, 4 h on the 3rd
    job("j2", at(date(2024, 3, 3), 1), 2, vo="atlas")
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 31))
    assert quotas.daily_usage(quota(), (date(2024, 3, 1), date(2024, 4, 1))) == [(date(2024, 3, 2), 4.0), (date(2024, 3, 3), 4.0)]


@pytest.mark.parametrize(
    ("values", "parameter"),
    [
        ({"subject": "nope"}, "subject"),
        ({"subject_type": "group"}, "subject_type"),
        ({"metric": "cpu_hours"}, "metric"),
        ({"period": "week"}, "period"),
        ({"period": "custom"}, "period_end"),
        ({"period_end": date(2023, 12, 1)}, "period_end"),
        ({"limit": 0}, "limit"),
        ({"limit": float("nan")}, "limit"),
        ({"thresholds": ["x"]}, "thresholds"),
        ({"thresholds": [0, 100]}, "thresholds"),
        ({"subject_type": "user", "subject": ALICE, "vo": "nope"}, "vo"),
        ({"vo": "atlas"}, "vo"),
    ],
)
def test_bad_quotas_name_the_parameter(values, parameter):
    topology()
    with pytest.raises(QuotaError) as caught:
        quota(**values)
    assert caught.value.parameter == parameter


def test_project_quota_and_requests_are_audited():
    topology()
    Project.objects.create(name="p1")
    requested = quota_requests.save(quota(subject_type="project", subject="p1", vo="cms"), None, approved=False)
    assert requested.status == "requested" and requested.subject == "p1" and requested.vo.name == "cms"
    assert requested.used_at is None  # a request is not checked
    from accounting.models import AuditEntry

    assert list(AuditEntry.objects.values_list("action", "rows")) == [("quota_request", 1)]


def test_bulk_usage_equals_one_sum_per_quota():
    topology()
    Project.objects.create(name="p1")
    # core-hours and GPU hours: j0 cms Alice p1 3 and 0; j1 cms Bob 4 and 4; j2 atlas Alice p1 5 and 10; j3 atlas Bob 6 and 18
    for n, (vo, person, project) in enumerate([("cms", ALICE, "p1"), ("cms", BOB, ""), ("atlas", ALICE, "p1"), ("atlas", BOB, "")]):
        job(f"j{n}", at(date(2024, 3, 1 + n), 1), 3 + n, vo=vo, person=person, project=project, gpus=n)
    job("feb", at(date(2024, 2, 10), 1), 10)  # cms Alice
    summaries.rebuild(date(2024, 2, 1), date(2024, 3, 31))
    made = [
        quota(), quota(subject="atlas", metric="gpu_hours"), quota(period="year"),
        quota(subject_type="user", subject=ALICE), quota(subject_type="user", subject=ALICE, vo="atlas"),
        quota(subject_type="user", subject=BOB, vo="cms", metric="normalized_hours"),
        quota(subject_type="project", subject="p1"), quota(subject_type="project", subject="p1", vo="cms"),
        quota(period="custom", period_start=date(2024, 2, 20), period_end=date(2024, 3, 20)),
    ]
    for q in made:
        q.save()
    day = date(2024, 3, 15)
    bulk = quotas.bulk_used(made, day)
    assert [bulk[q.pk][1] for q in made] == [3 + 4, 10 + 18, 10 + 3 + 4, 3 + 5, 5, 0.0, 3 + 5, 3, 3 + 4]
    assert {q.pk: bulk[q.pk][1] for q in made} == {q.pk: quotas.compute_used(q, *quotas.window(q, day)) for q in made}
    assert bulk[made[2].pk][0] == (date(2024, 1, 1), date(2025, 1, 1))
