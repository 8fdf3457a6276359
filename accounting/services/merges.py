"""Merging a renamed site or resource into its new name, with the history kept (`TopologyMerge`).

Everything that pointed at the old row moves to the new one (records through a correction, so each record's
previous value is kept as a `RecordChange`; resources, snapshots, APEL summaries, benchmark and charge
factors), the old row stays with its name as history, an active exact correction sends records that still
arrive under the old name to the new one, and exactly the days whose summaries change are rebuilt.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from django.db import transaction
from django.db.models import Q

from accounting.models import (
    ApelSummary,
    BenchmarkFactor,
    CapacitySnapshot,
    ChargeFactor,
    Correction,
    Resource,
    Site,
    TopologyMerge,
    UsageRecord,
)
from accounting.services import affected_days, corrections


class MergeError(ValueError):
    """A merge that cannot be done (the same row twice, an unknown row)."""


@dataclass
class Merged:
    merge: TopologyMerge
    rows: int = 0
    days: set[date] = field(default_factory=set)
    runs: list[int] = field(default_factory=list)


def _correction(kind: str, old_name: str, new_name: str) -> Correction:
    correction, _ = Correction.objects.update_or_create(
        field=kind, match=Correction.Match.EXACT, pattern=old_name,
        defaults={"target": new_name, "active": True, "note": f"merge of {kind} {old_name!r} into {new_name!r}"},
    )  # fmt: skip
    return correction


def merge_site(old_id: int, new_id: int, user=None, audit_id: int | None = None, progress=None) -> Merged:
    """Merge site `old_id` into `new_id`: its resources, records, snapshots and APEL summaries move."""
    if old_id == new_id:
        raise MergeError("a site cannot be merged into itself")
    with transaction.atomic():
        old, new = Site.objects.select_for_update().get(pk=old_id), Site.objects.get(pk=new_id)
        touched = UsageRecord.objects.filter(Q(site=old) | Q(resource__site=old))
        days = affected_days.days_of(touched) if touched.exists() else set()
        details = {
            "resources": Resource.objects.filter(site=old).update(site=new),
            "capacity_snapshots": CapacitySnapshot.objects.filter(site=old).update(site=new),
            "apel_summaries": ApelSummary.objects.filter(site=old).update(site=new),
        }
        correction = _correction("site", old.name, new.name)
        rows, _ = corrections.reattribute(correction, UsageRecord.objects.filter(site=old), audit_id)
        merge = TopologyMerge.objects.create(
            kind=TopologyMerge.Kind.SITE, old_name=old.name, old_id=old.pk, new_name=new.name, new_id=new.pk,
            records_moved=rows, details=details, correction=correction, audit_id=audit_id,
            merged_by=user if getattr(user, "is_authenticated", False) else None,
        )  # fmt: skip
    return Merged(merge=merge, rows=rows, days=days, runs=affected_days.rebuild(days, progress))


def merge_resource(old_id: int, new_id: int, user=None, audit_id: int | None = None, progress=None) -> Merged:
    """Merge resource `old_id` into `new_id`: records and snapshots move; benchmark and charge factors move
    where the new resource has none from the same day; the new resource takes the old one's site if it has
    none. When that changes the new resource's site or factors, the days of its own records are rebuilt too."""
    if old_id == new_id:
        raise MergeError("a resource cannot be merged into itself")
    with transaction.atomic():
        old, new = Resource.objects.select_for_update().get(pk=old_id), Resource.objects.select_for_update().get(pk=new_id)
        details = {"capacity_snapshots": CapacitySnapshot.objects.filter(resource=old).update(resource=new)}
        benchmark_keys = set(BenchmarkFactor.objects.filter(resource=new).values_list("benchmark", "valid_from"))
        moving = [b.pk for b in BenchmarkFactor.objects.filter(resource=old) if (b.benchmark, b.valid_from) not in benchmark_keys]
        details["benchmark_factors"] = BenchmarkFactor.objects.filter(pk__in=moving).update(resource=new)
        charge_days = set(ChargeFactor.objects.filter(resource=new).values_list("valid_from", flat=True))
        moving = [c.pk for c in ChargeFactor.objects.filter(resource=old) if c.valid_from not in charge_days]
        details["charge_factors"] = ChargeFactor.objects.filter(pk__in=moving).update(resource=new)
        site_taken = new.site_id is None and old.site_id is not None
        if site_taken:
            Resource.objects.filter(pk=new.pk).update(site_id=old.site_id)
        details["site_taken"] = site_taken
        touched = UsageRecord.objects.filter(resource=old)
        if site_taken or details["benchmark_factors"]:
            touched = UsageRecord.objects.filter(resource__in=[old, new])
        days = affected_days.days_of(touched) if touched.exists() else set()
        correction = _correction("resource", old.name, new.name)
        rows, _ = corrections.reattribute(correction, UsageRecord.objects.filter(resource=old), audit_id)
        merge = TopologyMerge.objects.create(
            kind=TopologyMerge.Kind.RESOURCE, old_name=old.name, old_id=old.pk, new_name=new.name, new_id=new.pk,
            records_moved=rows, details=details, correction=correction, audit_id=audit_id,
            merged_by=user if getattr(user, "is_authenticated", False) else None,
        )  # fmt: skip
    return Merged(merge=merge, rows=rows, days=days, runs=affected_days.rebuild(days, progress))
