"""The eight categories of pilot time (seed 002): worked examples by hand and invariants on random pilots."""
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.services.pilot_time import Pilot, Run, Snapshot, classify_pilot, classify_snapshots

D = date(2024, 3, 10)


def at(hour: float, day: date = D) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + timedelta(hours=hour)


def hours(totals, day=None, gpu=False):
    out = {}
    for (d, category), values in totals.items():
        if day is None or d == day:
            out[category] = round(out.get(category, 0) + values[1 if gpu else 0] / 3600, 6)
    return {k: v for k, v in out.items() if v}


def one_job_pilot(cores, pilot_mb, job_cores=1, job_mb=2048, **run):
    pilot = Pilot(start=at(10), end=at(11), cores=cores, memory_mb=pilot_mb)
    return classify_pilot(pilot, [Run(at(10), at(11), job_cores, job_mb, exit_code=0, **run)])


@pytest.mark.parametrize(
    ("cores", "pilot_mb", "expected"),
    [
        (4, 2048 + 3 * 1024, {"overhead": 1.0, "goodput": 3.0}),  # 3 idle cores + 3 GB -> 1 unit overhead, 2 to the job
        (4, 2048 + 1 * 1024, {"goodput": 4.0}),  # 3 cores + 1 GB -> no whole unit idle
        (3, 2048 + 6 * 1024, {"overhead": 2.0, "goodput": 1.0}),  # 2 cores + 6 GB -> 2 units
    ],
)
def test_the_seed_examples(cores, pilot_mb, expected):
    totals, estimated = one_job_pilot(cores, pilot_mb)
    assert hours(totals) == expected and not estimated


def test_overlapping_jobs_with_idle_gaps_and_a_job_killed_with_its_pilot():
    pilot = Pilot(start=at(10), end=at(14), cores=4, memory_mb=16384)
    runs = [
        Run(at(10), at(12), 2, 4096, exit_code=0),  # goodput
        Run(at(11), at(13), 1, 2048, exit_signal=9),  # killed by a signal after two hours -> preemption
        Run(at(13 + 50 / 60), at(14), 1, 2048),  # no exit status, ends with the pilot -> preemption
    ]
    totals, _ = classify_pilot(pilot, runs)
    # [10,11) A: 2 idle, 12 GB idle -> 2 overhead; [11,12) A+B: 1 idle -> 1 overhead; [12,13) B: 3 overhead;
    # [13,13:50) nothing: 4 x 5/6; [13:50,14) C: 3 overhead x 1/6
    assert hours(totals) == {"goodput": 4.0, "preemption_badput": round(2 + 1 / 6, 6), "overhead": round(2 + 1 + 3 + 10 / 3 + 0.5, 6)}


def test_memory_limited_idle_time_goes_to_the_job():
    totals, _ = one_job_pilot(8, 8192, job_cores=2, job_mb=6144)  # 6 idle cores but 2 GB: one unit
    assert hours(totals) == {"overhead": 1.0, "goodput": 7.0}


def test_unknown_pilot_memory_means_core_limited_idle_time():
    totals, _ = one_job_pilot(4, None)
    assert hours(totals) == {"overhead": 3.0, "goodput": 1.0}


def test_an_overcommitted_pilot_scales_its_jobs_down_to_its_cores():
    pilot = Pilot(start=at(10), end=at(11), cores=2, memory_mb=4096)
    totals, _ = classify_pilot(pilot, [Run(at(10), at(11), 2, exit_code=0), Run(at(10), at(11), 2, exit_code=1)])
    assert hours(totals) == {"goodput": 2.0}


def test_a_pilot_crossing_midnight_is_split_by_day():
    pilot = Pilot(start=at(23), end=at(1, D + timedelta(days=1)), cores=1)
    totals, _ = classify_pilot(pilot, [Run(at(23.5), at(0.5, D + timedelta(days=1)), 1, exit_code=0)])
    assert hours(totals, D) == {"overhead": 0.5, "goodput": 0.5}
    assert hours(totals, D + timedelta(days=1)) == {"overhead": 0.5, "goodput": 0.5}


def test_gpus_idle_go_to_overhead_whole():
    pilot = Pilot(start=at(10), end=at(11), cores=4, memory_mb=16384, gpus=2)
    totals, _ = classify_pilot(pilot, [Run(at(10), at(11), 1, 2048, gpus=1, exit_code=0)])
    assert hours(totals) == {"overhead": 3.0, "goodput": 1.0}
    assert hours(totals, gpu=True) == {"overhead": 1.0, "goodput": 1.0}


