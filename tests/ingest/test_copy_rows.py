"""The loader's binary COPY data, written by `_copy_rows` straight from the records: psycopg's bytes for the
`_values` rows of the same batch, or None (the batch then goes the psycopg way)."""
import io
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import pq
from psycopg._copy_base import BinaryFormatter
from psycopg.adapt import Transformer

from accounting.choices import RecordKind
from accounting.models import UsageRecord
from ingest.parsers.base import ParsedRecord
from ingest.services import loader as loading
from ingest.services.loader import RecordLoader

copy_rows = pytest.importorskip("ingest.services._copy_rows")  # not built: test_loader fails on purpose
NOW = datetime(2026, 11, 24, 12, 30, 15, 123456, tzinfo=timezone.utc)
NAMES = ["MWT2", "é-site", "", "unknown"]
IDS = {"site": {"MWT2": 1, "é-site": 2**40}, "resource": {"MWT2": 3}, "vo": {"MWT2": 4}, "person": {"é-site": 5}, "project": {}}


def psycopg_data(loader: RecordLoader, latest: list, now: datetime) -> bytes:
    """What psycopg's binary COPY writes for the `_values` rows of `latest` (raises where psycopg refuses)."""
    transformer = Transformer()
    transformer.set_dumper_types(list(copy_rows.COLUMN_TYPES), pq.Format.BINARY)
    formatter = BinaryFormatter(transformer)
    data = bytearray()
    for record, filename, digest in latest:
        data += formatter.write_row(loader._values(record, filename, digest, now))
    return bytes(data + formatter.end())


def loader_with(ids: dict, bundle_id: int | None = 7) -> RecordLoader:
    loader = RecordLoader(bundle_id, "htcondor-history")
    loader.dimensions.ids = ids
    return loader


UTC_TIME = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(timezone.utc))
ANY_TIME = UTC_TIME | st.datetimes(timezones=st.sampled_from([timezone(timedelta(hours=-5)), None]))
INT4 = st.integers(-(2**31), 2**31 - 1)
ANY_NUMBER = st.none() | st.integers(-(2**70), 2**70) | st.floats() | st.booleans() | st.just("1")
TEXT = st.text(max_size=8) | st.sampled_from(NAMES) | st.text(min_size=495, max_size=505) | st.just("a\ud800b")
LONG_TEXT = st.text(alphabet="aé€𝄞", min_size=190, max_size=510)


def records(time, number, integer, text):
    return st.builds(
        ParsedRecord, st.sampled_from([*RecordKind, "other"]), text, time, time, number, integer, integer, integer,
        integer, number, number, integer, integer, *[st.sampled_from(NAMES) | text] * 5, text, text, text,
    )  # fmt: skip


def batches(record):
    return st.lists(st.tuples(record, st.text(max_size=3) | LONG_TEXT, st.text(alphabet="0123456789abcdef", max_size=40)), max_size=6)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches(records(ANY_TIME, ANY_NUMBER, st.none() | ANY_NUMBER, TEXT | st.none() | st.integers())), st.sampled_from([None, 7, 2**62]))
def test_fuzz_what_it_writes_is_psycopgs_and_it_never_writes_what_psycopg_refuses(latest, bundle_id):
    loader = loader_with(IDS, bundle_id)
    data = copy_rows.CopyRows("htcondor-history", bundle_id).rows(latest, IDS, NOW)
    try:
        expected = psycopg_data(loader, latest, NOW)
    except Exception:  # noqa: BLE001 - any refusal of psycopg's: the batch must go its way
        expected = None
    if data is not None:
        assert data == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches(records(UTC_TIME, st.floats() | INT4, INT4 | st.none(), st.text(max_size=8) | st.sampled_from(NAMES) | LONG_TEXT)))
def test_fuzz_it_writes_every_batch_of_utc_times_texts_and_numbers_in_range(latest):
    data = copy_rows.CopyRows("htcondor-history", 7).rows(latest, IDS, NOW)
    assert data is not None and data == psycopg_data(loader_with(IDS), latest, NOW)


