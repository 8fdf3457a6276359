"""Celery tasks of the accounting domain: thin wrappers around services, taking ids and ISO dates."""
from datetime import date

from celery import shared_task

from accounting.services import summaries


@shared_task(acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=3)
def rebuild_days(first: str, last: str) -> int:
    """Rebuild the summaries of the days `first`..`last` (ISO dates); returns the SummaryRun id."""
    return summaries.rebuild(date.fromisoformat(first), date.fromisoformat(last)).pk


@shared_task(acks_late=True)
def rebuild_trailing(days: int = 7) -> int:
    """Nightly (beat): rebuild the last `days` days, catching records whose days no ingest touched
    (e.g. mapping-table edits or late pilots). Returns the SummaryRun id."""
    from datetime import timedelta

    from django.utils import timezone

    today = timezone.now().date()
    return summaries.rebuild(today - timedelta(days=days), today).pk
