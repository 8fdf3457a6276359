"""The month rollup (`portal.models.MonthlyUsage`): when report queries read it, and how it is refreshed.

A usage query reads the rollup instead of the daily table only when the answer is provably the same:
period month, quarter, year or total; start and end on the first of a month; no person dimension;
and no summary rebuild newer than the last refresh (`RollupState.run_watermark`). Anything else reads
`DailyUsage`. The daily table stays the source of truth: the rollup trusts that summaries change only
through `accounting.services.summaries.rebuild` (DOMAIN.md: "rebuilt, never edited by hand"), each of
which leaves a `SummaryRun`.
"""
from __future__ import annotations

from datetime import date

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Sum
from django.db.models.functions import TruncMonth
from django.utils import timezone

from accounting.choices import REPORTED_DESIGNATIONS
from accounting.models import DailyUsage, SummaryRun
from accounting.services.reports import METRICS, UsageQuery
from portal.models import MonthlyUsage, RollupState

ROLLUP_PERIODS = ("month", "quarter", "year", "total")
KEYS = ("site_id", "resource_id", "vo_id", "project_id", "science_domain_id", "kind", "designation")
FULL = 0
# grain -> the dimensions it keeps (with the designation, always). Coarsest first: a query reads the first
# grain that keeps every dimension it groups or filters by.
GRAINS = {
    7: ("science_domain",),
    6: ("vo",),
    5: ("site",),
    4: ("site", "vo"),
    3: ("vo", "project", "science_domain"),
    2: ("site", "vo", "science_domain"),
    FULL: ("site", "resource", "vo", "project", "science_domain", "kind"),
}
# Grain `REPORTED + g` holds grain g's rows summed over the reported designations (batch, payload, pilot
# residual) with designation "reported": a year of site x VO is 15,000 rows to read instead of 45,000
# (bench/portal.py: 48 -> 22 ms in psql). Only the portal's PostgreSQL reader uses them
# (`reported_base`); `base_for` never returns them, so "all" and the other designations are unaffected.
REPORTED = 100
REPORTED_DESIGNATION = "reported"
REPORTED_GRAINS = tuple(grain for grain in GRAINS if grain != FULL)  # FULL keeps the kind: hardly fewer rows


def rollup_is_fresh() -> bool:
    """True when the rollup includes every finished rebuild and none is running (one query)."""
    newer = SummaryRun.objects.filter(pk__gt=OuterRef("run_watermark")).exclude(status=SummaryRun.Status.FAILED)
    return RollupState.objects.filter(pk=1).filter(~Exists(newer)).exists()


def grain_for(query: UsageQuery) -> int | None:
    """The coarsest grain that answers the query exactly, or None when only the daily table can."""
    if query.period not in ROLLUP_PERIODS or query.start.day != 1 or query.end.day != 1:
        return None
    needed = set(query.group_by) | {name for name, values in query.filters.items() if values}
    if "user" in needed:
        return None
    return next(grain for grain, kept in GRAINS.items() if needed <= set(kept))


def base_for(query: UsageQuery):
    """The summary rows to aggregate for `query`: a month rollup grain when it gives the same answer."""
    grain = grain_for(query)
    if grain is not None and rollup_is_fresh():
        return MonthlyUsage.objects.filter(grain=grain)
    return DailyUsage.objects.all()


def reported_base(query: UsageQuery, base):
    """The reported-only grain standing in for `base`, or None. Only for reported usage, and only when
    `base` is exactly the grain `base_for` gives (no role scope narrowed it), so nothing is widened."""
    if query.designation != "reported" or base is None or base.model is not MonthlyUsage:
        return None
    grain = grain_for(query)
    if grain not in REPORTED_GRAINS or str(base.query) != str(MonthlyUsage.objects.filter(grain=grain).query):
        return None
    return MonthlyUsage.objects.filter(grain=REPORTED + grain, designation=REPORTED_DESIGNATION)


def month_of(day: date) -> date:
    return day.replace(day=1)


def next_month(day: date) -> date:
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def _ranges(runs: list[dict]) -> list[tuple[date, date]]:
    """Month-aligned [first, end) ranges covering the days of the runs, merged."""
    spans = sorted((month_of(r["start"]), next_month(r["end"])) for r in runs)
    merged: list[list[date]] = []
    for first, end in spans:
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([first, end])
    return [(a, b) for a, b in merged]


