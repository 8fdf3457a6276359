"""Applying and reverting corrections (GRACC's corrections table): raw VO, project, site or resource names
mapped to known ones.

Applying a correction re-attributes the records whose dimension row matches (the exact name, or a regular
expression matching the whole name) to the target row, keeps the previous value of every record as a
`RecordChange`, and rebuilds exactly the days those records touch (`affected_days`): the summaries of every
other day are not rewritten. Reverting puts back the previous values of the records the correction moved
(those nobody changed since) and rebuilds their days. Active corrections also catch records that arrive
later: `apply_active` runs before the rebuild of newly ingested days and from the periodic beat task.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from accounting.models import VO, AuditEntry, Correction, Project, RecordChange, Resource, Site, UsageRecord
from accounting.services import affected_days, audit
from accounting.services.refine import day_start

MODELS = {"vo": VO, "project": Project, "site": Site, "resource": Resource}


class CorrectionError(ValueError):
    """A correction that cannot be made or applied: unknown field or target, a bad regular expression."""


@dataclass
class Applied:
    """What applying (or reverting) corrections did: records changed, and the days rebuilt."""

    rows: int = 0
    days: set[date] = field(default_factory=set)
    runs: list[int] = field(default_factory=list)


def validate(field_name: str, match: str, pattern: str, target: str) -> None:
    """Raise CorrectionError unless the rule can be applied: a known field, a usable pattern, a known target."""
    if field_name not in MODELS:
        raise CorrectionError(f"field must be one of {', '.join(MODELS)}, not {field_name!r}")
    if not pattern:
        raise CorrectionError("the pattern is empty")
    if match == Correction.Match.REGEX:
        try:
            re.compile(pattern)
            MODELS[field_name].objects.filter(name__regex=_anchored(pattern)).exists()
        except (re.error, DatabaseError) as exc:
            raise CorrectionError(f"not a usable regular expression: {exc}") from None
    elif match != Correction.Match.EXACT:
        raise CorrectionError(f"match must be exact or regex, not {match!r}")
    if not MODELS[field_name].objects.filter(name=target).exists():
        raise CorrectionError(f"no {field_name} named {target!r}: the target must be a known one")


def _anchored(pattern: str) -> str:
    return f"^(?:{pattern})$"


def source_ids(correction: Correction) -> list[int]:
    """Ids of the dimension rows whose name the correction matches (never the target itself)."""
    model = MODELS[correction.field]
    if correction.match == Correction.Match.REGEX:
        rows = model.objects.filter(name__regex=_anchored(correction.pattern))
    else:
        rows = model.objects.filter(name=correction.pattern)
    return list(rows.exclude(name=correction.target).values_list("pk", flat=True))


def matching_records(correction: Correction, first: date | None = None, last: date | None = None):
    """The records the correction would re-attribute (overlapping `first`..`last` when given)."""
    records = UsageRecord.objects.filter(**{f"{correction.field}_id__in": source_ids(correction)})
    if first is not None and last is not None:
        records = records.filter(start__lt=day_start(last + timedelta(days=1)), end__gte=day_start(first))
    return records


def _target_id(correction: Correction) -> int:
    try:
        return MODELS[correction.field].objects.get(name=correction.target).pk
    except MODELS[correction.field].DoesNotExist:
        raise CorrectionError(f"no {correction.field} named {correction.target!r}") from None


def reattribute(correction: Correction, records, audit_id: int | None = None) -> tuple[int, set[date]]:
    """Point `records` at the correction's target, keeping their previous values; no rebuild.
    Returns (records changed, days they touch)."""
    column = f"{correction.field}_id"
    target = _target_id(correction)
    with transaction.atomic():
        ids = list(records.exclude(**{column: target}).select_for_update().values_list("pk", flat=True))
        if not ids:
            return 0, set()
        days = affected_days.days_of(UsageRecord.objects.filter(pk__in=ids))
        now = timezone.now()
        for chunk in _chunks(ids, 5000):
            _copy_history(column, chunk, str(target), correction.pk, audit_id, now)
            UsageRecord.objects.filter(pk__in=chunk).update(**{column: target})
        Correction.objects.filter(pk=correction.pk).update(applied_at=now, rows_changed=correction.rows_changed + len(ids))
        correction.rows_changed += len(ids)
    return len(ids), days


def _copy_history(column: str, ids: list[int], new_value: str, correction_id, audit_id, now) -> None:
    """One RecordChange per record, written set-based (INSERT ... SELECT) with the record's current value."""
    marks = ", ".join(["%s"] * len(ids))
    sql = (
        "INSERT INTO accounting_recordchange (record_id, field, old_value, new_value, correction_id, audit_id, created_at) "
        f"SELECT id, %s, COALESCE(CAST({column} AS VARCHAR(40)), ''), %s, %s, %s, %s FROM accounting_usagerecord "
        f"WHERE id IN ({marks})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [column.removesuffix("_id"), new_value, correction_id, audit_id, now, *ids])


def _chunks(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def apply(correction_id: int, audit_id: int | None = None, progress=None) -> Applied:
    """Apply one correction to every matching record and rebuild exactly the days they touch."""
    correction = Correction.objects.get(pk=correction_id)
    rows, days = reattribute(correction, matching_records(correction), audit_id)
    runs = affected_days.rebuild(days, progress)
    return Applied(rows=rows, days=days, runs=runs)


def revert(correction_id: int, audit_id: int | None = None, progress=None) -> Applied:
    """Undo a correction: records it moved that still carry its target get their previous value back (each
    change kept as a RecordChange); the correction is deactivated; their days are rebuilt."""
    correction = Correction.objects.get(pk=correction_id)
    column = f"{correction.field}_id"
    target = str(_target_id(correction))
    with transaction.atomic():
        Correction.objects.filter(pk=correction_id).update(active=False)
        latest: dict[int, str] = {}
        for record_id, old in (
            RecordChange.objects.filter(correction=correction, field=correction.field, new_value=target)
            .order_by("record_id", "-id")
            .values_list("record_id", "old_value")
        ):
            latest.setdefault(record_id, old)
        current = dict(UsageRecord.objects.filter(pk__in=list(latest)).values_list("pk", column))
        moved = [pk for pk, value in current.items() if str(value) == target]
        days = affected_days.days_of(UsageRecord.objects.filter(pk__in=moved)) if moved else set()
        by_old: dict[str, list[int]] = {}
        for pk in moved:
            by_old.setdefault(latest[pk], []).append(pk)
        now = timezone.now()
        for old, ids in by_old.items():
            for chunk in _chunks(ids, 5000):
                _copy_history(column, chunk, old, correction.pk, audit_id, now)
                UsageRecord.objects.filter(pk__in=chunk).update(**{column: int(old) if old else None})
    runs = affected_days.rebuild(days, progress)
    return Applied(rows=len(moved), days=days, runs=runs)


def apply_active(first: date | None = None, last: date | None = None) -> Applied:
    """Re-attribute records (overlapping `first`..`last` when given) that active corrections match, e.g. ones
    that just arrived under a raw name. Days outside `first`..`last` are rebuilt here; the caller rebuilds the
    range itself. Each correction that changed something is audited (user: none, the system did it)."""
    result = Applied()
    for correction in Correction.objects.filter(active=True).order_by("pk"):
        records = matching_records(correction, first, last)
        if not records.exists():
            continue
        entry = audit.record(None, AuditEntry.Action.CORRECTION_APPLY, f"{correction} (new records)", details={"correction": correction.pk})
        rows, days = reattribute(correction, records, entry.pk)
        AuditEntry.objects.filter(pk=entry.pk).update(rows=rows, days=len(days))
        result.rows += rows
        result.days |= days
    if first is not None and last is not None:
        outside = {day for day in result.days if not first <= day <= last}
    else:
        outside = result.days
    result.runs = affected_days.rebuild(outside)
    return result
