"""The reconciliation queues as admins see them (admin index, reconciliation page): the accounting queues
(`accounting.services.reconciliation`) plus the two that are about bundles, which accounting cannot see:

- `silent`: sources that went silent, like GRACC's probe reports: a source (a bundle's source label, else
  its site, else its uploader) whose newest bundle is older than GRIDLEDGER_SILENT_SOURCE_DAYS (default 3);
- bundle count integrity: bundles whose records read differ from inserted + updated + duplicates (records
  read but not accounted for).

Counts are cached for GRIDLEDGER_QUEUE_CACHE_SECONDS (default 300): they scan the summary table.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, F, Max, Value
from django.db.models.functions import Coalesce, NullIf
from django.utils import timezone

from accounting.services import reconciliation
from ingest.models import Bundle

CACHE_KEY = "gridledger:reconciliation-queues"
LABELS = {**reconciliation.QUEUES, "silent": "Sources that went silent"}


def silent_days() -> int:
    return int(getattr(settings, "GRIDLEDGER_SILENT_SOURCE_DAYS", 3))


def sources():
    """Every source with its newest bundle and bundle count, the stalest first."""
    source = Coalesce(NullIf("source_label", Value("")), NullIf("site_hint", Value("")), "created_by__username", Value("(manage.py ingest)"))
    return Bundle.objects.annotate(source=source).values("source").annotate(last=Max("created_at"), bundles=Count("id")).order_by("last")


def silent_sources(now=None) -> list[dict]:
    now = now or timezone.now()
    cutoff = now - timedelta(days=silent_days())
    return [{**row, "silent_days": (now - row["last"]).days} for row in sources() if row["last"] < cutoff]


def bundle_mismatches(limit: int = 500):
    """Finished bundles whose read count is not inserted + updated + duplicates."""
    return (
        Bundle.objects.filter(status=Bundle.Status.DONE)
        .annotate(accounted=F("records_inserted") + F("records_updated") + F("duplicates"))
        .exclude(records_read=F("accounted"))
        .order_by("-created_at")[:limit]
    )


def counts(refresh: bool = False) -> dict:
    """Queue name -> {label, count, hours, unit}, with `computed_at`; cached."""
    cached = None if refresh else cache.get(CACHE_KEY)
    if cached is not None:
        return cached
    queues = reconciliation.counts()
    queues["silent"] = {"count": len(silent_sources()), "hours": None, "unit": "sources"}
    for name, queue in queues.items():
        queue["label"] = LABELS[name]
    result = {"queues": queues, "computed_at": timezone.now()}
    cache.set(CACHE_KEY, result, int(getattr(settings, "GRIDLEDGER_QUEUE_CACHE_SECONDS", 300)))
    return result
