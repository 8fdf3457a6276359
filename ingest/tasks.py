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


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def pull_source_task(self, source_id: int) -> dict | None:
    """Pull a source (beat, or "pull now" in admin), then queue the rebuild of the days its bundles touched.

    Redelivered after a lost worker, it takes its own claim back and finishes the interrupted bundles.
    """
    from accounting.tasks import rebuild_days
    from ingest.models import Source
    from ingest.services.sources import pull

    try:
        result = pull(source_id, token=self.request.id)
    except Source.DoesNotExist:
        return None  # deleted since beat or an admin queued it
    for first, last in result.ranges:
        _queue_rebuild(rebuild_days, first.isoformat(), last.isoformat())
    return result.as_dict()


def _queue_rebuild(task, first: str, last: str) -> None:
    transaction.on_commit(lambda: task.delay(first, last))


def queue_pull(source_id: int) -> None:
    """Queue a pull of the source once the current transaction commits."""
    transaction.on_commit(lambda: pull_source_task.delay(source_id))
