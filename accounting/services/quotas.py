"""Quotas (DOMAIN.md "Quotas (NGS)"): a subject's reported usage against its limit, per window.

Usage counts reported hours only (`REPORTED_DESIGNATIONS`: payload excess and unmatched hours never count),
summed from the daily summaries over the quota's current window: the calendar month, quarter or year that
contains the day (clipped to the quota's `period_start` and `period_end`), or its custom window. Windows end
exclusive, like `end` in `GET /api/v1/usage/`. A subject is over quota when its usage has reached the limit.

The usage of the current window is cached on the quota row by the threshold checks that run after every
rebuild (and from beat); the check a gatekeeper calls reads that row, and sums the summaries itself only when
a rebuild of a day of the window committed after it (or the window rolled over), so the answer is always that
of the current summaries.
Threshold crossings are in `quota_alerts`; setting, requesting and deciding quotas in `quota_requests`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta

from django.db.models import Exists, Max, Min, OuterRef, Sum
from django.utils import timezone

from accounting.models import DailyUsage, Quota, SummaryRun

METRIC_COLUMNS = {
    Quota.Metric.CORE_HOURS: "wall_hours",
    Quota.Metric.NORMALIZED_HOURS: "normalized_hours",
    Quota.Metric.GPU_HOURS: "gpu_hours",
}
PERIOD_MONTHS = {Quota.Period.MONTH: 1, Quota.Period.QUARTER: 3, Quota.Period.YEAR: 12}


def today() -> date:
    """The current UTC day (tests replace it)."""
    return timezone.now().date()


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def window(quota: Quota, day: date) -> tuple[date, date] | None:
    """The window of `quota` containing `day` (start inclusive, end exclusive), or None when `day` is before
    the quota starts or after it ends."""
    if day < quota.period_start or (quota.period_end is not None and day >= quota.period_end):
        return None
    if quota.period == Quota.Period.CUSTOM:
        return quota.period_start, quota.period_end
    months = PERIOD_MONTHS[quota.period]
    index = day.year * 12 + day.month - 1
    index -= index % months  # calendar-aligned: quarters from January, April, July, October
    start = date(index // 12, index % 12 + 1, 1)
    end = add_months(start, months)
    if quota.period_end is not None:
        end = min(end, quota.period_end)
    return max(start, quota.period_start), end


def usage_rows(quota: Quota, start: date, end: date):
    """The reported summary rows that count against the quota in `start`..`end` (end exclusive)."""
    rows = DailyUsage.objects.reported().filter(day__gte=start, day__lt=end)
    if quota.subject_type == Quota.Subject.VO:
        return rows.filter(vo_id=quota.vo_id)
    if quota.vo_id is not None:
        rows = rows.filter(vo_id=quota.vo_id)
    if quota.subject_type == Quota.Subject.USER:
        return rows.filter(person_id=quota.person_id)
    return rows.filter(project_id=quota.project_id)


def compute_used(quota: Quota, start: date, end: date) -> float:
    total = usage_rows(quota, start, end).aggregate(total=Sum(METRIC_COLUMNS[quota.metric]))["total"]
    return round(float(total or 0.0), 9)


def _subject_keys(quota: Quota) -> tuple[str, ...]:
    """The summary columns that identify the quota's usage (subject, then the VO it is counted in)."""
    if quota.subject_type == Quota.Subject.VO:
        return ("vo_id",)
    subject = "person_id" if quota.subject_type == Quota.Subject.USER else "project_id"
    return (subject, "vo_id") if quota.vo_id is not None else (subject,)


def _subject_values(quota: Quota, keys: tuple[str, ...]) -> tuple:
    values = {"vo_id": quota.vo_id, "person_id": quota.person_id, "project_id": quota.project_id}
    return tuple(values[key] for key in keys)


