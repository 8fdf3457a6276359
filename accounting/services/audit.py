"""Writing the audit log: every admin action on accounting data leaves an `AuditEntry` (who, when, what,
how many rows). Synchronous actions are recorded done; asynchronous ones are queued, then run, report
progress and finish (or fail) on the same row."""
from __future__ import annotations

from django.utils import timezone

from accounting.models import AuditEntry

Action = AuditEntry.Action
Status = AuditEntry.Status


def record(user, action: str, target: str, *, rows: int = 0, days: int = 0, details: dict | None = None) -> AuditEntry:
    """An action already done."""
    return AuditEntry.objects.create(
        user=_user(user), action=action, target=target[:500], rows=rows, days=days, details=details or {},
        status=Status.DONE, progress=100, finished_at=timezone.now(),
    )  # fmt: skip


def queue(user, action: str, target: str, details: dict | None = None) -> AuditEntry:
    """An action to be run by a worker (`accounting.tasks.run_admin_action`)."""
    return AuditEntry.objects.create(
        user=_user(user), action=action, target=target[:500], details=details or {}, status=Status.QUEUED
    )


def start(entry_id: int) -> None:
    AuditEntry.objects.filter(pk=entry_id).update(status=Status.RUNNING, progress=0, error="", finished_at=None)


def progress(entry_id: int, done: int, total: int) -> None:
    percent = 100 if total <= 0 else min(99, int(100 * done / total))
    AuditEntry.objects.filter(pk=entry_id).update(progress=percent)


def finish(entry_id: int, *, rows: int, days: int, details: dict | None = None) -> None:
    values = {"status": Status.DONE, "progress": 100, "rows": rows, "days": days, "finished_at": timezone.now()}
    if details:
        entry = AuditEntry.objects.get(pk=entry_id)
        values["details"] = {**entry.details, **details}
    AuditEntry.objects.filter(pk=entry_id).update(**values)


def fail(entry_id: int, error: str) -> None:
    AuditEntry.objects.filter(pk=entry_id).update(status=Status.FAILED, error=error[:2000], finished_at=timezone.now())


def _user(user):
    return user if user is not None and getattr(user, "is_authenticated", False) else None
