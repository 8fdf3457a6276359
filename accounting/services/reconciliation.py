"""Reconciliation: the queues admins work through, and the APEL-style sync of job counts.

Queues (DOMAIN.md "Who uses it": unmatched payloads, unknown VOs/projects, ...):
- `unmatched`: payload hours set apart as `payload_unmatched` (their pilot never arrived, or no pilot time
  in their bucket), per day, site and VO, with their age; and the payload records naming a missing pilot;
- `excess`: pilot-days whose linked payloads claim more core-hours than the pilot had (`payload_excess`);
- `unknown_vo` (no VO, or a VO not in the `vos` mapping, so without science domain), `unknown_project`
  (a project not in the `projects` mapping), `unknown_site` (no site from the record nor its resource),
  `unknown_resource` (a resource not in the `sites` mapping);
- `no_benchmark`: resources whose reported hours got 0 normalised hours (no benchmark factor valid then).
Sources that went silent are the portal's (they are bundles, `portal/queues.py`).

Sync (APEL's record-count integrity check, seed 003): per site and month, the jobs the site's APEL summaries
say it ran against the batch and pilot records stored for it (payloads are the VO's view, not the site's).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.db.models import Count, F, Max, Min, Q, Sum
from django.db.models.functions import Coalesce, ExtractMonth, ExtractYear
from django.utils import timezone

from accounting.choices import REPORTED_DESIGNATIONS, Designation, RecordKind
from accounting.models import VO, ApelSummary, DailyUsage, PilotDetails, Site, UsageRecord
from accounting.services.summaries import pilot_days_with_excess

REPORTED_HOURS = Sum("wall_hours", filter=Q(designation__in=REPORTED_DESIGNATIONS))

UNKNOWN = {
    "unknown_vo": (Q(vo__isnull=True) | Q(vo__field_of_science__isnull=True), "vo__name"),
    "unknown_project": (Q(project__isnull=False, project__field_of_science__isnull=True), "project__name"),
    "unknown_site": (Q(site__isnull=True), "resource__name"),
    "unknown_resource": (Q(resource__isnull=True) | Q(resource__site__isnull=True), "resource__name"),
}
QUEUES = {
    "unmatched": "Payloads without their pilot (payload_unmatched)",
    "excess": "Payload hours beyond their pilot's (payload_excess)",
    "unknown_vo": "Unknown VO (not in the vos mapping)",
    "unknown_project": "Unknown project (not in the projects mapping)",
    "unknown_site": "Unknown site (neither record nor resource names one)",
    "unknown_resource": "Resource not in the sites mapping",
    "no_benchmark": "Resources without a benchmark factor",
}


def unmatched(limit: int = 500, today: date | None = None) -> list[dict]:
    """Unmatched payload hours per (day, site, VO), oldest first, with their age in days."""
    today = today or timezone.now().date()
    rows = (
        DailyUsage.objects.filter(designation=Designation.PAYLOAD_UNMATCHED)
        .values("day", "site__name", "vo__name")
        .annotate(jobs=Sum("jobs"), hours=Sum("wall_hours"))
        .order_by("day", "site__name", "vo__name")[:limit]
    )
    return [{**row, "age_days": (today - row["day"]).days} for row in rows]


def orphan_payloads():
    """Counted payload records naming a pilot (by natural key or glidein name) that is not stored, oldest first."""
    pilots = UsageRecord.objects.counted().filter(kind=RecordKind.PILOT)
    glideins = PilotDetails.objects.filter(record__void=False).exclude(glidein_name="").values("glidein_name")
    return (
        UsageRecord.objects.counted()
        .filter(kind=RecordKind.PAYLOAD)
        .exclude(pilot_ref="")
        .exclude(pilot_ref__in=pilots.values("natural_key"))
        .exclude(pilot_ref__in=glideins)
        .order_by("end", "natural_key")
    )


EXCESS_DAYS = 31


def excess(limit: int = 500) -> list[dict]:
    """Pilot-days whose linked payloads claim more core-hours than the pilot had, over the latest
    EXCESS_DAYS days that have `payload_excess` rows: newest day first, largest excess first."""
    days = list(
        DailyUsage.objects.filter(designation=Designation.PAYLOAD_EXCESS)
        .values_list("day", flat=True).distinct().order_by("-day")[:EXCESS_DAYS]
    )  # fmt: skip
    if not days:
        return []
    rows = pilot_days_with_excess(min(days), max(days))[:limit]
    names = {
        "site": dict(Site.objects.filter(pk__in={r["site_id"] for r in rows}).values_list("pk", "name")),
        "vo": dict(VO.objects.filter(pk__in={r["vo_id"] for r in rows}).values_list("pk", "name")),
    }
    return [row | {"site__name": names["site"].get(row["site_id"]), "vo__name": names["vo"].get(row["vo_id"])} for row in rows]


def unknown(queue: str, limit: int = 500) -> list[dict]:
    """Summary rows of one `unknown_*` queue per raw name: jobs, reported core-hours, first and last day."""
    condition, name = UNKNOWN[queue]
    return list(
        DailyUsage.objects.filter(condition)
        .values(name=F(name))
        .annotate(jobs=Sum("jobs"), hours=REPORTED_HOURS, first_day=Min("day"), last_day=Max("day"))
        .order_by("-jobs", F("name").asc(nulls_last=True))[:limit]
    )


def no_benchmark(limit: int = 500) -> list[dict]:
    """Resources (with their site) whose reported hours have no normalised hours, per resource."""
    return list(
        DailyUsage.objects.reported()
        .filter(wall_hours__gt=0, normalized_hours=0)
        .values("resource__name", "site__name")
        .annotate(hours=Sum("wall_hours"), first_day=Min("day"), last_day=Max("day"))
        .order_by("-hours")[:limit]
    )


def counts() -> dict[str, dict]:
    """Each queue's size: `count` (jobs, groups or resources, as `unit` says) and `hours` (core-hours)."""
    out = {}
    row = DailyUsage.objects.filter(designation=Designation.PAYLOAD_UNMATCHED).aggregate(n=Sum("jobs"), h=Sum("wall_hours"))
    out["unmatched"] = {"count": row["n"] or 0, "hours": row["h"] or 0.0, "unit": "jobs"}
    row = DailyUsage.objects.filter(designation=Designation.PAYLOAD_EXCESS).aggregate(
        n=Count("id"), h=Sum("wall_hours")
    )
    out["excess"] = {"count": row["n"] or 0, "hours": row["h"] or 0.0, "unit": "summary rows"}
    for queue, (condition, _) in UNKNOWN.items():
        row = DailyUsage.objects.filter(condition).aggregate(n=Sum("jobs"), h=REPORTED_HOURS)
        out[queue] = {"count": row["n"] or 0, "hours": row["h"] or 0.0, "unit": "jobs"}
    missing = DailyUsage.objects.reported().filter(wall_hours__gt=0, normalized_hours=0)
    row = missing.aggregate(n=Count("resource", distinct=True), h=Sum("wall_hours"))
    nameless = missing.filter(resource__isnull=True).exists()
    out["no_benchmark"] = {"count": (row["n"] or 0) + int(nameless), "hours": row["h"] or 0.0, "unit": "resources"}
    return out


