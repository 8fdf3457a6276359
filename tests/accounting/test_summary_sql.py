"""The set-based PostgreSQL rebuild computes exactly what the reference engine computes."""
import random
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting.models import (
    VO,
    BenchmarkFactor,
    DailyUsage,
    Frontend,
    PilotDetails,
    Project,
    Resource,
    ScienceDomain,
    Site,
    UsageRecord,
)
from accounting.services.summaries import load_mappings, load_records, rebuild, rebuild_chunk_python

FIRST = date(2024, 3, 1)
LAST = FIRST + timedelta(days=4)
T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


def make_world(seed: int) -> None:
    rng = random.Random(seed)
    domain = ScienceDomain.objects.create(name=f"Physics {seed}")
    sites = [Site.objects.create(name=f"S{seed}-{i}") for i in range(2)]
    resources = [Resource.objects.create(name=f"R{seed}-{i}", site=rng.choice(sites + [None])) for i in range(3)]
    BenchmarkFactor.objects.create(resource=resources[0], benchmark="HS06", value=10, valid_from=FIRST)
    BenchmarkFactor.objects.create(resource=resources[0], benchmark="SI2K", value=3000, valid_from=FIRST + timedelta(days=2))
    vos = [VO.objects.create(name=f"vo{seed}-{i}", field_of_science=rng.choice([domain, None])) for i in range(2)]
    project = Project.objects.create(name=f"P{seed}", field_of_science=domain)
    Frontend.objects.create(client=f"fe{seed}", vo=vos[1])
    pilots = []
    for i in range(rng.randint(0, 5)):
        start = T0 + timedelta(hours=rng.uniform(0, 80))
        wall = rng.uniform(0, 40 * 3600)
        record = UsageRecord.objects.create(
            kind="pilot", natural_key=f"f{seed}#{i}.0", record_hash="x", source_format="t", start=start,
            end=start + timedelta(seconds=wall), wall_seconds=wall, cores=rng.choice([1, 4, 8]), gpus=rng.choice([0, 0, 1]),
            cpu_user_seconds=rng.uniform(0, wall), site=rng.choice(sites), resource=rng.choice(resources + [None]),
            vo=rng.choice(vos),
        )  # fmt: skip
        PilotDetails.objects.create(record=record, frontend_client=rng.choice(["", f"fe{seed}"]), glidein_name=f"glidein_{seed}_{i}@h")
        pilots.append(record)
    for i in range(rng.randint(0, 20)):
        kind = rng.choice(["payload", "payload", "batch"])
        start = T0 + timedelta(hours=rng.uniform(0, 90))
        ref = ""
        if kind == "payload" and rng.random() < 0.7:
            pilot = rng.choice(pilots) if pilots else None
            ref = rng.choice([pilot.natural_key, f"glidein_{seed}_{pilots.index(pilot)}@h"]) if pilot else "nowhere"
            if pilot:
                start = pilot.start + (pilot.end - pilot.start) * rng.random()
        wall = rng.choice([0, rng.uniform(0, 12 * 3600)])
        UsageRecord.objects.create(
            kind=kind, natural_key=f"ap{seed}#{i}", record_hash="x", source_format="t", start=start,
            end=start + timedelta(seconds=wall), wall_seconds=wall, cores=rng.choice([1, 2]), cpu_user_seconds=rng.uniform(0, wall),
            site=rng.choice(sites), resource=rng.choice(resources + [None]), vo=rng.choice(vos), project=rng.choice([project, None]),
            pilot_ref=ref, void=rng.random() < 0.05,
        )  # fmt: skip


def table():
    return sorted(
        DailyUsage.objects.values_list("day", "site_id", "resource_id", "vo_id", "person_id", "project_id",
                                       "science_domain_id", "kind", "designation", "jobs", "wall_hours", "cpu_hours",
                                       "normalized_hours", "gpu_hours"),  # fmt: skip
        key=repr,
    )


def assert_tables_equal(sql_rows, python_rows):
    assert [row[:10] for row in sql_rows] == [row[:10] for row in python_rows]
    for a, b in zip(sql_rows, python_rows, strict=True):
        assert a[10:] == pytest.approx(b[10:], abs=1e-6)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10**6))
def test_sql_rebuild_equals_reference_engine(seed):
    make_world(seed)
    rebuild(FIRST, LAST)
    sql_rows = table()
    DailyUsage.objects.all().delete()
    rebuild_chunk_python(FIRST, LAST, load_mappings())
    assert_tables_equal(sql_rows, table())
    # one day alone equals that day of the full range
    day = FIRST + timedelta(days=seed % 5)
    rebuild(FIRST, LAST)
    full = [row for row in table() if row[0] == day]
    rebuild(day, day)
    assert [row for row in table() if row[0] == day] == full
    UsageRecord.objects.all().delete()
    DailyUsage.objects.all().delete()