def bulk_used(quota_list: list[Quota], day: date) -> dict[int, tuple[tuple[date, date], float]]:
    """Usage of many quotas' windows containing `day`, with one grouped query per (window, metric, kind of
    subject) instead of one per quota: quota id -> (window, used). Quotas outside their life are left out."""
    groups: dict[tuple, list[Quota]] = {}
    bounds_of = {}
    for quota in quota_list:
        bounds = window(quota, day)
        if bounds is None:
            continue
        bounds_of[quota.pk] = bounds
        groups.setdefault((bounds, quota.metric, _subject_keys(quota)), []).append(quota)
    result = {}
    for (bounds, metric, keys), members in groups.items():
        rows = DailyUsage.objects.reported().filter(day__gte=bounds[0], day__lt=bounds[1])
        rows = rows.filter(**{f"{keys[0]}__in": {_subject_values(q, keys)[0] for q in members}})
        totals = {
            tuple(row[key] for key in keys): row["total"]
            for row in rows.values(*keys).annotate(total=Sum(METRIC_COLUMNS[metric])).order_by()
        }
        for quota in members:
            result[quota.pk] = (bounds, round(float(totals.get(_subject_values(quota, keys)) or 0.0), 9))
    return result


@dataclass(frozen=True)
class QuotaState:
    """A quota's standing in its current window (the check endpoint's answer)."""

    quota: Quota
    limit: float
    used: float
    period_start: date
    period_end: date
    as_of: object

    @property
    def percent(self) -> float:
        return round(100.0 * self.used / self.limit, 6)

    @property
    def over_quota(self) -> bool:
        return self.used >= self.limit

    @property
    def vo_name(self) -> str | None:
        name = getattr(self.quota, "vo_name", None)  # read with the quota by `check_subject`
        return name if name is not None else (self.quota.vo.name if self.quota.vo_id else None)

    def as_dict(self) -> dict:
        quota = self.quota
        return {
            "limit": quota.limit,
            "used": round(self.used, 6),
            "percent": self.percent,
            "over_quota": self.over_quota,
            "period_start": self.period_start.isoformat(),
            "period_end": self.period_end.isoformat(),
            "metric": quota.metric,
            "subject_type": quota.subject_type,
            "subject": quota.subject,
            "vo": self.vo_name if quota.vo_id and quota.subject_type != Quota.Subject.VO else None,
            "quota": quota.pk,
            "as_of": self.as_of.isoformat() if self.as_of else None,
        }


# A rebuild still marked running after this long died with its worker; it no longer holds the watermark back.
DEAD_RUN = timedelta(hours=6)


def run_watermark() -> int:
    """The highest SummaryRun id such that every run up to it has finished (committed or failed): usage computed
    now includes every rebuild up to it, and any later rebuild has a higher id."""
    running = SummaryRun.objects.filter(status=SummaryRun.Status.RUNNING, started_at__gt=timezone.now() - DEAD_RUN)
    oldest_running = running.aggregate(first=Min("pk"))["first"]
    if oldest_running is not None:
        return oldest_running - 1
    return SummaryRun.objects.aggregate(last=Max("pk"))["last"] or 0


def refresh(quota: Quota, day: date | None = None, watermark: int | None = None, used: float | None = None) -> QuotaState | None:
    """Recompute the usage of the quota's window containing `day` and cache it on the row. Only threshold
    checks call it (`quota_alerts.check_quota`): the cache is what the alerts were last decided on."""
    day = day or today()
    bounds = window(quota, day)
    if bounds is None:
        return None
    if watermark is None:
        watermark = run_watermark()  # before summing: a rebuild committing meanwhile gets a higher id
    now = timezone.now()
    if used is None:
        used = compute_used(quota, *bounds)
    Quota.objects.filter(pk=quota.pk).update(
        window_start=bounds[0], window_end=bounds[1], used=used, used_at=now, run_watermark=watermark
    )
    quota.window_start, quota.window_end, quota.used, quota.used_at, quota.run_watermark = bounds[0], bounds[1], used, now, watermark
    return QuotaState(quota, quota.limit, used, bounds[0], bounds[1], now)


def rebuilt_since():
    """An expression for a queryset of quotas: whether a rebuild of a day of the cached window committed after
    the cached usage was computed (ids above the quota's watermark: an index range scan)."""
    return Exists(
        SummaryRun.objects.filter(
            pk__gt=OuterRef("run_watermark"), status=SummaryRun.Status.DONE,
            start__lt=OuterRef("window_end"), end__gte=OuterRef("window_start"),
        )
    )  # fmt: skip


