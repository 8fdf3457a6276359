"""Celery tasks of the accounting domain: thin wrappers around services, taking ids and ISO dates."""
from datetime import date

from celery import shared_task
from django.db import transaction

from accounting.services import admin_actions, corrections, quota_alerts, summaries


@shared_task(acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=3)
def rebuild_days(first: str, last: str) -> int:
    """Rebuild the summaries of the days `first`..`last` (ISO dates); returns the SummaryRun id.
    Active corrections re-attribute newly arrived records first; quotas are checked once it commits."""
    first_day, last_day = date.fromisoformat(first), date.fromisoformat(last)
    corrections.apply_active(first_day, last_day)
    run_id = summaries.rebuild(first_day, last_day).pk
    transaction.on_commit(check_quotas.delay)
    return run_id


@shared_task(acks_late=True)
def rebuild_trailing(days: int = 7) -> int:
    """Nightly (beat): rebuild the last `days` days, catching records whose days no ingest touched
    (e.g. mapping-table edits or late pilots). Returns the SummaryRun id."""
    from datetime import timedelta

    from django.utils import timezone

    today = timezone.now().date()
    return summaries.rebuild(today - timedelta(days=days), today).pk


@shared_task(acks_late=True)
def check_quotas() -> dict:
    """After every rebuild and from beat: refresh each quota's usage, alert on new threshold crossings (once)."""
    return quota_alerts.check_all().as_dict()


@shared_task(acks_late=True)
def apply_corrections() -> int:
    """Beat: re-attribute records that active corrections match (late arrivals), rebuild their days."""
    result = corrections.apply_active()
    if result.rows:
        transaction.on_commit(check_quotas.delay)
    return result.rows


@shared_task(acks_late=True)
def run_admin_action(entry_id: int) -> int:
    """Run a queued admin action (its AuditEntry id), then check quotas; returns the rows it changed."""
    entry = admin_actions.run(entry_id)
    transaction.on_commit(check_quotas.delay)
    return entry.rows


def queue_admin_action(entry_id: int) -> None:
    """Queue an audited admin action once the transaction that recorded it commits (ids, not objects)."""
    transaction.on_commit(lambda: run_admin_action.delay(entry_id))
