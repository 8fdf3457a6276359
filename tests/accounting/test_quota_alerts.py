"""Threshold crossings: exactly one e-mail and one in-app notice per crossing, never repeated for the same
crossing however often quotas are rebuilt and checked; a new crossing after falling back alerts again."""
from datetime import date

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.db import IntegrityError, transaction

from accounting import tasks
from accounting.models import Notice, Quota, QuotaAlert, UsageRecord
from accounting.services import quota_alerts, quota_requests, quotas, record_actions, summaries
from tests.accounting.ledger_helpers import at, job, topology

pytestmark = pytest.mark.django_db
TODAY = date(2024, 3, 20)


@pytest.fixture(autouse=True)
def march_20th(monkeypatch):
    monkeypatch.setattr(quotas, "today", lambda: TODAY)


@pytest.fixture
def manager(db):
    return User.objects.create_user("vo-boss", email="boss@example.org")


def vo_quota(manager, limit=100.0, thresholds=(80, 100), emails="") -> Quota:
    quota = quota_requests.build(subject_type="vo", subject="cms", metric="core_hours", period="month",
                                 period_start=date(2024, 1, 1), period_end=None, limit=limit, thresholds=list(thresholds),
                                 notify_emails=emails)  # fmt: skip
    return quota_requests.save(quota, None, approved=True, notify_users=[manager])


def rebuild_march_via_task(capture) -> None:
    """What an ingest does: the rebuild task of the touched days, whose commit triggers the quota check."""
    with capture(execute=True):
        tasks.rebuild_days.delay("2024-03-01", "2024-03-31")


