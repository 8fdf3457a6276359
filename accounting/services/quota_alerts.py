"""Threshold crossings of quotas (DOMAIN.md: "thresholds raise alerts once per crossing").

After every rebuild (and periodically, from Celery beat) the approved quotas whose window was rebuilt since
their last check (or rolled over) have their usage refreshed and their thresholds compared with it. A threshold reached with no open alert for it in the window is a crossing: it
opens a `QuotaAlert`, and sends one e-mail and one in-app `Notice` per recipient. Checking again, however
often, finds the alert open and sends nothing. Usage falling back below a threshold (a correction, a voided
record) clears its alert, so that rising above it again is a new crossing. A check that finds several
thresholds crossed at once opens an alert for each and sends one e-mail and one notice naming them all.

Recipients: the quota's `notify` users (e-mail and notice) and `notify_emails` (e-mail); a quota with
neither notifies the active staff (admins). The e-mail leaves after the alert is committed; a failure is
recorded on the alert (`email_error`), never retried into a second e-mail.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import date

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from accounting.models import Notice, Quota, QuotaAlert
from accounting.services import quotas

logger = logging.getLogger(__name__)


@dataclass
class CheckReport:
    """What a check did: quotas checked, alerts raised (crossings) and cleared."""

    checked: int = 0
    raised: int = 0
    cleared: int = 0

    def as_dict(self) -> dict:
        return {"checked": self.checked, "raised": self.raised, "cleared": self.cleared}


def check_all(day: date | None = None, everything: bool = False) -> CheckReport:
    """Check the approved quotas current on `day` (default today) whose usage may have changed since they were
    last checked: their window was rebuilt since, rolled over, or was never checked (`everything`: all).

    Usage is summed for all of them at once (`quotas.bulk_used`); a quota whose usage and window are what its
    alerts were last decided on only has its watermark moved, the others are checked one by one, locked."""
    day = day or quotas.today()
    watermark = quotas.run_watermark()
    report = CheckReport()
    approved = Quota.objects.filter(status=Quota.Status.APPROVED).annotate(rebuilt_since=quotas.rebuilt_since())
    fields = ("subject_type", "vo", "person", "project", "metric", "period", "period_start", "period_end",
              "window_start", "window_end", "used", "used_at", "run_watermark")  # fmt: skip
    candidates = []
    for quota in approved.only(*fields):
        bounds = quotas.window(quota, day)
        if bounds is not None and (everything or quotas.is_stale(quota, bounds)):
            candidates.append(quota)
    computed = quotas.bulk_used(candidates, day)
    unchanged = []
    for quota in candidates:
        bounds, used = computed[quota.pk]
        report.checked += 1
        if quota.used_at is not None and (quota.window_start, quota.window_end) == bounds and quota.used == used:
            unchanged.append(quota.pk)
            continue
        raised, cleared = check_quota(quota.pk, day, watermark, used)
        report.raised += raised
        report.cleared += cleared
    if unchanged:
        Quota.objects.filter(pk__in=unchanged, run_watermark__lt=watermark).update(run_watermark=watermark)
    return report


def check_quota(quota, day: date | None = None, watermark: int | None = None, used: float | None = None) -> tuple[int, int]:
    """Refresh one quota's usage (summed here unless given, with the watermark it was summed after) and raise
    or clear its alerts; returns (raised, cleared)."""
    quota_id = quota if isinstance(quota, int) else quota.pk
    with transaction.atomic():
        quota = Quota.objects.select_for_update(of=("self",)).select_related("vo").get(pk=quota_id)
        if quota.status != Quota.Status.APPROVED:
            return 0, 0
        if watermark is not None and quota.run_watermark > watermark and quota.used_at is not None:
            return 0, 0  # a concurrent check cached newer usage (and decided its alerts) meanwhile
        current = quotas.refresh(quota, day, watermark, used)
        if current is None:
            return 0, 0
        percent = current.percent
        open_alerts = {a.threshold: a for a in quota.alerts.filter(window_start=current.period_start, cleared_at__isnull=True)}
        now = timezone.now()
        cleared = [alert.pk for threshold, alert in open_alerts.items() if percent < threshold]
        if cleared:
            QuotaAlert.objects.filter(pk__in=cleared).update(cleared_at=now)
        crossed = [t for t in sorted(quota.thresholds) if percent >= t and t not in open_alerts]
        if not crossed:
            return 0, len(cleared)
        alerts = [
            QuotaAlert.objects.create(
                quota=quota, window_start=current.period_start, threshold=t, used=current.used, limit=quota.limit, percent=percent
            )
            for t in crossed
        ]
        _notify(quota, current, alerts)
    return len(alerts), len(cleared)


def recipients(quota: Quota) -> tuple[list, list[str]]:
    """(users for in-app notices, e-mail addresses) of a quota's alerts."""
    users = list(quota.notify.filter(is_active=True).order_by("pk"))
    extra = [a for a in re.split(r"[\s,;]+", quota.notify_emails) if a]
    if not users and not extra:
        users = list(get_user_model().objects.filter(is_active=True, is_staff=True).order_by("pk"))
    addresses = list(dict.fromkeys([u.email for u in users if u.email] + extra))
    return users, addresses