@pytest.mark.django_db
def test_sql_rebuild_is_independent_of_insertion_order():
    make_world(7)
    rebuild(FIRST, LAST)
    before = table()
    rows = list(UsageRecord.objects.order_by("-id").values())
    details = {d["record_id"]: d for d in PilotDetails.objects.values()}
    UsageRecord.objects.all().delete()
    for row in rows:  # re-insert in reverse order (new ids, new physical order)
        old_id = row.pop("id")
        record = UsageRecord.objects.create(**row)
        if old_id in details:
            PilotDetails.objects.create(**(details[old_id] | {"record_id": record.pk}))
    rebuild(FIRST, LAST)
    assert [r for r in table()] == before
    assert load_records(FIRST, LAST)


@pytest.mark.django_db
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10**6))
def test_pilot_days_with_excess_sql_equals_reference(seed):
    from accounting.services.refine import pilot_day_excess
    from accounting.services.summaries import pilot_days_with_excess

    make_world(seed)
    sql = {(r["pilot"], r["day"]): (r["pilot_hours"], r["payload_hours"]) for r in pilot_days_with_excess(FIRST, LAST)}
    reference = {(pilot.natural_key, day): (round(own, 6), round(claimed, 6))
                 for pilot, day, own, claimed in pilot_day_excess(load_records(FIRST, LAST), FIRST, LAST)}  # fmt: skip
    assert sql.keys() == reference.keys()
    for key, (own, claimed) in sql.items():
        assert (own, claimed) == pytest.approx(reference[key], abs=1e-6)
        assert claimed > own
    UsageRecord.objects.all().delete()


@pytest.mark.django_db
@pytest.mark.parametrize("order", [(1, 2, 3), (3, 2, 1), (2, 3, 1)])
@pytest.mark.parametrize("engine", ["sql", "python"])
def test_pilot_exactly_filled_has_no_excess_whatever_the_summing_order(order, engine):
    """A 1-core pilot of 2,160 s (0.6 core-hours) runs payloads of 360, 720 and 1,080 s (0.1, 0.2 and 0.3
    core-hours): it is exactly full. As floats 0.1 + 0.2 + 0.3 = 0.6000000000000001 > 0.6, which once made
    a payload_excess row (and a factor below 1) depending on the order the database summed the parts."""
    site = Site.objects.create(name="S")
    vo = VO.objects.create(name="vo")
    start = T0 + timedelta(hours=1)
    common = {"record_hash": "x", "source_format": "t", "site": site, "vo": vo, "cores": 1}
    UsageRecord.objects.create(kind="pilot", natural_key="f#1.0", start=start, end=start + timedelta(seconds=2160),
                               wall_seconds=2160, **common)  # fmt: skip
    offsets = {1: 0, 2: 360, 3: 1080}
    for tenths in order:  # ids, hence the database's physical order, follow `order`
        begin = start + timedelta(seconds=offsets[tenths])
        UsageRecord.objects.create(kind="payload", natural_key=f"ap#{tenths}", pilot_ref="f#1.0", start=begin,
                                   end=begin + timedelta(seconds=360 * tenths), wall_seconds=360 * tenths, **common)  # fmt: skip
    if engine == "sql":
        rebuild(FIRST, LAST)
    else:
        rebuild_chunk_python(FIRST, LAST, load_mappings())
    hours = {d: h for d, h in DailyUsage.objects.values_list("designation", "wall_hours")}
    assert hours == {"payload": pytest.approx(0.6, abs=1e-9), "pilot_residual": 0.0}


def table_with_ids():
    return {row[0]: row[1:] for row in DailyUsage.objects.values_list("id", *[f.attname for f in DailyUsage._meta.fields if f.name != "id"])}


@pytest.mark.django_db
def test_rebuild_writes_only_the_rows_that_changed():
    make_world(11)
    rebuild(FIRST, LAST)
    built = table_with_ids()
    assert built
    rebuild(FIRST, LAST)  # nothing changed: every row is kept as it was, ids included
    assert table_with_ids() == built

    # a new payload on the third day changes some rows of that day only
    site, vo = Site.objects.first(), VO.objects.first()
    start = T0 + timedelta(days=2, hours=3)
    UsageRecord.objects.create(kind="payload", natural_key="new#1", record_hash="x", source_format="t", start=start,
                               end=start + timedelta(hours=2), wall_seconds=7200, cores=3, site=site, vo=vo)  # fmt: skip
    DailyUsage.objects.create(**{**DailyUsage.objects.values().first(), "id": None})  # a stray duplicate goes too
    rebuild(FIRST, LAST)
    after = table_with_ids()
    kept = {pk for pk in after if pk in built}
    assert kept and len(kept) < len(after)
    assert all(after[pk] == built[pk] for pk in kept)
    assert {row[0] for pk, row in after.items() if pk not in built} == {FIRST + timedelta(days=2)}
    incremental = table()
    DailyUsage.objects.all().delete()
    rebuild(FIRST, LAST)  # from an empty table: the same rows
    assert table() == incremental