@dataclass(frozen=True)
class SyncRow:
    """One site and month: jobs in the site's APEL summaries (`source_jobs`, None without any) against the
    batch and pilot records stored (`stored_jobs`, not void; `void_jobs` voided by an admin)."""

    site: str
    year: int
    month: int
    source_jobs: int | None
    summaries: int
    stored_jobs: int
    void_jobs: int

    @property
    def difference(self) -> int | None:
        return None if self.source_jobs is None else self.stored_jobs - self.source_jobs

    @property
    def status(self) -> str:
        if self.source_jobs is None:
            return "no summary"
        if self.stored_jobs == self.source_jobs:
            return "match"
        return "missing" if self.stored_jobs < self.source_jobs else "extra"

    def as_dict(self) -> dict:
        return {
            "site": self.site, "month": f"{self.year:04d}-{self.month:02d}", "source_jobs": self.source_jobs,
            "summaries": self.summaries, "stored_jobs": self.stored_jobs, "void_jobs": self.void_jobs,
            "difference": self.difference, "status": self.status,
        }  # fmt: skip


SYNC_COLUMNS = ["site", "month", "source_jobs", "summaries", "stored_jobs", "void_jobs", "difference", "status"]


def sync(first: date, last: date, sites: list[str] | None = None, mismatches_only: bool = False) -> list[SyncRow]:
    """Site-month rows for the months of `first`..`last` (inclusive; any day of each month)."""
    lo = (first.year, first.month)
    hi = (last.year, last.month)
    summaries = ApelSummary.objects.filter(Q(year__gt=lo[0]) | Q(year=lo[0], month__gte=lo[1])).filter(
        Q(year__lt=hi[0]) | Q(year=hi[0], month__lte=hi[1])
    )
    if sites:
        summaries = summaries.filter(site__name__in=sites)
    source = {
        (r["site__name"] or "", r["year"], r["month"]): (r["jobs"], r["n"])
        for r in summaries.values("site__name", "year", "month").annotate(jobs=Sum("number_of_jobs"), n=Count("id"))
    }
    start = datetime(lo[0], lo[1], 1, tzinfo=UTC)
    stop = datetime(hi[0] + hi[1] // 12, hi[1] % 12 + 1, 1, tzinfo=UTC)
    records = UsageRecord.objects.filter(kind__in=[RecordKind.BATCH, RecordKind.PILOT], end__gte=start, end__lt=stop)
    records = records.annotate(site_name=Coalesce("resource__site__name", "site__name"))
    if sites:
        records = records.filter(site_name__in=sites)
    stored = {
        (r["site_name"] or "", r["y"], r["m"]): (r["counted"], r["voided"])
        for r in records.annotate(y=ExtractYear("end", tzinfo=UTC), m=ExtractMonth("end", tzinfo=UTC))
        .values("site_name", "y", "m")
        .annotate(counted=Count("id", filter=Q(void=False)), voided=Count("id", filter=Q(void=True)))
        .order_by()
    }
    rows = []
    for key in sorted(source.keys() | stored.keys()):
        jobs, n = source.get(key, (None, 0))
        counted, voided = stored.get(key, (0, 0))
        row = SyncRow(key[0], key[1], key[2], jobs, n, counted, voided)
        if not mismatches_only or row.status in ("missing", "extra"):
            rows.append(row)
    return rows
