"""The payload-only-refines rule (DOMAIN.md) on hand-worked examples and random data."""
import random
from collections import defaultdict
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting.choices import REPORTED_DESIGNATIONS
from accounting.services.refine import Mappings, Rec, split_days, summarize

D = date(2024, 3, 10)
SITE, OTHER_SITE, VO, ALICE, BOB, PILOT_DN = 1, 2, 10, 100, 101, 199


def at(hour: float, day: date = D) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + timedelta(hours=hour)


_ids = iter(range(1, 10**9))


def rec(kind, start, end, cores=1, *, key=None, site=SITE, vo=VO, person=None, ref="", cpu=0.0, gpus=0, resource=None):
    ident = next(_ids)
    return Rec(
        id=ident, kind=kind, natural_key=key or f"{kind}-{ident}", start=start, end=end,
        wall_seconds=(end - start).total_seconds(), cores=cores, gpus=gpus, cpu_seconds=cpu, site_id=site,
        resource_id=resource, vo_id=vo, person_id=person, project_id=None, pilot_ref=ref,
    )  # fmt: skip


def by_designation(rows, day=D, index=1):
    out = defaultdict(float)
    for key, values in rows.items():
        if key[0] == day:
            out[key[8]] += values[index]
    return {k: round(v, 6) for k, v in out.items()}


def by_person(rows, designation, index=1):
    out = defaultdict(float)
    for key, values in rows.items():
        if key[8] == designation:
            out[key[4]] += values[index]
    return {k: round(v, 6) for k, v in out.items()}


def test_payloads_within_the_pilot_keep_their_hours_and_the_pilot_keeps_the_rest():
    pilot = rec("pilot", at(10), at(12), 4, key="P", person=PILOT_DN)  # W = 8 core-hours
    a = rec("payload", at(10), at(11.5), 1, person=ALICE, ref="P")  # 1.5
    b = rec("payload", at(10.5), at(11.5), 2, person=BOB, ref="P")  # 2
    rows = summarize([pilot, a, b], D, D, Mappings())
    assert by_designation(rows) == {"payload": 3.5, "pilot_residual": 4.5}
    assert by_person(rows, "payload") == {ALICE: 1.5, BOB: 2.0}
    assert by_person(rows, "pilot_residual") == {PILOT_DN: 4.5}


def test_payloads_over_the_pilot_are_scaled_and_the_excess_set_apart():
    pilot = rec("pilot", at(10), at(12), 1, key="P")  # W = 2
    a = rec("payload", at(10), at(12), 1, person=ALICE, ref="P", cpu=7200)  # S = 4 -> factor 1/2
    b = rec("payload", at(10), at(12), 1, person=BOB, ref="P")
    rows = summarize([pilot, a, b], D, D, Mappings())
    assert by_designation(rows) == {"payload": 2.0, "payload_excess": 2.0, "pilot_residual": 0.0}
    assert by_person(rows, "payload") == {ALICE: 1.0, BOB: 1.0}
    assert by_person(rows, "payload", index=2) == {ALICE: 1.0, BOB: 0.0}  # CPU hours follow wall hours


def test_a_pilot_crossing_midnight_is_refined_per_day():
    pilot = rec("pilot", at(22), at(4, D + timedelta(days=1)), 2, key="P")  # 4 + 8 core-hours
    payload = rec("payload", at(23), at(3, D + timedelta(days=1)), 2, ref="P", person=ALICE)  # 2 + 6
    rows = summarize([pilot, payload], D, D + timedelta(days=1), Mappings())
    assert by_designation(rows, D) == {"payload": 2.0, "pilot_residual": 2.0}
    assert by_designation(rows, D + timedelta(days=1)) == {"payload": 6.0, "pilot_residual": 2.0}
    jobs = {(k[0], k[8]): v[0] for k, v in rows.items()}
    assert jobs[D + timedelta(days=1), "payload"] == 1 and jobs[D, "payload"] == 0


def test_a_payload_whose_pilot_never_arrived_is_unmatched_and_not_reported():
    payload = rec("payload", at(1), at(3), 2, ref="missing-pilot", person=ALICE)
    rows = summarize([payload], D, D, Mappings())
    assert by_designation(rows) == {"payload_unmatched": 4.0}


def test_unlinked_payloads_refine_their_site_vo_day_bucket():
    batch = rec("batch", at(0), at(10), 4, person=PILOT_DN)  # 40 core-hours at SITE/VO
    payload = rec("payload", at(0), at(5), 2, person=ALICE)  # 10, no pilot id
    elsewhere = rec("payload", at(0), at(5), 2, person=BOB, site=OTHER_SITE)  # no pilot time there
    rows = summarize([batch, payload, elsewhere], D, D, Mappings())
    assert by_designation(rows) == {"payload": 10.0, "pilot_residual": 30.0, "payload_unmatched": 10.0}


def test_bucket_matching_uses_only_what_linked_payloads_left_of_the_pilot():
    pilot = rec("pilot", at(0), at(10), 1, key="P")  # 10
    linked = rec("payload", at(0), at(6), 1, ref="P", person=ALICE)  # takes 6
    unlinked = rec("payload", at(0), at(8), 1, person=BOB)  # wants 8, only 4 left -> scaled by 1/2
    rows = summarize([pilot, linked, unlinked], D, D, Mappings())
    assert by_person(rows, "payload") == {ALICE: 6.0, BOB: 4.0}
    assert by_designation(rows) == {"payload": 10.0, "payload_excess": 4.0, "pilot_residual": 0.0}


