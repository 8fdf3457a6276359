"""Celery tasks of ingest: thin wrappers around services, taking ids."""
from celery import shared_task
from django.db import transaction

from ingest.services.bundles import ingest_bundle, mark_failed


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=3)
def ingest_bundle_task(self, bundle_id: int) -> int:
    """Ingest a stored bundle, then queue the rebuild of the days its records touched."""
    try:
        bundle = ingest_bundle(bundle_id)
    except Exception as exc:
        if self.request.retries >= self.max_retries:
            mark_failed(bundle_id, f"ingest failed: {exc}")
            raise
        raise self.retry(exc=exc, countdown=5) from exc
    if bundle.first_day and bundle.last_day:
        from accounting.tasks import rebuild_days

        first, last = bundle.first_day.isoformat(), bundle.last_day.isoformat()
        transaction.on_commit(lambda: rebuild_days.delay(first, last))
    return bundle.pk


def queue_ingest(bundle_id: int) -> None:
    """Queue a bundle's ingest once the transaction that created it commits (ids, not objects)."""
    transaction.on_commit(lambda: ingest_bundle_task.delay(bundle_id))
