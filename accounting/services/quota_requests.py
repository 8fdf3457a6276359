"""Setting, requesting and deciding quotas (DOMAIN.md "Quotas (NGS)"): VO managers request quotas for their
VO and its members, admins set them or approve and reject requests. Every step is audited. Who may do what
is the portal's to decide (its role scope); these functions check only what a quota must be.
"""
from __future__ import annotations

import math
from datetime import date

from django.utils import timezone

from accounting.models import VO, AuditEntry, Person, Project, Quota
from accounting.services import audit, quota_alerts
from accounting.services.quotas import METRIC_COLUMNS

SUBJECT_MODELS = {Quota.Subject.VO: VO, Quota.Subject.USER: Person, Quota.Subject.PROJECT: Project}


class QuotaError(ValueError):
    """A quota that cannot be set as asked; `parameter` names the field at fault."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter
        self.message = message


def resolve_subject(subject_type: str, name: str, parameter: str = "subject"):
    """The VO, person or project named `name`; QuotaError naming `parameter` when there is none."""
    if subject_type not in SUBJECT_MODELS:
        raise QuotaError("subject_type", f"must be one of {', '.join(SUBJECT_MODELS)}")
    try:
        return SUBJECT_MODELS[subject_type].objects.get(name=name)
    except SUBJECT_MODELS[subject_type].DoesNotExist:
        raise QuotaError(parameter, f"no {subject_type} named {name!r}") from None


def validate_period(period: str, start: date, end: date | None) -> None:
    if period not in Quota.Period.values:
        raise QuotaError("period", f"must be one of {', '.join(Quota.Period.values)}")
    if period == Quota.Period.CUSTOM and end is None:
        raise QuotaError("period_end", "a custom window needs its end (exclusive)")
    if end is not None and end <= start:
        raise QuotaError("period_end", f"must be after period_start ({start})")


def build(*, subject_type: str, subject: str, metric: str, period: str, period_start: date, period_end: date | None = None,
          limit: float, vo: str = "", thresholds=None, notify_emails: str = "", note: str = "") -> Quota:
    """An unsaved quota from names and values, checked (QuotaError naming the parameter at fault)."""  # fmt: skip
    target = resolve_subject(subject_type, subject)
    if metric not in METRIC_COLUMNS:
        raise QuotaError("metric", f"must be one of {', '.join(METRIC_COLUMNS)}")
    validate_period(period, period_start, period_end)
    if not (isinstance(limit, int | float) and math.isfinite(limit) and limit > 0):
        raise QuotaError("limit", "must be a positive number")
    try:
        thresholds = sorted({int(t) for t in (thresholds or [80, 100])})
    except (TypeError, ValueError):
        raise QuotaError("thresholds", "whole percentages, e.g. 80,100") from None
    if any(not 0 < t <= 1000 for t in thresholds):
        raise QuotaError("thresholds", "percentages between 1 and 1000")
    quota = Quota(
        subject_type=subject_type, subject=target.name, metric=metric, period=period, period_start=period_start,
        period_end=period_end, limit=float(limit), thresholds=thresholds, notify_emails=notify_emails, note=note,
    )  # fmt: skip
    if subject_type == Quota.Subject.VO:
        if vo and vo != target.name:
            raise QuotaError("vo", "a VO quota's vo is its subject")
        quota.vo = target
    else:
        setattr(quota, "person" if subject_type == Quota.Subject.USER else "project", target)
        if vo:
            quota.vo = resolve_subject(Quota.Subject.VO, vo, "vo")
    return quota


def save(quota: Quota, user, *, approved: bool, notify_users=()) -> Quota:
    """Store a quota set by an admin (`approved`) or requested by a VO manager, audited; an approved quota's
    usage is computed and its thresholds checked at once."""
    quota.status = Quota.Status.APPROVED if approved else Quota.Status.REQUESTED
    quota.requested_by = user if getattr(user, "is_authenticated", False) else None
    if approved:
        quota.decided_by, quota.decided_at = quota.requested_by, timezone.now()
    quota.save()
    quota.notify.set(notify_users)
    action = AuditEntry.Action.QUOTA_SET if approved else AuditEntry.Action.QUOTA_REQUEST
    audit.record(user, action, str(quota), rows=1, details={"quota": quota.pk})
    if approved:
        quota_alerts.check_quota(quota)
        quota.refresh_from_db()
    return quota


def decide(quota: Quota, user, approve: bool) -> Quota:
    """An admin approves or rejects a requested quota (audited); approval checks it at once."""
    quota.status = Quota.Status.APPROVED if approve else Quota.Status.REJECTED
    quota.decided_by, quota.decided_at = user, timezone.now()
    quota.save(update_fields=["status", "decided_by", "decided_at"])
    action = AuditEntry.Action.QUOTA_APPROVE if approve else AuditEntry.Action.QUOTA_REJECT
    audit.record(user, action, str(quota), rows=1, details={"quota": quota.pk})
    if approve:
        quota_alerts.check_quota(quota)
        quota.refresh_from_db()
    return quota
