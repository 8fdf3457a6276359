"""The loader: source precedence for pilots and the job runs inside them."""
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.choices import RecordKind
from accounting.models import PilotJobRun, UsageRecord
from ingest.parsers.base import ParsedRecord, PilotInfo
from ingest.services.loader import RecordLoader

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["copy", "orm"], autouse=True)
def write_path(request, monkeypatch):
    """Every loader test runs through both write paths: COPY + upsert (PostgreSQL) and the ORM (SQLite demo)."""
    if request.param == "orm":
        monkeypatch.setattr(RecordLoader, "_upsert_copy", RecordLoader._upsert_orm)
    return request.param
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


def test_counts_and_rows_agree_between_paths_for_inserts_updates_duplicates_and_reruns():
    from ingest.models import Bundle

    for pk in (7, 8):
        Bundle.objects.create(pk=pk, original_name="x", stored_path="x", sha256="0" * 64)
    first = pilot(5)
    loader = RecordLoader(7, "htcondor-history")
    for record in (first, pilot(5), pilot(6)):  # insert, duplicate in batch, changed re-send in batch
        loader.add(record, "f")
    loader.flush()
    assert (loader.counts.inserted, loader.counts.updated, loader.counts.duplicates) == (1, 1, 1)
    assert UsageRecord.objects.get().wall_seconds == 6 * 3600
    UsageRecord.objects.update(bundle_id=7)
    rerun = RecordLoader(7, "htcondor-history")  # the same bundle again, e.g. after a killed worker
    rerun.add(pilot(6), "f")
    rerun.flush()
    assert (rerun.counts.inserted, rerun.counts.duplicates) == (1, 0)
    assert (rerun.counts.first_day, rerun.counts.last_day) == (T0.date(), T0.date())  # its days get rebuilt
    other = RecordLoader(8, "htcondor-history")
    other.add(pilot(6), "f")
    other.flush()
    assert (other.counts.inserted, other.counts.duplicates) == (0, 1)
    assert (other.counts.first_day, other.counts.last_day) == (None, None)


def job(key: str, hours: float = 1) -> ParsedRecord:
    return ParsedRecord(kind="payload", natural_key=key, start=T0, end=T0 + timedelta(hours=hours), wall_seconds=hours * 3600)


def test_a_batch_with_one_stored_job_at_its_end_is_upserted_whole_without_doubles():
    first = RecordLoader(None, "htcondor-history")
    first.add(job("ap#3.0#1"), "f")
    first.flush()
    loader = RecordLoader(None, "htcondor-history")
    for record in (job("ap#1.0#1"), job("ap#2.0#1"), job("ap#3.0#1"), job("ap#4.0#1", hours=2)):
        loader.add(record, "f")
    loader.flush()
    assert (loader.counts.inserted, loader.counts.updated, loader.counts.duplicates) == (3, 0, 1)
    assert sorted(UsageRecord.objects.values_list("natural_key", flat=True)) == [f"ap#{n}.0#1" for n in (1, 2, 3, 4)]
    assert UsageRecord.objects.get(natural_key="ap#4.0#1").wall_seconds == 7200


def test_record_hash_text_never_changes():
    """Stored in every row: a new hash for the same record would make every re-send count as a change."""
    from ingest.services.loader import python_record_hash, record_hash

    payload = ParsedRecord(kind="payload", natural_key="ap#1.0#1", start=T0, end=T0.replace(hour=9), wall_seconds=3600.0,
                           cores=2, memory_mb=4000, cpu_user_seconds=12.5, exit_code=0, site="MWT2", resource="MWT2_UC",
                           vo="osg", person="/CN=A", project="P", fqan="/osg", local_user="a", pilot_ref="s#1.0")  # fmt: skip
    glidein = ParsedRecord(kind="pilot", natural_key="s#1.0", start=T0, end=T0.replace(hour=9), wall_seconds=3600.0, cores=8,
                           pilot=PilotInfo(cores=8, entry="E", validation_seconds=3.0), extra={"stats": {}, "glidein_exit_code": 0})  # fmt: skip
    for digest in (record_hash, python_record_hash):  # compiled and Python
        assert digest(payload) == "3bf78dccde635e5b07b6618467fdeac2036eec56"
        assert digest(glidein) == "82282e401d78f75e42aa6faae29dd901e92cd247"


def test_the_compiled_record_hash_is_built():
    from ingest.services import loader

    assert loader._record_hash is not None, "ingest/services/_record_hash.pyx is not built: run `make venv`"
    assert loader.record_hash is not loader.python_record_hash


def test_the_compiled_copy_rows_is_built():
    from ingest.services import loader

    assert loader._copy_rows is not None, "ingest/services/_copy_rows.pyx is not built: run `make venv`"
    assert len(loader._copy_rows.COLUMN_TYPES) == len(loader.STAGE_COLUMNS)


ANY_TIME = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=-5)), None]),
).flatmap(lambda moment: st.sampled_from([moment, moment.replace(fold=1), moment.replace(microsecond=0),
                                          moment.replace(second=0, microsecond=0)]))  # fmt: skip
