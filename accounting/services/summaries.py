"""Rebuilding the daily summaries of a day range (DOMAIN.md "Summaries"), persisted as a SummaryRun.

The range is rebuilt inside one transaction: its rows are deleted and written anew from the raw records
and the mapping tables. On PostgreSQL an advisory lock per day keeps two rebuilds of overlapping ranges
from racing (taken in day order, so they cannot deadlock).
"""
from __future__ import annotations

import logging
from datetime import date, timedelta

from django.db import connection, transaction
from django.db.models import Max, Min, Q
from django.utils import timezone

from accounting.choices import BENCHMARK_TO_HS06, RecordKind
from accounting.models import VO, BenchmarkFactor, DailyUsage, Frontend, Project, Resource, SummaryRun, UsageRecord
from accounting.services.categories import rebuild_categories
from accounting.services.refine import Mappings, Rec, day_start, pilot_day_excess, summarize
from accounting.services.summary_sql import pilot_day_excess_sql, rebuild_chunk_sql

logger = logging.getLogger(__name__)
CHUNK_DAYS = 31  # per statement on SQLite (Python engine, records in memory)
SQL_CHUNK_DAYS = 92  # per statement on PostgreSQL (set-based; fewer re-scans of long records)
LOCK_CLASS = 0x6C656467  # "ledg": advisory-lock namespace of summary days
RECORD_COLUMNS = (
    "id", "kind", "natural_key", "start", "end", "wall_seconds", "cores", "gpus", "cpu_user_seconds",
    "cpu_sys_seconds", "site_id", "resource_id", "vo_id", "person_id", "project_id", "pilot_ref",
    "pilot__glidein_name", "pilot__frontend_client",
)  # fmt: skip


def load_mappings() -> Mappings:
    """The mapping tables, as the rules need them."""
    mappings = Mappings(
        resource_site={pk: site for pk, site in Resource.objects.filter(site__isnull=False).values_list("pk", "site_id")},
        frontend_vo=dict(Frontend.objects.values_list("client", "vo_id")),
        project_domain={
            pk: fos for pk, fos in Project.objects.filter(field_of_science__isnull=False).values_list("pk", "field_of_science_id")
        },
        vo_domain={pk: fos for pk, fos in VO.objects.filter(field_of_science__isnull=False).values_list("pk", "field_of_science_id")},
    )
    history: dict[int, dict[date, tuple[str, float]]] = {}
    for resource_id, benchmark, value, valid_from in BenchmarkFactor.objects.order_by("resource_id", "valid_from", "benchmark").values_list(
        "resource_id", "benchmark", "value", "valid_from"
    ):
        # Several benchmarks valid from the same day: HS23 over HS06 over SI2K (newest benchmark wins).
        current = history.setdefault(resource_id, {}).get(valid_from)
        if current is None or _benchmark_rank(benchmark) > _benchmark_rank(current[0]):
            history[resource_id][valid_from] = (benchmark, value * BENCHMARK_TO_HS06[benchmark])
    mappings.benchmarks = {rid: sorted((d, v[1]) for d, v in days.items()) for rid, days in history.items()}
    return mappings


def _benchmark_rank(benchmark: str) -> int:
    return {"SI2K": 0, "HS06": 1, "HS23": 2}.get(benchmark, -1)


def _to_rec(row: tuple) -> Rec:
    (pk, kind, key, start, end, wall, cores, gpus, cpu_user, cpu_sys, site, resource, vo, person, project, ref,
     glidein, frontend) = row  # fmt: skip
    return Rec(
        id=pk, kind=kind, natural_key=key, start=start, end=end, wall_seconds=wall, cores=cores, gpus=gpus,
        cpu_seconds=(cpu_user or 0.0) + (cpu_sys or 0.0), site_id=site, resource_id=resource, vo_id=vo,
        person_id=person, project_id=project, pilot_ref=ref or "", glidein_name=glidein or "",
        frontend_client=frontend or "",
    )  # fmt: skip


def load_records(first: date, last: date) -> list[Rec]:
    """Every counted record overlapping the days, plus the pilots their payloads name."""
    lo, hi = day_start(first), day_start(last + timedelta(days=1))
    rows = list(UsageRecord.objects.counted().filter(start__lt=hi, end__gte=lo).values_list(*RECORD_COLUMNS))
    records = {row[0]: _to_rec(row) for row in rows}
    refs = {r.pilot_ref for r in records.values() if r.kind == RecordKind.PAYLOAD and r.pilot_ref}
    if refs:
        refs = sorted(refs)
        for start in range(0, len(refs), 5000):
            chunk = refs[start : start + 5000]
            pilots = UsageRecord.objects.counted().filter(kind=RecordKind.PILOT).filter(
                Q(natural_key__in=chunk) | Q(pilot__glidein_name__in=chunk)
            )
            for row in pilots.values_list(*RECORD_COLUMNS):
                records.setdefault(row[0], _to_rec(row))
    return list(records.values())


