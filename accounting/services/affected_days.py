"""Which summary days a change to some records touches, and rebuilding exactly those days.

Summaries are a function of the records of each UTC day (DOMAIN.md), so a change to a record can only move
the rows of the days `[start, end]` it overlaps. A pilot is also felt on the days of the payloads linked to
it (they count at the pilot's site and refine its hours there), so changing a pilot touches those days too.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, date, timedelta

from django.db.models import Q
from django.db.models.functions import TruncDate

from accounting.choices import RecordKind
from accounting.models import PilotDetails, UsageRecord
from accounting.services import summaries

Progress = Callable[[int, int], None]


def days_of(records) -> set[date]:
    """The UTC days the records (a queryset of UsageRecord) touch, with those of payloads linked to its pilots."""
    days = _spans(records)
    pilots = records.filter(kind=RecordKind.PILOT)
    if pilots.exists():
        glideins = PilotDetails.objects.filter(record__in=pilots.values("pk")).exclude(glidein_name="").values("glidein_name")
        payloads = UsageRecord.objects.filter(kind=RecordKind.PAYLOAD).filter(
            Q(pilot_ref__in=pilots.values("natural_key")) | Q(pilot_ref__in=glideins)
        )
        days |= _spans(payloads)
    return days


def _spans(records) -> set[date]:
    days: set[date] = set()
    pairs = records.order_by().annotate(first=TruncDate("start", tzinfo=UTC), last=TruncDate("end", tzinfo=UTC)).values_list("first", "last").distinct()
    for first, last in pairs:
        day = first
        while day <= last:
            days.add(day)
            day += timedelta(days=1)
    return days


def to_ranges(days: Iterable[date]) -> list[tuple[date, date]]:
    """Consecutive days grouped into inclusive (first, last) ranges, in order."""
    ranges: list[tuple[date, date]] = []
    for day in sorted(set(days)):
        if ranges and ranges[-1][1] + timedelta(days=1) == day:
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def rebuild(days: Iterable[date], progress: Progress | None = None) -> list[int]:
    """Rebuild exactly `days` (one SummaryRun per run of consecutive days); returns the SummaryRun ids."""
    ranges = to_ranges(days)
    total = sum((last - first).days + 1 for first, last in ranges)
    done, runs = 0, []
    for first, last in ranges:
        runs.append(summaries.rebuild(first, last).pk)
        done += (last - first).days + 1
        if progress:
            progress(done, total)
    return runs
