"""Helpers of the quota, reconciliation and publishing tests: records built by hand, whole table snapshots."""
from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from accounting.models import VO, DailyUsage, Person, PilotDetails, Project, Resource, ScienceDomain, Site, UsageRecord

ALICE = "/DC=org/DC=example/CN=Alice"
BOB = "/DC=org/DC=example/CN=Bob"


def at(day: date, hour: float = 0) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour)


def named(model, name: str, **values):
    if not name:
        return None
    return model.objects.get_or_create(name=name, defaults=values)[0]


def topology(sites=("SiteA", "SiteB"), vos=("cms", "atlas")):
    """Sites with one mapped resource each (ce-a -> SiteA...), VOs with a science domain, two people."""
    hep = ScienceDomain.objects.get_or_create(name="HEP")[0]
    for site in sites:
        Resource.objects.get_or_create(name=f"ce-{site[-1].lower()}", defaults={"site": named(Site, site)})
    for vo in vos:
        named(VO, vo, field_of_science=hep)
    named(Person, ALICE)
    named(Person, BOB)


def job(key: str, start: datetime, hours: float, *, kind: str = "batch", cores: int = 1, site: str = "SiteA",
        resource: str = "ce-a", vo: str = "cms", person: str = ALICE, project: str = "", pilot_ref: str = "",
        memory_mb: int | None = None, cpu_hours: float = 0.0, gpus: int = 0, local_user: str = "",
        glidein: str = "") -> UsageRecord:
    """One raw record of `hours` wall hours from `start` (its dimensions created by name on first use)."""  # fmt: skip
    record = UsageRecord.objects.create(
        kind=kind, natural_key=key, record_hash="h", source_format="test", site=named(Site, site),
        resource=named(Resource, resource), vo=named(VO, vo), person=named(Person, person), project=named(Project, project),
        pilot_ref=pilot_ref, start=start, end=start + timedelta(hours=hours), wall_seconds=hours * 3600, cores=cores,
        memory_mb=memory_mb, gpus=gpus, cpu_user_seconds=cpu_hours * 3600, local_user=local_user,
    )  # fmt: skip
    if kind == "pilot":
        PilotDetails.objects.create(record=record, glidein_name=glidein, cores=cores)
    return record


def table(**filters) -> list[dict]:
    """Whole DailyUsage rows, ids included, in id order."""
    return list(DailyUsage.objects.filter(**filters).order_by("pk").values())


def rows_without_ids(**filters) -> list[tuple]:
    """DailyUsage rows without their ids, sorted: what a rebuild must reproduce exactly."""
    rows = DailyUsage.objects.filter(**filters).values()
    return sorted((tuple((k, v) for k, v in sorted(row.items()) if k != "id") for row in rows), key=repr)


def hours_by(field: str, **filters) -> dict:
    """Reported core-hours per value of `field` (a DailyUsage lookup such as `vo__name`)."""
    out: dict = {}
    for name, hours in DailyUsage.objects.reported().filter(**filters).values_list(field, "wall_hours"):
        out[name] = round(out.get(name, 0.0) + hours, 9)
    return out
