"""APEL summary messages of reported usage, to publish towards WLCG (`APEL-summary-job-message: v0.3`,
APEL's normalised summaries; the layout `ingest.parsers.apel` reads, seed 003).

One record per site, month, VO, person (`GlobalUserName`) and resource (`SubmitHost`), from the daily
summaries' reported rows (payload excess and unmatched hours are never published), so the month totals sent
are the portal's. Choices where APEL and GridLedger differ (docs/accounting.md):
- `WallDuration` is core-seconds with `Processors: 1`: GridLedger's hours are core-hours after the
  payload-only-refines rule and do not keep each job's core count, and WallDuration x Processors is the core
  time either way. `CpuDuration` is CPU seconds, all cores.
- `NormalisedWallDuration` is HS06-seconds (core-hours x the resource's HS06 factor x 3600), and
  `NormalisedCpuDuration` the CPU seconds scaled by the same factor; hours without a factor publish 0.
- Hours are in the month of the UTC day they were spent (GridLedger splits jobs over days), while
  `NumberOfJobs` counts jobs that ended in the month, as APEL does. A bucket whose jobs all end in a later
  month therefore carries hours with `NumberOfJobs: 0`.
- Durations are whole seconds (APEL stores integers), rounded per record. Rows without a site cannot be
  published (Site is mandatory): they are counted in `left_out` and show in the reconciliation queues.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

from django.conf import settings
from django.db.models import Case, F, FloatField, Q, Sum, When
from django.db.models.functions import ExtractMonth, ExtractYear

from accounting.models import DailyUsage

HEADER = "APEL-summary-job-message: v0.3"
SEPARATOR = "%%"


@dataclass(frozen=True)
class SummaryRecord:
    """One normalised APEL summary record, durations in whole seconds."""

    site: str
    year: int
    month: int
    vo: str
    person: str
    submit_host: str
    jobs: int
    wall_seconds: int
    cpu_seconds: int
    normalised_wall: int
    normalised_cpu: int

    def lines(self, infrastructure: str) -> list[str]:
        fields = [
            ("Site", self.site), ("Month", f"{self.month:02d}"), ("Year", str(self.year)),
            ("GlobalUserName", self.person), ("VO", self.vo), ("SubmitHost", self.submit_host),
            ("Infrastructure", infrastructure), ("NodeCount", "1"), ("Processors", "1"),
            ("WallDuration", str(self.wall_seconds)), ("CpuDuration", str(self.cpu_seconds)),
            ("NormalisedWallDuration", str(self.normalised_wall)), ("NormalisedCpuDuration", str(self.normalised_cpu)),
            ("NumberOfJobs", str(self.jobs)),
        ]  # fmt: skip
        return [f"{key}: {_clean(value)}" for key, value in fields if value != ""]


@dataclass(frozen=True)
class Totals:
    jobs: int = 0
    wall_seconds: int = 0
    cpu_seconds: int = 0
    normalised_wall: int = 0
    normalised_cpu: int = 0
    records: int = 0


def _clean(value: str) -> str:
    return " ".join(str(value).split())  # one line, no stray whitespace


def month_range(first: date, last: date) -> tuple[date, date]:
    """The first day of `first`'s month and the first day after `last`'s month."""
    start = first.replace(day=1)
    index = last.year * 12 + last.month
    return start, date(index // 12, index % 12 + 1, 1)


def summary_records(first: date, last: date, sites=(), vos=()) -> tuple[list[SummaryRecord], dict]:
    """Records for the months of `first`..`last` (inclusive), and what was left out for lack of a site."""
    start, stop = month_range(first, last)
    rows = DailyUsage.objects.reported().filter(day__gte=start, day__lt=stop)
    if sites:
        rows = rows.filter(site__name__in=sites)
    if vos:
        rows = rows.filter(vo__name__in=vos)
    left = rows.filter(site__isnull=True).aggregate(jobs=Sum("jobs"), hours=Sum("wall_hours"))
    normalised_cpu = Case(
        When(wall_hours__gt=0, then=F("cpu_hours") * F("normalized_hours") / F("wall_hours")),
        default=0.0, output_field=FloatField(),
    )  # fmt: skip
    grouped = (
        rows.filter(~Q(site__isnull=True))
        .annotate(year=ExtractYear("day"), month=ExtractMonth("day"))
        .values("site__name", "year", "month", "vo__name", "person__name", "resource__name")
        .annotate(jobs=Sum("jobs"), wall=Sum("wall_hours"), cpu=Sum("cpu_hours"), norm=Sum("normalized_hours"),
                  norm_cpu=Sum(normalised_cpu))  # fmt: skip
        .order_by("site__name", "year", "month", "vo__name", "person__name", "resource__name")
    )
    records = [
        SummaryRecord(
            site=row["site__name"], year=row["year"], month=row["month"], vo=row["vo__name"] or "",
            person=row["person__name"] or "", submit_host=row["resource__name"] or "", jobs=int(row["jobs"] or 0),
            wall_seconds=round((row["wall"] or 0.0) * 3600), cpu_seconds=round((row["cpu"] or 0.0) * 3600),
            normalised_wall=round((row["norm"] or 0.0) * 3600), normalised_cpu=round((row["norm_cpu"] or 0.0) * 3600),
        )  # fmt: skip
        for row in grouped
    ]
    return records, {"jobs": int(left["jobs"] or 0), "core_hours": float(left["hours"] or 0.0)}


def totals(records: list[SummaryRecord]) -> Totals:
    return Totals(
        jobs=sum(r.jobs for r in records), wall_seconds=sum(r.wall_seconds for r in records),
        cpu_seconds=sum(r.cpu_seconds for r in records), normalised_wall=sum(r.normalised_wall for r in records),
        normalised_cpu=sum(r.normalised_cpu for r in records), records=len(records),
    )  # fmt: skip


def message_lines(records: list[SummaryRecord], infrastructure: str | None = None) -> Iterator[str]:
    """The message, line by line (no line endings): the header, then each record closed by `%%`."""
    infrastructure = infrastructure or getattr(settings, "GRIDLEDGER_APEL_INFRASTRUCTURE", "GridLedger")
    yield HEADER
    for record in records:
        yield from record.lines(infrastructure)
        yield SEPARATOR


def message(records: list[SummaryRecord], infrastructure: str | None = None) -> str:
    return "\n".join(message_lines(records, infrastructure)) + "\n"