def message(quota: Quota, current: quotas.QuotaState, thresholds: list[int]) -> tuple[str, str]:
    """Subject line and body of a crossing's e-mail (the notice carries the subject line)."""
    unit = quota.get_metric_display()
    scope = f" in VO {quota.vo.name}" if quota.vo_id and quota.subject_type != Quota.Subject.VO else ""
    crossed = " and ".join(f"{t} %" for t in thresholds)
    subject = f"Quota of {quota.subject_type} {quota.subject}{scope} passed {crossed}: {current.percent:.1f} % of {quota.limit:g} {unit}"
    ahead = quotas.forecast(quota, current.used, (current.period_start, current.period_end))
    reached = f"; at this rate the limit is reached on {ahead.limit_reached_on}" if ahead.limit_reached_on else ""
    body = (
        f"{subject}.\n\n"
        f"Used {current.used:.2f} of {quota.limit:g} {unit} in the window {current.period_start} to {current.period_end} "
        f"(end exclusive), counting reported hours only.\n"
        f"Forecast at the current rate: {ahead.at_end:.2f} {unit} ({ahead.percent_at_end:.1f} %) by the end of the window{reached}.\n\n"
        f"{getattr(settings, 'GRIDLEDGER_BASE_URL', '').rstrip('/')}/quotas/{quota.pk}/\n"
    )
    return subject, body


def _notify(quota: Quota, current: quotas.QuotaState, alerts: list[QuotaAlert]) -> None:
    users, addresses = recipients(quota)
    subject, body = message(quota, current, [a.threshold for a in alerts])
    top = alerts[-1]
    Notice.objects.bulk_create([Notice(user=u, quota=quota, alert=top, message=subject, url=f"/quotas/{quota.pk}/") for u in users])
    alert_ids = [a.pk for a in alerts]
    QuotaAlert.objects.filter(pk__in=alert_ids).update(emailed_to=", ".join(addresses))
    if addresses:
        transaction.on_commit(lambda: _send(alert_ids, subject, body, addresses))


def _send(alert_ids: list[int], subject: str, body: str, addresses: list[str]) -> None:
    try:
        send_mail(subject, body, None, addresses)
    except Exception as exc:  # the crossing stays recorded; the failure is shown on the alert
        logger.warning("quota alert e-mail to %s failed: %s", addresses, exc)
        QuotaAlert.objects.filter(pk__in=alert_ids).update(email_error=str(exc)[:2000])
        return
    QuotaAlert.objects.filter(pk__in=alert_ids).update(email_sent_at=timezone.now())
