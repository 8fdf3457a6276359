"""Celery tasks of the portal: thin wrappers around services."""
from celery import shared_task

from portal import rollups


@shared_task(acks_late=True)
def refresh_rollups() -> int:
    """Bring the month rollup up to date with finished summary rebuilds; returns the months rewritten."""
    return rollups.refresh()
