"""Pilot time in canonical units, partitioned among the eight categories (seed 002; DOMAIN.md).

Pure functions: `classify_pilot` splits one pilot's `cores x time` (and `GPUs x time`) by UTC day among
categories 1-6; `classify_snapshots` turns capacity snapshots into categories 7-8. The database side is
`accounting.services.categories`.

Exact mode (per-job runs inside the pilot are known: startd history from the glidein's .err, or the
payload records linked to the pilot): the pilot's life is cut at every job start and end and at UTC
midnight. In an interval with no job all cores go to overhead. In an interval with jobs, idle
`min(idle_cores, floor(idle_MB / 2048))` whole canonical units go to overhead and the remaining idle
cores are shared among the running jobs in proportion to their cores, into the jobs' own categories;
jobs claiming more cores than the pilot has are scaled down to the pilot's cores. Idle GPUs go to
overhead whole. Job categories: preemption badput (BadputCausedByPreemption/Draining, or still running
when the pilot ended); misconfiguration badput (signal or no exit status within the early window);
goodput (ended with an exit code, any value); a job killed by a signal later in its life counts as
preemption badput (it was killed, not finished: see docs/accounting.md).

Estimated mode (factory data only): see `classify_estimated`.
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from accounting.choices import CANONICAL_MB_PER_CORE, Category
from accounting.services.refine import MICROSECOND, day_start

ENDED_WITH_PILOT_SECONDS = 60  # a job ending this close to its pilot's end without an exit code was killed by it

Totals = dict[tuple[date, str], list[float]]  # (day, category) -> [core-seconds, GPU-seconds]


@dataclass(slots=True)
class Run:
    """One job inside a pilot: its interval, size and how it ended."""

    start: datetime
    end: datetime
    cores: int = 1
    memory_mb: int | None = None
    gpus: int = 0
    exit_code: int | None = None
    exit_signal: int | None = None
    badput_preemption: bool = False
    badput_draining: bool = False


@dataclass(slots=True)
class Pilot:
    """A pilot's size and life, and what the factory and glidein said about it."""

    start: datetime
    end: datetime
    cores: int
    memory_mb: int | None = None
    gpus: int = 0
    condor_started: bool | None = None
    claims: int | None = None
    validation_seconds: float | None = None
    condor_seconds: float | None = None
    metrics: dict = field(default_factory=dict)


def job_category(run: Run, pilot_end: datetime, early_window: float) -> str:
    if run.badput_preemption or run.badput_draining:
        return Category.PREEMPTION_BADPUT
    abnormal = run.exit_signal is not None or run.exit_code is None
    if abnormal and (pilot_end - run.end).total_seconds() <= ENDED_WITH_PILOT_SECONDS:
        return Category.PREEMPTION_BADPUT
    if abnormal and (run.end - run.start).total_seconds() <= early_window:
        return Category.MISCONFIGURATION_BADPUT
    if not abnormal:
        return Category.GOODPUT
    return Category.PREEMPTION_BADPUT


def split_at_midnight(start: datetime, end: datetime):
    """[a, b) pieces of [start, end) that do not cross a UTC midnight, with their day."""
    a = start
    while a < end:
        b = min(end, day_start(a.date() + timedelta(days=1)))
        yield a.date(), a, b
        a = b


def whole(pilot: Pilot, category: str) -> Totals:
    out: Totals = defaultdict(lambda: [0.0, 0.0])
    for day, a, b in split_at_midnight(pilot.start, pilot.end):
        seconds = (b - a).total_seconds()
        out[day, category][0] += pilot.cores * seconds
        out[day, category][1] += pilot.gpus * seconds
    return out


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DAY_US = 86_400_000_000
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def to_us(moment: datetime) -> int:
    """Whole microseconds since the epoch: exact, and cheap to compare and subtract."""
    return (moment - EPOCH) // MICROSECOND