def test_an_early_abnormal_end_is_misconfiguration_badput():
    pilot = Pilot(start=at(10), end=at(11), cores=1)
    totals, _ = classify_pilot(pilot, [Run(at(10), at(10 + 5 / 60), 1, exit_signal=11)])
    assert hours(totals) == {"misconfiguration_badput": round(5 / 60, 6), "overhead": round(55 / 60, 6)}


def test_startd_badput_flags_mean_preemption_even_with_an_exit_code():
    totals, _ = one_job_pilot(1, None, badput_draining=True)
    assert hours(totals) == {"preemption_badput": 1.0}


def test_validation_failure_and_decision_problem_take_the_whole_pilot():
    failed = Pilot(start=at(10), end=at(11), cores=2, condor_started=False)
    idle = Pilot(start=at(10), end=at(11), cores=2, condor_started=True, claims=0)
    assert hours(classify_pilot(failed, [])[0]) == {"validation_fails": 2.0}
    assert hours(classify_pilot(idle, [])[0]) == {"decision_problem": 2.0}


def test_estimated_mode_from_factory_figures_is_flagged():
    pilot = Pilot(start=at(10), end=at(11), cores=2, condor_started=True, condor_seconds=3000,
                  metrics={"jobs_count": 3, "validation_seconds": 600, "idle_seconds": 900, "badput_seconds": 300})  # fmt: skip
    totals, estimated = classify_pilot(pilot, [])
    assert estimated
    assert hours(totals) == {"overhead": round(2 * 1500 / 3600, 6), "preemption_badput": round(2 * 300 / 3600, 6), "goodput": 1.0}


def test_snapshots_give_categories_seven_and_eight():
    series = [Snapshot(at(10), 10, 5), Snapshot(at(10.5), 4, 0), Snapshot(at(11), 2, 0)]
    assert hours(classify_snapshots(series)) == {"provisioning_bottleneck": 5.0, "insufficient_demand": 3.0}


@st.composite
def pilots_with_runs(draw):
    start = at(draw(st.floats(0, 48)))
    life = draw(st.floats(0, 40 * 3600))
    pilot = Pilot(start=start, end=start + timedelta(seconds=life), cores=draw(st.integers(1, 16)),
                  memory_mb=draw(st.none() | st.integers(0, 64000)), gpus=draw(st.integers(0, 4)),
                  condor_started=draw(st.none() | st.booleans()), claims=draw(st.none() | st.integers(0, 5)),
                  condor_seconds=draw(st.none() | st.floats(0, 40 * 3600)),
                  metrics=draw(st.fixed_dictionaries({}, optional={"jobs_count": st.integers(0, 9), "idle_seconds": st.floats(0, 1e5),
                                                                   "badput_seconds": st.floats(0, 1e5), "validation_seconds": st.floats(0, 1e5)})))  # fmt: skip
    runs = []
    for _ in range(draw(st.integers(0, 8))):
        run_start = start + timedelta(seconds=draw(st.floats(-3600, life + 3600)))
        runs.append(Run(run_start, run_start + timedelta(seconds=draw(st.floats(0, 20 * 3600))), draw(st.integers(0, 20)),
                        draw(st.none() | st.integers(0, 64000)), draw(st.integers(0, 4)), draw(st.none() | st.integers(0, 255)),
                        draw(st.none() | st.integers(1, 15)), draw(st.booleans()), draw(st.booleans())))  # fmt: skip
    return pilot, runs


@settings(max_examples=400, deadline=None)
@given(pilots_with_runs())
def test_categories_sum_to_cores_and_gpus_times_life(case):
    pilot, runs = case
    totals, _ = classify_pilot(pilot, runs)
    life = (pilot.end - pilot.start).total_seconds()
    assert sum(v[0] for v in totals.values()) == pytest.approx(pilot.cores * life, rel=1e-9, abs=1e-6)
    assert sum(v[1] for v in totals.values()) == pytest.approx(pilot.gpus * life, rel=1e-9, abs=1e-6)
    assert all(v[0] >= -1e-9 and v[1] >= -1e-9 for v in totals.values())


def test_epoch_seconds_become_aware_utc():
    from accounting.services.categories import from_epoch

    assert from_epoch(at(10).timestamp()) == at(10)
    assert from_epoch(at(10).timestamp()).tzinfo is not None