def test_it_writes_the_parsers_records_as_psycopg_does(tmp_path):
    from ingest.parsers import ParseContext
    from ingest.parsers.htcondor_history import HTCondorHistoryParser
    from ingest.synthetic import write_payload_ads

    write_payload_ads(tmp_path / "history", 300, seed=3, padding=True)
    parsed = list(HTCondorHistoryParser().parse(io.BytesIO((tmp_path / "history").read_bytes()), "history", ParseContext()))
    assert len(parsed) == 300 and all(type(record) is ParsedRecord for record in parsed)
    loader = RecordLoader(7, "htcondor-history")
    names = loading.names_of(parsed)
    loader.dimensions.ids = {attr: {name: n for n, name in enumerate(sorted(names[attr]), 1)} for attr in names}
    latest = [(record, "bundle.tgz:history", loading.record_hash(record)) for record in parsed]
    data = copy_rows.CopyRows("htcondor-history", 7).rows(latest, loader.dimensions.ids, NOW)
    assert data == psycopg_data(loader, latest, NOW)
    assert data.startswith(b"PGCOPY\n\xff\r\n\x00") and data.endswith(b"\xff\xff") and data.count(b"\x00\x1c") >= 300


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="binary COPY")
def test_the_records_table_has_the_column_types_it_writes_and_a_batch_it_cannot_write_still_loads():
    """The usual batch goes as its COPY data; one with a time in another zone goes row by row through psycopg,
    which converts it: the same instants stored either way."""
    start = datetime(2024, 3, 10, 8, tzinfo=timezone.utc)
    usual = ParsedRecord("payload", "ap#1.0#1", start, start + timedelta(hours=1), 3600.0, site="MWT2", fqan="é" * 600)
    zoned = ParsedRecord("payload", "ap#2.0#1", start.astimezone(timezone(timedelta(hours=-5))),
                         start + timedelta(hours=2), 7200.0, site="MWT2")  # fmt: skip
    loader = RecordLoader(None, "htcondor-history", batch_size=1)
    for record in (usual, zoned):
        loader.add(record, "f")
    loader.flush()
    assert loader.copy_rows is not None  # the table's column types are those it writes
    assert copy_rows.CopyRows("htcondor-history", None).rows([(zoned, "f", "d")], loader.dimensions.ids, NOW) is None
    stored = {row.natural_key: row for row in UsageRecord.objects.all()}
    assert (stored["ap#1.0#1"].start, stored["ap#1.0#1"].fqan, stored["ap#1.0#1"].site.name) == (start, "é" * 500, "MWT2")
    assert (stored["ap#2.0#1"].start, stored["ap#2.0#1"].wall_seconds) == (start, 7200.0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="binary COPY")
def test_new_jobs_go_in_one_copy_of_their_own_and_a_batch_with_a_stored_job_is_upserted(monkeypatch):
    """Outside any transaction a batch of new jobs is one COPY in autocommit (`_copy_alone`); when one of its
    jobs is stored already that COPY writes nothing and the batch is upserted; inside a caller's transaction
    the batch is written in it, the usual way."""
    from django.db import transaction

    alone = []
    copy_alone = RecordLoader._copy_alone
    monkeypatch.setattr(RecordLoader, "_copy_alone", lambda self, batch: (alone.append(len(batch.latest)), copy_alone(self, batch)))
    start = datetime(2024, 3, 10, 8, tzinfo=timezone.utc)

    def load(*numbers: int) -> RecordLoader:
        loader = RecordLoader(None, "htcondor-history", batch_size=2)
        for n in numbers:
            loader.add(ParsedRecord("payload", f"ap#{n}.0#1", start, start + timedelta(hours=n), n * 3600.0), "f")
        loader.flush()
        return loader

    first = load(1, 2, 3, 4)  # the first batch learns the table's column types, the usual way
    assert alone == [2] and (first.counts.inserted, first.counts.first_day) == (4, start.date())
    again = load(5, 6, 4, 7)  # 4 is stored: the second batch's COPY fails whole; the upsert stores 7, counts 4 once
    assert alone == [2, 2] and (again.counts.inserted, again.counts.duplicates) == (3, 1)
    assert sorted(UsageRecord.objects.values_list("wall_seconds", flat=True)) == [n * 3600.0 for n in range(1, 8)]
    with transaction.atomic():
        inside = load(8, 9, 10, 11)
    assert alone == [2, 2] and inside.counts.inserted == 4 and UsageRecord.objects.count() == 11