def classify_exact(pilot: Pilot, runs: list[Run], early_window: float) -> Totals:
    """Exact mode: the interval sweep described in the module docstring. Times are whole microseconds
    since the epoch, so every piece's seconds equal `timedelta.total_seconds()` of the same piece."""
    p_start, p_end = to_us(pilot.start), to_us(pilot.end)
    clipped = []
    for run in runs:
        start, end = max(to_us(run.start), p_start), min(to_us(run.end), p_end)
        if end > start:
            clipped.append((start, end, max(run.cores, 0), run.memory_mb, max(run.gpus, 0), job_category(run, pilot.end, early_window)))
    cuts = {p_start, p_end}
    for start, end, *_ in clipped:
        cuts.add(start)
        cuts.add(end)
    cuts = sorted(cuts)
    out: Totals = defaultdict(lambda: [0.0, 0.0])
    days: dict[int, date] = {}
    cores, gpus = pilot.cores, pilot.gpus
    clipped.sort(key=lambda job: job[0])
    waiting, running = 0, []  # a sweep: every job start and end is a cut, so a job runs in [a, b) iff start <= a < end
    for a, b in itertools.pairwise(cuts):
        while waiting < len(clipped) and clipped[waiting][0] <= a:
            running.append(clipped[waiting])
            waiting += 1
        running = [job for job in running if job[1] > a]
        x = a
        while x < b:  # the piece [x, y) of [a, b) within one UTC day
            number = x // DAY_US
            y = min(b, (number + 1) * DAY_US)
            day = days.get(number) or days.setdefault(number, date.fromordinal(EPOCH_ORDINAL + number))
            seconds = (y - x) / 1_000_000
            x = y
            if not running:
                out[day, Category.OVERHEAD][0] += cores * seconds
                out[day, Category.OVERHEAD][1] += gpus * seconds
                continue
            used = sum(job[2] for job in running)
            if used >= cores or used == 0:
                overhead_units = 0 if used else cores
                shares = [(job[5], job[2] * cores / used if used else 0.0) for job in running]
            else:
                idle = cores - used
                if pilot.memory_mb is None:
                    overhead_units = idle
                else:
                    job_mb = sum(job[3] if job[3] is not None else CANONICAL_MB_PER_CORE * job[2] for job in running)
                    overhead_units = max(0, min(idle, int((pilot.memory_mb - job_mb) // CANONICAL_MB_PER_CORE)))
                shares = [(job[5], job[2] * (cores - overhead_units) / used) for job in running]
            out[day, Category.OVERHEAD][0] += overhead_units * seconds
            for category, share in shares:
                out[day, category][0] += share * seconds
            used_gpus = sum(job[4] for job in running)
            if used_gpus >= gpus and used_gpus > 0:
                for job in running:
                    out[day, job[5]][1] += job[4] * gpus / used_gpus * seconds
            else:
                out[day, Category.OVERHEAD][1] += (gpus - used_gpus) * seconds
                for job in running:
                    out[day, job[5]][1] += job[4] * seconds
    return out


def classify_estimated(pilot: Pilot) -> Totals:
    """Estimated mode: shares of the pilot's life from the factory's per-glidein figures, spread evenly
    over its days. Approximations (docs/accounting.md): overhead = validation + idle time (+ the time condor
    did not run); preemption badput = the factory's badput; the rest is goodput; misconfiguration badput
    cannot be told apart from factory data and is 0.
    """
    life = (pilot.end - pilot.start).total_seconds()
    m = pilot.metrics
    validation = m.get("validation_seconds", pilot.validation_seconds) or 0.0
    idle = m.get("idle_seconds") or 0.0
    badput = m.get("badput_seconds") or 0.0
    condor = pilot.condor_seconds
    outside_condor = max(0.0, life - validation - condor) if condor is not None else 0.0
    overhead = min(life, validation + idle + outside_condor)
    badput = min(life - overhead, badput)
    shares = {
        Category.OVERHEAD: overhead / life if life else 1.0,
        Category.PREEMPTION_BADPUT: badput / life if life else 0.0,
    }
    shares[Category.GOODPUT] = max(0.0, 1.0 - sum(shares.values()))
    out: Totals = defaultdict(lambda: [0.0, 0.0])
    for day, a, b in split_at_midnight(pilot.start, pilot.end):
        seconds = (b - a).total_seconds()
        for category, share in shares.items():
            out[day, category][0] += pilot.cores * seconds * share
            out[day, category][1] += pilot.gpus * seconds * share
    return out


def has_factory_figures(pilot: Pilot) -> bool:
    return bool(pilot.metrics.get("jobs_count") or pilot.metrics.get("stats") or pilot.condor_seconds or pilot.claims)


def classify_pilot(pilot: Pilot, runs: list[Run], early_window: float = 600) -> tuple[Totals, bool]:
    """(totals by (day, category), estimated?) for one pilot; the totals sum to `cores x life` exactly."""
    if pilot.condor_started is False:
        return whole(pilot, Category.VALIDATION_FAILS), False
    if runs:
        return classify_exact(pilot, runs, early_window), False
    if pilot.claims == 0 or (pilot.condor_started and pilot.metrics.get("jobs_count") == 0):
        return whole(pilot, Category.DECISION_PROBLEM), False
    if has_factory_figures(pilot):
        return classify_estimated(pilot), True
    # Nothing is known of its jobs: counted as overhead and flagged estimated rather than guessed into a job category.
    return whole(pilot, Category.OVERHEAD), True


@dataclass(slots=True)
class Snapshot:
    timestamp: datetime
    idle_cores: int
    idle_jobs: int


MAX_SNAPSHOT_SECONDS = 3600


def classify_snapshots(series: list[Snapshot]) -> Totals:
    """Categories 7-8 from one series of snapshots (one site/resource/VO), each standing until the next
    (at most an hour; the last one for the series' previous gap): idle cores while matching jobs wait ->
    provisioning bottleneck, with no waiting jobs -> insufficient demand."""
    series = sorted(series, key=lambda s: s.timestamp)
    out: Totals = defaultdict(lambda: [0.0, 0.0])
    gap = MAX_SNAPSHOT_SECONDS
    for index, snap in enumerate(series):
        if index + 1 < len(series):
            gap = min(MAX_SNAPSHOT_SECONDS, (series[index + 1].timestamp - snap.timestamp).total_seconds())
        category = Category.PROVISIONING_BOTTLENECK if snap.idle_jobs > 0 else Category.INSUFFICIENT_DEMAND
        for day, a, b in split_at_midnight(snap.timestamp, snap.timestamp + timedelta(seconds=gap)):
            out[day, category][0] += snap.idle_cores * (b - a).total_seconds()
    return out