def _rewrite(first: date | None, end: date | None) -> None:
    """Replace the rollup rows of [first, end) (everything when None) by sums of the daily rows: the
    full grain from `DailyUsage`, each coarser grain from the full grain."""
    monthly = MonthlyUsage.objects.all()
    daily = DailyUsage.objects.all()
    if first is not None:
        monthly = monthly.filter(day__gte=first, day__lt=end)
        daily = daily.filter(day__gte=first, day__lt=end)
    monthly.delete()
    if connection.vendor == "postgresql":
        where, params = ("AND day >= %s AND day < %s", [first, end]) if first is not None else ("", [])
        metrics = ", ".join(METRICS)
        sums = ", ".join(f"SUM({m})" for m in METRICS)
        table = MonthlyUsage._meta.db_table
        with connection.cursor() as cursor:
            keys = ", ".join(KEYS)
            cursor.execute(
                f"INSERT INTO {table} (grain, day, {keys}, {metrics}) "
                f"SELECT {FULL}, date_trunc('month', day)::date, {keys}, {sums} FROM {DailyUsage._meta.db_table} "
                f"WHERE TRUE {where} GROUP BY 2, {keys}",
                params,
            )
            for grain, kept in GRAINS.items():
                if grain == FULL:
                    continue
                keys = ", ".join([f"{name}_id" for name in kept] + ["designation"])
                cursor.execute(
                    f"INSERT INTO {table} (grain, day, kind, {keys}, {metrics}) "
                    f"SELECT {grain}, day, '', {keys}, {sums} FROM {table} WHERE grain = {FULL} {where} GROUP BY day, {keys}",
                    params,
                )
            for grain in REPORTED_GRAINS:
                keys = ", ".join(f"{name}_id" for name in GRAINS[grain])
                cursor.execute(
                    f"INSERT INTO {table} (grain, day, kind, designation, {keys}, {metrics}) "
                    f"SELECT {REPORTED + grain}, day, '', %s, {keys}, {sums} FROM {table} "
                    f"WHERE grain = {grain} AND designation = ANY(%s) {where} GROUP BY day, {keys}",
                    [REPORTED_DESIGNATION, list(REPORTED_DESIGNATIONS), *params],
                )
        return
    for grain, kept in GRAINS.items():
        keys = [*KEYS] if grain == FULL else [f"{name}_id" for name in kept] + ["designation"]
        rows = daily.annotate(month=TruncMonth("day")).values("month", *keys).annotate(**{f"s_{m}": Sum(m) for m in METRICS})
        MonthlyUsage.objects.bulk_create(
            (
                MonthlyUsage(grain=grain, day=row["month"], **{k: row[k] for k in keys}, **{m: row[f"s_{m}"] for m in METRICS})
                for row in rows.order_by().iterator(chunk_size=2000)
            ),
            batch_size=2000,
        )
    for grain in REPORTED_GRAINS:
        keys = [f"{name}_id" for name in GRAINS[grain]]
        rows = monthly.filter(grain=grain, designation__in=REPORTED_DESIGNATIONS).values("day", *keys)
        MonthlyUsage.objects.bulk_create(
            (
                MonthlyUsage(grain=REPORTED + grain, day=row["day"], designation=REPORTED_DESIGNATION, **{k: row[k] for k in keys},
                             **{m: row[f"s_{m}"] for m in METRICS})  # fmt: skip
                for row in rows.annotate(**{f"s_{m}": Sum(m) for m in METRICS}).order_by().iterator(chunk_size=2000)
            ),
            batch_size=2000,
        )


def _analyze() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {MonthlyUsage._meta.db_table}")


def refresh(full: bool = False) -> int:
    """Bring the rollup up to date with the finished summary rebuilds; returns the months rewritten.

    Rewrites the months touched by the rebuilds since the last refresh (all months on the first run or
    with `full`), then moves the watermark past every run that has finished, stopping at a running one."""
    with transaction.atomic():
        state, created = RollupState.objects.select_for_update().get_or_create(pk=1)
        runs = list(SummaryRun.objects.filter(pk__gt=state.run_watermark).order_by("pk").values("pk", "start", "end", "status"))
        if created or full or state.refreshed_at is None:
            _rewrite(None, None)
            months = MonthlyUsage.objects.filter(grain=FULL).dates("day", "month").count()
        else:
            ranges = _ranges([r for r in runs if r["status"] == SummaryRun.Status.DONE])
            for first, end in ranges:
                _rewrite(first, end)
            months = sum((b.year - a.year) * 12 + b.month - a.month for a, b in ranges)
        for run in runs:
            if run["status"] == SummaryRun.Status.RUNNING:
                break
            state.run_watermark = run["pk"]
        state.refreshed_at = timezone.now()
        state.months = months
        state.save()
    _analyze()
    return months