def test_pilot_arriving_later_gives_the_same_rows_as_arriving_together():
    pilot = rec("pilot", at(10), at(12), 4, key="P")
    payload = rec("payload", at(10), at(11), 1, ref="P", person=ALICE)
    before = summarize([payload], D, D, Mappings())
    assert by_designation(before) == {"payload_unmatched": 1.0}
    assert summarize([payload, pilot], D, D, Mappings()) == summarize([pilot, payload], D, D, Mappings())
    assert by_designation(summarize([payload, pilot], D, D, Mappings())) == {"payload": 1.0, "pilot_residual": 7.0}


def test_normalised_hours_use_the_factor_valid_that_day_and_zero_without_one():
    mappings = Mappings(benchmarks={7: [(date(2024, 1, 1), 10.0), (D, 12.0)]})
    with_factor = rec("batch", at(1), at(3), 2, resource=7)  # 4 core-hours x 12
    earlier = rec("batch", at(1, D - timedelta(days=1)), at(2, D - timedelta(days=1)), 1, resource=7)  # 1 x 10
    without = rec("batch", at(1), at(3), 2, resource=8)
    rows = summarize([with_factor, earlier, without], D - timedelta(days=1), D, mappings)
    normalised = {(k[0], k[2]): v[3] for k, v in rows.items()}
    assert normalised == {(D, 7): 48.0, (D - timedelta(days=1), 7): 10.0, (D, 8): 0.0}


def test_frontend_mapping_gives_the_pilot_residual_to_the_frontends_vo():
    pilot = Rec(id=1, kind="pilot", natural_key="P", start=at(0), end=at(1), wall_seconds=3600, cores=1, gpus=0,
                cpu_seconds=0, site_id=SITE, resource_id=None, vo_id=None, person_id=None, project_id=None,
                frontend_client="cms-frontend")  # fmt: skip
    rows = summarize([pilot], D, D, Mappings(frontend_vo={"cms-frontend": 77}))
    ((key, values),) = rows.items()
    assert key[3] == 77 and key[8] == "pilot_residual" and values[1] == 1.0


# --- Properties on random data --------------------------------------------------------------

FIRST = date(2024, 3, 1)


@st.composite
def workloads(draw):
    rng = random.Random(draw(st.integers(0, 2**32)))
    records = []
    pilots = []
    for i in range(draw(st.integers(0, 6))):
        start = at(rng.uniform(0, 72), FIRST)
        pilot = rec("pilot", start, start + timedelta(hours=rng.uniform(0, 40)), rng.choice([1, 4, 8]),
                    key=f"pilot-{i}", site=rng.choice([1, 2]), vo=rng.choice([10, 11]))  # fmt: skip
        pilots.append(pilot)
        records.append(pilot)
    for _ in range(draw(st.integers(0, 6))):
        start = at(rng.uniform(0, 72), FIRST)
        records.append(rec("batch", start, start + timedelta(hours=rng.uniform(0, 30)), rng.choice([1, 2]),
                           site=rng.choice([1, 2]), vo=rng.choice([10, 11])))  # fmt: skip
    for _ in range(draw(st.integers(0, 20))):
        choice = rng.random()
        if pilots and choice < 0.6:
            pilot = rng.choice(pilots)
            start = pilot.start + (pilot.end - pilot.start) * rng.random()
            end = start + timedelta(hours=rng.uniform(0, 12))
            records.append(rec("payload", start, end, rng.choice([1, 2, 4]), ref=pilot.natural_key,
                               person=rng.choice([ALICE, BOB]), cpu=rng.uniform(0, 3600)))  # fmt: skip
        else:
            start = at(rng.uniform(0, 72), FIRST)
            ref = "nowhere" if choice > 0.9 else ""
            records.append(rec("payload", start, start + timedelta(hours=rng.uniform(0, 10)), 1, ref=ref,
                               site=rng.choice([1, 2]), vo=rng.choice([10, 11]), person=ALICE))  # fmt: skip
    return records


LAST = FIRST + timedelta(days=5)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(workloads())
def test_reported_hours_per_site_day_equal_pilot_plus_batch_hours(records):
    rows = summarize(records, FIRST, LAST, Mappings())
    reported = defaultdict(float)
    for key, values in rows.items():
        if key[8] in REPORTED_DESIGNATIONS:
            reported[key[1], key[0]] += values[1]
    expected = defaultdict(float)
    for r in records:
        if r.kind != "payload":
            for day, seconds in split_days(r.start, r.end, FIRST, LAST):
                expected[r.site_id, day] += seconds * r.cores / 3600
    for key in set(reported) | set(expected):
        assert reported[key] == pytest.approx(expected[key], abs=1e-6)


@PROPERTY
@given(workloads(), st.randoms())
def test_any_arrival_order_or_repetition_gives_identical_rows(records, rng):
    shuffled = list(records)
    rng.shuffle(shuffled)
    assert summarize(shuffled, FIRST, LAST, Mappings()) == summarize(records, FIRST, LAST, Mappings())


@PROPERTY
@given(workloads(), st.integers(0, 5))
def test_one_day_alone_equals_that_day_of_the_full_range(records, offset):
    day = FIRST + timedelta(days=offset)
    full = {k: v for k, v in summarize(records, FIRST, LAST, Mappings()).items() if k[0] == day}
    # What the database loader hands over for one day: records overlapping it plus the pilots they name.
    lo, hi = at(0, day), at(0, day + timedelta(days=1))
    overlapping = [r for r in records if r.start < hi and r.end >= lo]
    refs = {r.pilot_ref for r in overlapping if r.kind == "payload"}
    named = [r for r in records if r.kind == "pilot" and r.natural_key in refs and r not in overlapping]
    assert summarize(overlapping + named, day, day, Mappings()) == full