NUMBER = st.none() | st.integers(-(2**70), 2**70) | st.floats() | st.booleans()
TEXT = st.text(max_size=12) | st.sampled_from(["", "'", '"', "\\", "é", "\x1f", "a\nb"])


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([*RecordKind, "payload", "pilot", "other"]), st.text(max_size=30), ANY_TIME, ANY_TIME, NUMBER,
    st.lists(NUMBER, min_size=8, max_size=8), st.lists(TEXT, min_size=8, max_size=8),
    st.none() | st.builds(PilotInfo, glidein_name=TEXT, frontend_client=TEXT, entry=TEXT, cores=NUMBER,
                          memory_mb=NUMBER, gpus=NUMBER, validation_seconds=NUMBER, condor_started=NUMBER,
                          condor_seconds=NUMBER, claims=NUMBER),
    st.dictionaries(st.text(max_size=4), NUMBER | TEXT | st.lists(NUMBER, max_size=2), max_size=3),
)  # fmt: skip
def test_fuzz_the_compiled_record_hash_is_the_python_one(kind, key, start, end, wall, numbers, texts, pilot_info, extra):
    from ingest.services.loader import python_record_hash, record_hash

    record = ParsedRecord(kind, key, start, end, wall, *numbers, *texts, pilot=pilot_info, extra=extra)
    assert record_hash(record) == python_record_hash(record)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 96), st.integers(0, 96)), min_size=1, max_size=8))
def test_touch_all_gives_the_days_of_touching_each_record(spans):
    """Hours from a midnight: ends at midnight (the previous day is the last) and zero-length jobs included."""
    from ingest.services.loader import LoadCounts

    midnight = datetime(2024, 3, 10, tzinfo=timezone.utc)
    records = [job(f"k{n}") for n in range(len(spans))]
    for record, (start, length) in zip(records, spans, strict=True):
        record.start = midnight + timedelta(hours=start)
        record.end = record.start + timedelta(hours=length % 25 if length % 3 else 0)
    one_by_one, bulk = LoadCounts(), LoadCounts()
    for record in records:
        one_by_one.touch(record.start, record.end)
    bulk.touch_all(records)
    assert (bulk.first_day, bulk.last_day) == (one_by_one.first_day, one_by_one.last_day)


def test_the_record_digest_never_changes():
    """Stored in every row: a different digest for the same record would make every re-send an update."""
    from accounting.choices import RecordKind
    from ingest.services.loader import record_hash

    payload = ParsedRecord(kind=RecordKind.PAYLOAD, natural_key="ap40.uchicago.edu#1234567.0#1700000000",
                           start=datetime(2026, 1, 1, tzinfo=timezone.utc), end=datetime(2026, 1, 1, 3, tzinfo=timezone.utc),
                           wall_seconds=10800.0, cores=8, memory_mb=16000, cpu_user_seconds=76543.5, exit_code=0,
                           site="MWT2", vo="atlas", person="/DC=org/CN=P", pilot_ref="gf#1.3")  # fmt: skip
    pilot = ParsedRecord(kind="pilot", natural_key="gf#1.3", start=datetime(2026, 1, 1, tzinfo=timezone.utc),
                         end=datetime(2026, 1, 2, tzinfo=timezone.utc), wall_seconds=86400.0, cores=8,
                         pilot=PilotInfo(cores=8, entry="E"))  # fmt: skip
    pilot.extra["validation"] = 3
    assert record_hash(payload) == "e5b127b91e9d3f887fce662e9278efa1d70d2205"
    assert record_hash(pilot) == "d889126d5266f9bc16e0454a11762b162539a7e6"


def test_the_first_batch_is_small_so_that_the_database_starts_sooner():
    from ingest.services.loader import BATCH_SIZE, FIRST_BATCH_SIZE

    sizes = []
    loader = RecordLoader(None, "test", run=lambda work, batch: (sizes.append(len(batch.latest)), work(batch)))
    for n in range(FIRST_BATCH_SIZE + BATCH_SIZE + 7):
        loader.add(job(f"ap#{n}.0#1"), "f")
    loader.flush()
    assert sizes == [FIRST_BATCH_SIZE, BATCH_SIZE, 7] and UsageRecord.objects.count() == sum(sizes)


def test_rows_are_built_before_the_writer_once_every_name_of_the_batch_has_an_id():
    sent = []

    def run(work, batch):
        sent.append(batch)
        work(batch)

    loader = RecordLoader(None, "test", run=run)
    for key, site in (("a", "S1"), ("b", "S1"), ("c", "S2")):
        loader.add(ParsedRecord(kind="batch", natural_key=key, start=T0, end=T0 + timedelta(hours=1), wall_seconds=3600.0,
                                site=site, vo="osg"), "f")  # fmt: skip
        loader.flush()
    built = [batch.data is not None or batch.rows is not None for batch in sent]  # COPY data (compiled), else rows
    assert built == [False, True, False]  # S2 was new: the writer built it
    sites = dict(UsageRecord.objects.values_list("natural_key", "site__name"))
    assert sites == {"a": "S1", "b": "S1", "c": "S2"} and loader.counts.inserted == 3