def record_day_range() -> tuple[date, date] | None:
    """First and last day any record touches, or None when there are none."""
    bounds = UsageRecord.objects.counted().aggregate(first=Min("start"), last=Max("end"))
    if bounds["first"] is None:
        return None
    return bounds["first"].date(), bounds["last"].date()


def rebuild(first: date | None = None, last: date | None = None, progress=None) -> SummaryRun:
    """Rebuild the daily summaries of `first`..`last` (inclusive; default: every day with records)."""
    if first is None or last is None:
        bounds = record_day_range()
        existing = DailyUsage.objects.aggregate(first=Min("day"), last=Max("day"))
        candidates = [d for d in (bounds or ()) + (existing["first"], existing["last"]) if d is not None]
        if not candidates:
            today = timezone.now().date()
            return SummaryRun.objects.create(start=today, end=today, status=SummaryRun.Status.DONE, finished_at=timezone.now())
        first = first or min(candidates)
        last = last or max(candidates)
    if last < first:
        raise ValueError(f"end {last} is before start {first}")
    run = SummaryRun.objects.create(start=first, end=last)
    try:
        with transaction.atomic():
            _lock_days(first, last)
            span = _tune_transaction()
            mappings = None if connection.vendor == "postgresql" else load_mappings()
            total = 0
            chunk_first = first
            while chunk_first <= last:
                size = SQL_CHUNK_DAYS if connection.vendor == "postgresql" else CHUNK_DAYS
                chunk_last = min(last, chunk_first + timedelta(days=size - 1))
                total += _rebuild_chunk(chunk_first, chunk_last, mappings, span)
                rebuild_categories(chunk_first, chunk_last, span)
                if progress:
                    progress((chunk_last - first).days + 1, (last - first).days + 1)
                chunk_first = chunk_last + timedelta(days=1)
        SummaryRun.objects.filter(pk=run.pk).update(status=SummaryRun.Status.DONE, rows=total, finished_at=timezone.now())
    except Exception as exc:
        SummaryRun.objects.filter(pk=run.pk).update(status=SummaryRun.Status.FAILED, error=str(exc)[:2000], finished_at=timezone.now())
        raise
    run.refresh_from_db()
    return run


def _lock_days(first: date, last: date) -> None:
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, d) FROM generate_series(%s::int, %s::int) AS d ORDER BY d",
            [LOCK_CLASS, first.toordinal(), last.toordinal()],
        )


def _tune_transaction() -> timedelta | None:
    """PostgreSQL: the longest record's span (bounds every range scan of the rebuild), JIT off for the
    rebuild's transaction (compiling its statements costs more than it saves, most of all for one day) and
    more sort and hash memory than the server's default (a 90-day range sorts and hashes millions of rows)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
    return UsageRecord.objects.longest_span()


def _rebuild_chunk(first: date, last: date, mappings: Mappings | None, span: timedelta | None = None) -> int:
    if connection.vendor == "postgresql":
        return rebuild_chunk_sql(first, last, span)
    return rebuild_chunk_python(first, last, mappings or load_mappings())


def rebuild_chunk_python(first: date, last: date, mappings: Mappings) -> int:
    """The reference engine (refine.summarize) over records loaded into memory: SQLite and tests."""
    rows = summarize(load_records(first, last), first, last, mappings)
    DailyUsage.objects.filter(day__gte=first, day__lte=last).delete()
    objects = [
        DailyUsage(
            day=day, site_id=site, resource_id=resource, vo_id=vo, person_id=person, project_id=project,
            science_domain_id=domain, kind=kind, designation=designation, jobs=values[0], wall_hours=values[1],
            cpu_hours=values[2], normalized_hours=values[3], gpu_hours=values[4],
        )  # fmt: skip
        for (day, site, resource, vo, person, project, domain, kind, designation), values in sorted(
            rows.items(), key=lambda item: tuple("" if v is None else str(v) for v in item[0])
        )
    ]
    DailyUsage.objects.bulk_create(objects, batch_size=5000)
    return len(objects)


def pilot_days_with_excess(first: date, last: date) -> list[dict]:
    """Pilot-days of `first`..`last` whose linked payloads claim more core-hours than the pilot had
    (the `payload_excess` of DOMAIN.md, per pilot): pilot, day, site and VO ids, W, S and S - W."""
    if connection.vendor == "postgresql":
        with transaction.atomic():
            rows = pilot_day_excess_sql(first, last)
    else:
        mappings = load_mappings()
        rows = [
            (pilot.natural_key, day, mappings.resource_site.get(pilot.resource_id) or pilot.site_id, pilot.vo_id, own, claimed)
            for pilot, day, own, claimed in pilot_day_excess(load_records(first, last), first, last)
        ]
        rows.sort(key=lambda r: (-r[1].toordinal(), -(r[5] - r[4]), r[0]))
    return [
        {"pilot": key, "day": day, "site_id": site, "vo_id": vo, "pilot_hours": round(own, 6),
         "payload_hours": round(claimed, 6), "excess_hours": round(claimed - own, 6)}
        for key, day, site, vo, own, claimed in rows
    ]  # fmt: skip
