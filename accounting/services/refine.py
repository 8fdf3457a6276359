"""The payload-only-refines rule as a pure function (DOMAIN.md "Summaries").

`summarize()` turns raw records plus mapping tables into daily summary rows for a range of UTC days.
It knows nothing of the database: `accounting.services.summaries` loads its inputs and writes its rows.

For every pilot P and day d, W = P's core-hours on d and S = the core-hours on d of the payloads linked
to P. Payloads keep their hours when S <= W and are scaled by W/S otherwise (the rest is
`payload_excess`); P keeps W - min(S, W) as `pilot_residual`. Payloads without a pilot id are matched by
bucket (site, VO, day) against the residual hours of that bucket's non-payload records, by the same rule.
A payload naming a pilot that is not (yet) there, or an unlinked payload in a bucket without pilot time,
is `payload_unmatched`. CPU and GPU hours are scaled with wall hours.

Choices (docs/accounting.md): a linked payload's hours count at its pilot's site and resource, so that
reported hours per (site, day) always equal pilot + batch hours; the bucket's W is what remains of its
non-payload records after linked payloads took their share, so no pilot hour is given out twice.
The rule compares time in exact integers (core-microseconds, `units`), so a pilot exactly filled by its
payloads is exactly full whatever order their parts are summed in (float sums are not: 0.1 + 0.2 + 0.3
> 0.6), and the set-based SQL engine, whose sums run in no fixed order, gets the same designations.
Every sum runs over records in natural-key order, so the result does not depend on arrival order, and a
day's rows depend only on that day, so rebuilding one day alone equals that day of a full rebuild.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from accounting.choices import Designation, RecordKind

ROUND = 9  # decimal places of stored hours
MICROSECOND = timedelta(microseconds=1)
UNITS_PER_HOUR = 3_600_000_000  # core-microseconds per core-hour


@dataclass(frozen=True, slots=True)
class Rec:
    """A raw usage record as the rules see it."""

    id: int
    kind: str
    natural_key: str
    start: datetime
    end: datetime
    wall_seconds: float
    cores: int
    gpus: int
    cpu_seconds: float
    site_id: int | None
    resource_id: int | None
    vo_id: int | None
    person_id: int | None
    project_id: int | None
    pilot_ref: str = ""
    glidein_name: str = ""
    frontend_client: str = ""


@dataclass
class Mappings:
    """The mapping tables: resource -> site, frontend client -> VO, project/VO -> science domain, benchmarks."""

    resource_site: dict[int, int] = field(default_factory=dict)
    frontend_vo: dict[str, int] = field(default_factory=dict)
    project_domain: dict[int, int] = field(default_factory=dict)
    vo_domain: dict[int, int] = field(default_factory=dict)
    # resource id -> sorted [(valid_from, HS06 per core)]
    benchmarks: dict[int, list[tuple[date, float]]] = field(default_factory=dict)

    def factor(self, resource_id: int | None, day: date) -> float:
        """HS06 per core of the resource on `day`; 0 when it has none (never a silent 1.0)."""
        history = self.benchmarks.get(resource_id) if resource_id is not None else None
        if not history:
            return 0.0
        index = bisect.bisect_right(history, (day, float("inf"))) - 1
        return history[index][1] if index >= 0 else 0.0


RowKey = tuple  # (day, site, resource, vo, person, project, science_domain, kind, designation)


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def split_days(start: datetime, end: datetime, first: date, last: date) -> list[tuple[date, float]]:
    """Seconds of `[start, end]` that fall on each UTC day from `first` to `last` (days with none left out)."""
    return [(day, micros / 1_000_000) for day, micros in split_days_us(start, end, first, last)]


def split_days_us(start: datetime, end: datetime, first: date, last: date) -> list[tuple[date, int]]:
    """Whole microseconds of `[start, end]` on each UTC day from `first` to `last` (days with none left out)."""
    out = []
    day = max(start.date(), first)
    stop = min(end.date(), last)
    while day <= stop:
        lo = max(start, day_start(day))
        hi = min(end, day_start(day + timedelta(days=1)))
        micros = (hi - lo) // MICROSECOND
        if micros > 0:
            out.append((day, micros))
        day += timedelta(days=1)
    return out


def end_day(rec: Rec) -> date:
    return rec.end.date()


class _Rows:
    """Accumulates [jobs, wall, cpu, normalised, gpu] per row key."""

    def __init__(self, mappings: Mappings) -> None:
        self.mappings = mappings
        self.values: dict[RowKey, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])

    def add(self, rec: Rec, day: date, site, resource, designation: str, share: float, part: dict, jobs: int):
        vo = rec.vo_id
        domain = self.mappings.project_domain.get(rec.project_id) or self.mappings.vo_domain.get(vo)
        key = (day, site, resource, vo, rec.person_id, rec.project_id, domain, rec.kind, designation)
        row = self.values[key]
        row[0] += jobs
        wall = part["wall"] * share
        row[1] += wall
        row[2] += part["cpu"] * share
        row[3] += wall * self.mappings.factor(resource, day)
        row[4] += part["gpu"] * share


def summarize(records: list[Rec], first: date, last: date, mappings: Mappings) -> dict[RowKey, list[float]]:
    """Daily summary rows for days `first`..`last` (inclusive) from `records`.

    `records` must hold every non-void record overlapping the range, plus every pilot that a payload
    among them names (found by natural key or glidein name), wherever that pilot lies in time.
    """
    records = sorted(records, key=lambda r: r.natural_key)

    def site_of(rec: Rec):
        return mappings.resource_site.get(rec.resource_id) or rec.site_id

    def vo_of(rec: Rec):
        if rec.kind == RecordKind.PILOT and rec.frontend_client in mappings.frontend_vo:
            return mappings.frontend_vo[rec.frontend_client]
        return rec.vo_id

    rows = _Rows(mappings)
    split = {rec.id: day_parts(rec, first, last) for rec in records}

    # 1. Linked payloads against their pilot, per (pilot, day).
    linked, unlinked, pilot_load = link_payloads(records, split)

    def pilot_factor(pilot: Rec, day: date) -> float:
        load = pilot_load.get((pilot.id, day), 0)
        if load <= 0:
            return 1.0
        own = split[pilot.id].get(day, {}).get("units", 0)
        return min(1.0, own / load)

    # Residual share of every non-payload record per day, before bucket matching, and what is left of it
    # (core-microseconds) for the buckets.
    residual_share: dict[tuple[int, date], float] = {}
    bucket_supply: dict[tuple, int] = defaultdict(int)
    for rec in records:
        if rec.kind == RecordKind.PAYLOAD:
            continue
        for day, part in split[rec.id].items():
            load = pilot_load.get((rec.id, day), 0)
            own = part["units"]
            residual_share[rec.id, day] = (max(own - load, 0) / own) if own > 0 and load > 0 else (1.0 if load <= 0 else 0.0)
            bucket_supply[site_of(rec), vo_of(rec), day] += max(own - load, 0)

    # 2. Unlinked payloads against the residual of their (site, VO, day) bucket.
    bucket_load: dict[tuple, int] = defaultdict(int)
    for rec in unlinked:
        for day, part in split[rec.id].items():
            bucket_load[site_of(rec), rec.vo_id, day] += part["units"]

    def bucket_factor(bucket: tuple) -> float:
        supply, load = bucket_supply.get(bucket, 0), bucket_load.get(bucket, 0)
        return 1.0 if load <= 0 else min(1.0, supply / load)

    # 3. Rows.
    for rec in records:
        recs_days = split[rec.id]
        if rec.kind == RecordKind.PAYLOAD:
            for day, part in recs_days.items():
                jobs = 1 if day == end_day(rec) else 0
                if rec.id in linked:
                    pilot = linked[rec.id]
                    factor = pilot_factor(pilot, day)
                    site, resource = site_of(pilot), pilot.resource_id
                elif rec.pilot_ref or bucket_supply.get((site_of(rec), rec.vo_id, day), 0) <= 0:
                    rows.add(rec, day, site_of(rec), rec.resource_id, Designation.PAYLOAD_UNMATCHED, 1.0, part, jobs)
                    continue
                else:
                    factor = bucket_factor((site_of(rec), rec.vo_id, day))
                    site, resource = site_of(rec), rec.resource_id
                rows.add(rec, day, site, resource, Designation.PAYLOAD, factor, part, jobs)
                if factor < 1.0 and part["wall"] > 0:
                    rows.add(rec, day, site, resource, Designation.PAYLOAD_EXCESS, 1.0 - factor, part, 0)
            continue
        for day, part in recs_days.items():
            jobs = 1 if day == end_day(rec) else 0
            bucket = (site_of(rec), vo_of(rec), day)
            share = residual_share[rec.id, day]
            refined = (rec.id, day) in pilot_load
            supply = bucket_supply.get(bucket, 0)
            load = bucket_load.get(bucket, 0)
            if load > 0 and supply > 0:
                share *= max(supply - load, 0) / supply
                refined = True
            designation = (
                Designation.PILOT_RESIDUAL if rec.kind == RecordKind.PILOT or refined else Designation.BATCH
            )
            rows.add(_with_vo(rec, vo_of(rec)), day, site_of(rec), rec.resource_id, designation, share, part, jobs)
    return {key: _rounded(value) for key, value in rows.values.items()}


def day_parts(rec: Rec, first: date, last: date) -> dict[date, dict]:
    """A record's core-hours, CPU hours and GPU hours on each day of `first`..`last` it overlaps (and a
    zero entry on its end day, where its job is counted), with its exact core-microseconds (`units`)."""
    out = {}
    for day, micros in split_days_us(rec.start, rec.end, first, last):
        seconds = micros / 1_000_000
        fraction = seconds / rec.wall_seconds if rec.wall_seconds > 0 else 0.0
        out[day] = {
            "wall": seconds * rec.cores / 3600.0,
            "cpu": rec.cpu_seconds * fraction / 3600.0,
            "gpu": seconds * rec.gpus / 3600.0,
            "units": micros * rec.cores,
        }
    if first <= end_day(rec) <= last and end_day(rec) not in out:
        out[end_day(rec)] = {"wall": 0.0, "cpu": 0.0, "gpu": 0.0, "units": 0}
    return out


def link_payloads(records: list[Rec], split: dict[int, dict]) -> tuple[dict[int, Rec], list[Rec], dict]:
    """The rule's first step: (payload id -> its pilot, payloads without a pilot id, S per (pilot id, day)
    in core-microseconds). A payload naming a pilot that is not among `records` is in neither (it is unmatched)."""
    pilots_by_key = {r.natural_key: r for r in records if r.kind == RecordKind.PILOT}
    pilots_by_glidein = {r.glidein_name: r for r in records if r.kind == RecordKind.PILOT and r.glidein_name}
    linked: dict[int, Rec] = {}
    unlinked: list[Rec] = []
    load: dict[tuple[int, date], int] = defaultdict(int)
    for rec in records:
        if rec.kind != RecordKind.PAYLOAD:
            continue
        if not rec.pilot_ref:
            unlinked.append(rec)
            continue
        pilot = pilots_by_key.get(rec.pilot_ref) or pilots_by_glidein.get(rec.pilot_ref)
        if pilot is None:
            continue
        linked[rec.id] = pilot
        for day, part in split[rec.id].items():
            load[pilot.id, day] += part["units"]
    return linked, unlinked, load


def pilot_day_excess(records: list[Rec], first: date, last: date) -> list[tuple[Rec, date, float, float]]:
    """(pilot, day, W, S) for every pilot-day whose linked payloads claim more core-hours S than the
    pilot's W: the pilot-days with `payload_excess` (reconciliation)."""
    records = sorted(records, key=lambda r: r.natural_key)
    split = {rec.id: day_parts(rec, first, last) for rec in records}
    linked, _, load = link_payloads(records, split)
    pilots = {pilot.id: pilot for pilot in linked.values()}
    out = []
    for (pilot_id, day), claimed in sorted(load.items(), key=lambda item: (item[0][1], pilots[item[0][0]].natural_key)):
        own = split[pilot_id].get(day, {})
        if claimed > own.get("units", 0) and claimed > 0:
            out.append((pilots[pilot_id], day, own.get("wall", 0.0), claimed / UNITS_PER_HOUR))
    return out


def _with_vo(rec: Rec, vo_id) -> Rec:
    if vo_id == rec.vo_id:
        return rec
    from dataclasses import replace

    return replace(rec, vo_id=vo_id)


def _rounded(values: list[float]) -> list[float]:
    return [int(values[0])] + [round(v, ROUND) + 0.0 for v in values[1:]]