def is_stale(quota: Quota, bounds: tuple[date, date]) -> bool:
    """Whether the cached usage may differ from the summaries: another window, never computed, or a rebuild
    of a day in the window committed since (a rebuild still running has not changed what readers see)."""
    if quota.used_at is None or (quota.window_start, quota.window_end) != bounds:
        return True
    known = getattr(quota, "rebuilt_since", None)
    if known is not None:
        return known
    return Quota.objects.filter(pk=quota.pk).annotate(stale=rebuilt_since()).values_list("stale", flat=True).first() or False


def state(quota: Quota, day: date | None = None) -> QuotaState | None:
    """The quota's standing on `day` (default today): the cached usage when current, else computed from the
    summaries (not cached: the next threshold check caches it, together with its alerts)."""
    day = day or today()
    bounds = window(quota, day)
    if bounds is None:
        return None
    if is_stale(quota, bounds):
        return QuotaState(quota, quota.limit, compute_used(quota, *bounds), bounds[0], bounds[1], timezone.now())
    return QuotaState(quota, quota.limit, quota.used, bounds[0], bounds[1], quota.used_at)


CHECK_SQL = """
SELECT q.*, v.name AS vo_name,
       EXISTS (SELECT 1 FROM accounting_summaryrun r
                WHERE r.id > q.run_watermark AND r.status = 'done' AND r.start < q.window_end AND r."end" >= q.window_start
       ) AS rebuilt_since
FROM accounting_quota q LEFT JOIN accounting_vo v ON v.id = q.vo_id
WHERE q.subject_type = %s AND q.subject = %s AND q.status = 'approved'
"""


def check_subject(subject_type: str, subject: str, *, vo_ids=None, metric: str = "", vo: str = "", day: date | None = None):
    """The approved quotas of a subject that are current on `day`, as states, most used first (by percent).

    `vo_ids` limits them to the quotas of those VOs (a VO manager's; None: every quota); `metric` and `vo`
    narrow them. This is the gatekeeper's per-job question, so it is one fixed SQL statement (the ORM would
    spend more time building the query than the database answering it), and needs no more when the cached
    usage is current, as it is after every rebuild's threshold check."""
    sql, params = CHECK_SQL, [subject_type, subject]
    if vo_ids is not None:
        if not vo_ids:
            return []
        sql += f" AND q.vo_id IN ({', '.join(['%s'] * len(vo_ids))})"
        params += sorted(vo_ids)
    if metric:
        sql, params = sql + " AND q.metric = %s", params + [metric]
    if vo:
        sql, params = sql + " AND v.name = %s", params + [vo]
    states = [s for s in (state(q, day) for q in Quota.objects.raw(sql, params)) if s is not None]
    return sorted(states, key=lambda s: (-s.percent, s.quota.pk))


@dataclass(frozen=True)
class Forecast:
    """Usage at the window's end if the rate so far holds, and the day the limit would be reached."""

    rate_per_day: float
    at_end: float
    percent_at_end: float
    limit_reached_on: date | None


def forecast(quota: Quota, used: float, bounds: tuple[date, date], day: date | None = None) -> Forecast:
    """Linear forecast: the rate is the usage so far over the days elapsed up to and including `day`."""
    start, end = bounds
    day = min(day or today(), end - timedelta(days=1))
    elapsed = max(1, (day - start).days + 1)
    remaining = max(0, (end - day).days - 1)
    rate = used / elapsed
    at_end = used + rate * remaining
    reached = None
    if used >= quota.limit:
        reached = day
    elif rate > 0:
        on = day + timedelta(days=math.ceil((quota.limit - used) / rate))
        reached = on if on < end else None
    return Forecast(rate, at_end, 100.0 * at_end / quota.limit, reached)


def daily_usage(quota: Quota, bounds: tuple[date, date]) -> list[tuple[date, float]]:
    """Usage per day of the window (days with none left out), in day order."""
    column = METRIC_COLUMNS[quota.metric]
    rows = usage_rows(quota, *bounds).values("day").annotate(total=Sum(column)).order_by("day")
    return [(row["day"], float(row["total"] or 0.0)) for row in rows]