def test_a_crossing_sends_one_mail_and_one_notice_however_often_it_is_rebuilt_and_checked(manager, django_capture_on_commit_callbacks):
    topology()
    with django_capture_on_commit_callbacks(execute=True):
        quota = vo_quota(manager)
    job("j1", at(date(2024, 3, 2), 1), 50)  # 50 core-hours: under 80 %
    rebuild_march_via_task(django_capture_on_commit_callbacks)
    assert mail.outbox == [] and Notice.objects.count() == 0
    job("j2", at(date(2024, 3, 5), 1), 35)  # 85 core-hours: 85 % crosses 80 %
    rebuild_march_via_task(django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["boss@example.org"]
    assert "vo cms passed 80 %: 85.0 % of 100 core-hours" in message.subject
    assert "Used 85.00 of 100 core-hours in the window 2024-03-01 to 2024-04-01" in message.body
    notice = Notice.objects.get()
    assert (notice.user, notice.quota, notice.url) == (manager, quota, f"/quotas/{quota.pk}/")
    alert = QuotaAlert.objects.get()
    assert (alert.threshold, alert.percent, alert.window_start, alert.cleared_at) == (80, 85.0, date(2024, 3, 1), None)
    assert alert.email_sent_at is not None and alert.emailed_to == "boss@example.org"

    # The same crossing again and again: rebuilt twice, checked by the beat task twice.
    rebuild_march_via_task(django_capture_on_commit_callbacks)
    rebuild_march_via_task(django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.check_quotas.delay().get() == {"checked": 0, "raised": 0, "cleared": 0}  # nothing rebuilt since
        assert quota_alerts.check_all(everything=True).as_dict() == {"checked": 1, "raised": 0, "cleared": 0}
    assert len(mail.outbox) == 1 and Notice.objects.count() == 1 and QuotaAlert.objects.count() == 1

    # Crossing the next threshold is a new crossing: one more of each.
    job("j3", at(date(2024, 3, 6), 1), 20)  # 105 core-hours
    rebuild_march_via_task(django_capture_on_commit_callbacks)
    rebuild_march_via_task(django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 2 and Notice.objects.count() == 2
    assert "passed 100 %: 105.0 %" in mail.outbox[1].subject
    assert sorted(QuotaAlert.objects.values_list("threshold", flat=True)) == [80, 100]
    quota.refresh_from_db()
    assert (quota.used, quota.window_start) == (105.0, date(2024, 3, 1))


def test_falling_back_clears_the_alert_and_rising_again_is_a_new_crossing(manager, django_capture_on_commit_callbacks):
    topology()
    vo_quota(manager)
    big = job("big", at(date(2024, 3, 2), 1), 60)
    job("small", at(date(2024, 3, 3), 1), 30)
    with django_capture_on_commit_callbacks(execute=True):
        summaries.rebuild(date(2024, 3, 1), date(2024, 3, 31))
        assert quota_alerts.check_all() .as_dict() == {"checked": 1, "raised": 1, "cleared": 0}
    assert len(mail.outbox) == 1
    with django_capture_on_commit_callbacks(execute=True):
        record_actions.set_void([big.pk], True)  # 30 %: below 80 %
        assert quota_alerts.check_all().as_dict() == {"checked": 1, "raised": 0, "cleared": 1}
    assert len(mail.outbox) == 1 and QuotaAlert.objects.get().cleared_at is not None
    with django_capture_on_commit_callbacks(execute=True):
        record_actions.set_void([big.pk], False)  # 90 % again: a second crossing of 80 %
        quota_alerts.check_all()
        quota_alerts.check_all()
    assert len(mail.outbox) == 2 and Notice.objects.count() == 2
    assert QuotaAlert.objects.filter(cleared_at__isnull=True).count() == 1


def test_thresholds_crossed_at_once_open_an_alert_each_and_send_one_mail(manager, django_capture_on_commit_callbacks):
    topology()
    job("j1", at(date(2024, 3, 2), 1), 120)
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 31))
    with django_capture_on_commit_callbacks(execute=True):
        vo_quota(manager, thresholds=(50, 80, 100), emails="ops@example.org, ops@example.org")  # approval checks at once
    assert sorted(QuotaAlert.objects.values_list("threshold", flat=True)) == [50, 80, 100]
    assert len(mail.outbox) == 1 and Notice.objects.count() == 1
    assert mail.outbox[0].to == ["boss@example.org", "ops@example.org"]
    assert "passed 50 % and 80 % and 100 %: 120.0 %" in mail.outbox[0].subject


def test_a_new_window_starts_without_alerts(manager, django_capture_on_commit_callbacks, monkeypatch):
    topology()
    vo_quota(manager)
    job("march", at(date(2024, 3, 2), 1), 90)
    job("april", at(date(2024, 4, 2), 1), 85)
    summaries.rebuild(date(2024, 3, 1), date(2024, 4, 30))
    with django_capture_on_commit_callbacks(execute=True):
        quota_alerts.check_all()
    monkeypatch.setattr(quotas, "today", lambda: date(2024, 4, 10))
    with django_capture_on_commit_callbacks(execute=True):
        quota_alerts.check_all()
        quota_alerts.check_all()
    assert len(mail.outbox) == 2
    assert sorted(QuotaAlert.objects.values_list("window_start", flat=True)) == [date(2024, 3, 1), date(2024, 4, 1)]


def test_the_database_allows_one_open_alert_per_threshold_and_window(manager):
    topology()
    quota = vo_quota(manager)
    QuotaAlert.objects.create(quota=quota, window_start=date(2024, 3, 1), threshold=80, used=85, limit=100, percent=85)
    with pytest.raises(IntegrityError), transaction.atomic():
        QuotaAlert.objects.create(quota=quota, window_start=date(2024, 3, 1), threshold=80, used=86, limit=100, percent=86)


def test_requested_quotas_are_not_checked_and_nobody_named_means_the_admins(django_capture_on_commit_callbacks):
    topology()
    admin = User.objects.create_user("root", email="root@example.org", is_staff=True)
    job("j1", at(date(2024, 3, 2), 1), 95)
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 31))
    build = quota_requests.build(subject_type="vo", subject="cms", metric="core_hours", period="month",
                                 period_start=date(2024, 1, 1), period_end=None, limit=100.0)  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        requested = quota_requests.save(build, None, approved=False)
        quota_alerts.check_all()
    assert mail.outbox == [] and QuotaAlert.objects.count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        quota_requests.decide(requested, admin, approve=True)
    assert [m.to for m in mail.outbox] == [["root@example.org"]]
    assert Notice.objects.get().user == admin


def test_a_failed_mail_is_recorded_and_not_retried(manager, django_capture_on_commit_callbacks, settings):
    settings.EMAIL_BACKEND = "tests.accounting.test_quota_alerts.BrokenBackend"
    topology()
    job("j1", at(date(2024, 3, 2), 1), 90)
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 31))
    with django_capture_on_commit_callbacks(execute=True):
        vo_quota(manager)
        quota_alerts.check_all()
    alert = QuotaAlert.objects.get()
    assert alert.email_error == "smtp down" and alert.email_sent_at is None
    assert Notice.objects.count() == 1


class BrokenBackend:
    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        raise ConnectionError("smtp down")


def test_records_voided_do_not_count(manager):
    topology()
    record = job("j1", at(date(2024, 3, 2), 1), 90)
    UsageRecord.objects.filter(pk=record.pk).update(void=True)
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 31))
    quota = vo_quota(manager)
    assert quotas.state(quota, TODAY).used == 0.0
