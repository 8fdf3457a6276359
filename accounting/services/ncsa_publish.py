"""NCSA Account Usage Data Format files of the jobs charged at a site (seed 004): a header, one data record
per job and a trailer with the totals, in the layout `ingest.parsers.ncsa` reads (its module docstring).

The jobs are the site's: counted batch and pilot records (a pilot is what the site's batch system ran; the
payloads inside it are the VO's view of the same hours), whose end falls in the period, at the site their
resource maps to (else the record's own). Their core-hours are the site's reported core-hours (DOMAIN.md:
reported hours per site = pilot + batch hours).

Service units follow a configurable formula (`SUFormula`): a basis per job times the charge factor of the
job's resource on the day it ended (`ChargeFactor`; a resource without one is charged the formula's
default factor). Bases:
- `core_hours`: wall hours x cores;
- `canonical_core_hours`: wall hours x canonical units, max(cores, ceil(memory / 2 GB)) (seed 002: one unit is
  1 core + 2 GB; memory blocked is charged like cores);
- `cpu_hours`: CPU time, all cores.
Every number is written as `%.6E`; the trailer's totals are the sums of the values as written, so they agree
with what a reader adds up.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import F
from django.db.models.functions import Coalesce

from accounting.choices import CANONICAL_MB_PER_CORE, RecordKind
from accounting.models import ChargeFactor, UsageRecord

BASES = ("core_hours", "canonical_core_hours", "cpu_hours")
TIME_FORMAT = "%Y%m%d:%H%M%S"
RECORD_COLUMNS = (
    "natural_key", "kind", "start", "end", "wall_seconds", "cores", "memory_mb", "cpu_user_seconds", "cpu_sys_seconds",
    "local_user", "person__name", "project__name", "resource_id", "resource__name",
)  # fmt: skip


@dataclass(frozen=True)
class SUFormula:
    """Service units of a job = basis x the charge factor of its resource (default when it has none)."""

    basis: str = "canonical_core_hours"
    default_factor: float = 1.0

    def __post_init__(self):
        if self.basis not in BASES:
            raise ValueError(f"service-unit basis must be one of {', '.join(BASES)}, not {self.basis!r}")
        if not (math.isfinite(self.default_factor) and self.default_factor >= 0):
            raise ValueError("the default charge factor must be a non-negative number")

    def basis_of(self, job: dict) -> float:
        hours = job["wall_seconds"] / 3600.0
        if self.basis == "core_hours":
            return hours * job["cores"]
        if self.basis == "canonical_core_hours":
            return hours * canonical_units(job["cores"], job["memory_mb"])
        return (job["cpu_user_seconds"] + job["cpu_sys_seconds"]) / 3600.0


def canonical_units(cores: int, memory_mb: int | None) -> int:
    """Canonical units a job blocks (1 core + 2 GB each): its cores, or more when its memory needs more."""
    return max(cores, math.ceil((memory_mb or 0) / CANONICAL_MB_PER_CORE))


class ChargeFactors:
    """The charge factor history of every resource, looked up by day."""

    def __init__(self) -> None:
        self.history: dict[int, list[tuple[date, float]]] = {}
        for resource_id, valid_from, factor in ChargeFactor.objects.order_by("resource_id", "valid_from").values_list(
            "resource_id", "valid_from", "factor"
        ):
            self.history.setdefault(resource_id, []).append((valid_from, factor))

    def on(self, resource_id: int | None, day: date, default: float) -> float:
        history = self.history.get(resource_id) if resource_id is not None else None
        if not history:
            return default
        index = bisect.bisect_right(history, (day, float("inf"))) - 1
        return history[index][1] if index >= 0 else default


def site_jobs(start: date, end: date, site: str = ""):
    """The counted batch and pilot records ending in `start`..`end` (end exclusive), at `site` when given."""
    lo = datetime.combine(start, time.min, tzinfo=UTC)
    hi = datetime.combine(end, time.min, tzinfo=UTC)
    records = UsageRecord.objects.counted().filter(kind__in=[RecordKind.BATCH, RecordKind.PILOT], end__gte=lo, end__lt=hi)
    if site:
        records = records.annotate(site_name=Coalesce(F("resource__site__name"), F("site__name"))).filter(site_name=site)
    return records.order_by("end", "natural_key")


@dataclass
class Totals:
    """What was written: the record count and the sums of the trailer (as written), plus core-hours."""

    count: int = 0
    cpu: float = 0.0
    mem: float = 0.0
    su: float = 0.0
    core_hours: float = 0.0


def number(value: float) -> str:
    return f"{value:.6E}"


def text(value) -> str:
    """A text field: no `|` (the separator) and no line break; stripped, as the reader strips it."""
    return " ".join(str(value or "").replace("|", "/").split())


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def lines(start: date, end: date, *, site: str = "", machine: str = "", formula: SUFormula | None = None,
          totals: Totals | None = None) -> Iterator[str]:
    """The file for jobs ending in `start`..`end` (end exclusive), line by line without line endings; streams
    the records. `totals`, when given, is filled in as the lines are produced."""  # fmt: skip
    formula = formula or SUFormula()
    totals = totals if totals is not None else Totals()
    machine = text(machine or site or "gridledger")
    factors = ChargeFactors()
    period_end = datetime.combine(end, time.min, tzinfo=UTC) - timedelta(seconds=1)
    yield f"H|Charges|{machine}|{stamp(datetime.combine(start, time.min, tzinfo=UTC))}|{stamp(period_end)}||SESS_ACCT"
    for job in site_jobs(start, end, site).values(*RECORD_COLUMNS).iterator(chunk_size=5000):
        cpu = number((job["cpu_user_seconds"] + job["cpu_sys_seconds"]) / 3600.0)
        factor = factors.on(job["resource_id"], job["end"].astimezone(UTC).date(), formula.default_factor)
        su = number(formula.basis_of(job) * factor)
        mem = number(job["memory_mb"]) if job["memory_mb"] else "NULL"
        yield "|".join([
            "D", text(job["local_user"]), text(job["person__name"]), text(job["project__name"]), "batch", cpu, mem, "NULL",
            su, number(job["cores"]), job["kind"], text(job["natural_key"]), stamp(job["start"]), stamp(job["end"]),
            text(job["resource__name"]) or machine, "",
        ])  # fmt: skip
        totals.count += 1
        totals.cpu += float(cpu)
        totals.mem += float(mem) if mem != "NULL" else 0.0
        totals.su += float(su)
        totals.core_hours += job["wall_seconds"] * job["cores"] / 3600.0
    yield f"T|{totals.count}|{number(totals.cpu)}|{number(totals.mem)}|NULL|{number(totals.su)}"
