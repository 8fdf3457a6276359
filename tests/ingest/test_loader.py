"""The loader: source precedence for pilots and the job runs inside them."""
from datetime import datetime, timedelta, timezone

import pytest

from accounting.models import PilotJobRun, UsageRecord
from ingest.parsers.base import ParsedRecord, PilotInfo
from ingest.services.loader import RecordLoader

pytestmark = pytest.mark.django_db
T0 = datetime(2024, 3, 10, 8, tzinfo=timezone.utc)


def pilot(hours: float, runs=None) -> ParsedRecord:
    record = ParsedRecord(kind="pilot", natural_key="f#1.0", start=T0, end=T0 + timedelta(hours=hours),
                          wall_seconds=hours * 3600, cores=8, pilot=PilotInfo(cores=8))  # fmt: skip
    if runs is not None:
        record.extra["runs"] = runs
    return record


def load(fmt: str, record: ParsedRecord) -> RecordLoader:
    loader = RecordLoader(None, fmt)
    loader.add(record, "f")
    loader.flush()
    return loader


def test_a_coarser_source_never_overwrites_a_detailed_one_in_either_order():
    load("gwms-glidein", pilot(5))
    assert load("gwms-completed", pilot(4)).counts.duplicates == 1
    assert UsageRecord.objects.get().wall_seconds == 5 * 3600
    UsageRecord.objects.all().delete()
    load("gwms-completed", pilot(4))
    assert load("gwms-glidein", pilot(5)).counts.updated == 1
    assert UsageRecord.objects.get().wall_seconds == 5 * 3600


def test_job_runs_are_stored_and_replaced_on_resend():
    run = {"global_job_id": "ap#1.0#1", "start": T0, "end": T0 + timedelta(hours=1), "cores": 2, "exit_code": 0,
           "badput_preemption": False, "badput_draining": False}  # fmt: skip
    load("gwms-glidein", pilot(5, [run, run | {"global_job_id": "ap#2.0#1"}]))
    assert PilotJobRun.objects.count() == 2
    load("gwms-glidein", pilot(5, [run]))
    assert list(PilotJobRun.objects.values_list("global_job_id", "cores")) == [("ap#1.0#1", 2)]
