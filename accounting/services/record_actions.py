"""Admin actions on raw records: void and unvoid, re-link a payload to its pilot, rebuild a day range.

Each changes records only through these functions, keeps every previous value as a `RecordChange`, and
rebuilds exactly the days the changed records touch (`affected_days`), so the summaries of all other days
are left as they were. Voiding is reversible: a voided record is kept, only excluded from summaries
(DOMAIN.md), and unvoiding it gives back exactly the summaries it had.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from django.db import transaction

from accounting.choices import RecordKind
from accounting.models import RecordChange, UsageRecord
from accounting.services import affected_days, summaries


class ActionError(ValueError):
    """An action that cannot be done as asked (a record of the wrong kind, an empty range...)."""


@dataclass
class Done:
    """Records changed and the days rebuilt."""

    rows: int = 0
    days: set[date] = field(default_factory=set)
    runs: list[int] = field(default_factory=list)


def set_void(record_ids: list[int], void: bool, audit_id: int | None = None, progress=None) -> Done:
    """Void (exclude from summaries, keep) or unvoid records; rebuild the days they touch."""
    with transaction.atomic():
        records = UsageRecord.objects.filter(pk__in=record_ids).exclude(void=void)
        ids = list(records.select_for_update().values_list("pk", flat=True))
        if not ids:
            return Done()
        days = affected_days.days_of(UsageRecord.objects.filter(pk__in=ids))
        RecordChange.objects.bulk_create(
            [RecordChange(record_id=pk, field="void", old_value=str(not void), new_value=str(void), audit_id=audit_id) for pk in ids],
            batch_size=5000,
        )
        UsageRecord.objects.filter(pk__in=ids).update(void=void)
    return Done(rows=len(ids), days=days, runs=affected_days.rebuild(days, progress))


def relink(payload_id: int, pilot_id: int, audit_id: int | None = None) -> Done:
    """Make a payload name `pilot` (its natural key) as its pilot; the payload-only-refines rule then refines
    that pilot's hours with it. Only the payload's days change: a pilot is refined day by day, by the payloads
    of that day."""
    with transaction.atomic():
        payload = UsageRecord.objects.select_for_update().get(pk=payload_id)
        pilot = UsageRecord.objects.get(pk=pilot_id)
        if payload.kind != RecordKind.PAYLOAD:
            raise ActionError(f"record {payload.natural_key!r} is a {payload.kind}, not a payload")
        if pilot.kind != RecordKind.PILOT:
            raise ActionError(f"record {pilot.natural_key!r} is a {pilot.kind}, not a pilot")
        if payload.pilot_ref == pilot.natural_key:
            return Done()
        days = affected_days.days_of(UsageRecord.objects.filter(pk=payload.pk))
        RecordChange.objects.create(
            record=payload, field="pilot_ref", old_value=payload.pilot_ref, new_value=pilot.natural_key, audit_id=audit_id
        )
        UsageRecord.objects.filter(pk=payload.pk).update(pilot_ref=pilot.natural_key)
    return Done(rows=1, days=days, runs=affected_days.rebuild(days))


def rebuild_range(first: date, last: date, progress=None) -> Done:
    """Rebuild the summaries of `first`..`last` (inclusive)."""
    if last < first:
        raise ActionError(f"the range ends ({last}) before it starts ({first})")
    run = summaries.rebuild(first, last, progress=progress)
    days = {first.fromordinal(n) for n in range(first.toordinal(), last.toordinal() + 1)}
    return Done(rows=run.rows, days=days, runs=[run.pk])
