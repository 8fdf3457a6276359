"""The NCSA Account Usage Data Format parser: header, data, trailer; a bundle whose trailer disagrees is
rejected whole (seed 004)."""
import io
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.parsers import ncsa
from ingest.parsers.base import ParseContext, ParsedRecord, Rejection
from ingest.parsers.htcondor_history import HTCondorHistoryParser
from ingest.parsers.ncsa import NCSAParser

NOW = datetime(2024, 4, 1, tzinfo=UTC)
PARSER = NCSAParser()

HEADER = b"H|Charges|D2|20240301:000000|20240331:235959||SESS_ACCT"
# The seed's D2K service account: 2.5 h of wall clock charged as 2.5 h cpu and 2.5 SU; mem, conn, concurrency NULL.
SERVICE_JOB = (
    b"D|d2kehws|d2kehws|PSN0042|batch|2.500000E+00|NULL|NULL|2.500000E+00|NULL|d2k|10001|20240302:100000|"
    b"20240302:123000|d2k3.ncsa.edu|portal.ncsa.edu"
)
# A 4-processor job of 4 h: 12 cpu hours, 2048 MB average memory, 16 SU; no submit host.
PARALLEL_JOB = (
    b"D|phylo|alice|PSN0043|batch_long|1.200000E+01|2.048000E+03|0|1.600000E+01|4.000000E+00|d2k|10002|"
    b"20240303:080000|20240303:120000|d2k4.ncsa.edu|"
)
TRAILER = b"T|2|1.450000E+01|2.048000E+03|0|1.850000E+01"
SAMPLE = b"\n".join([HEADER, SERVICE_JOB, PARALLEL_JOB, TRAILER]) + b"\n"


def parse(data: bytes, site: str = "NCSA") -> list:
    return list(PARSER.parse(io.BytesIO(data), "d2k-2024-03.acct", ParseContext(site=site, now=NOW)))


def records(items: list) -> list[ParsedRecord]:
    return [item for item in items if isinstance(item, ParsedRecord)]


def rejections(items: list) -> list[Rejection]:
    return [item for item in items if isinstance(item, Rejection)]


def bundle(*data: bytes, trailer: bytes | None = None) -> bytes:
    """A header, the data lines and a trailer (by default one that agrees with well-formed data lines)."""
    if trailer is None:
        rows = [line.split(b"|") for line in data]
        sums = [sum(float(row[i]) if row[i] not in (b"", b"NULL") else 0.0 for row in rows) for i in (5, 6, 7, 8)]
        trailer = b"T|%d|" % len(data) + b"|".join(b"%.6E" % value for value in sums)
    return b"\n".join([HEADER, *data, trailer]) + b"\n"


def test_service_job_field_by_field():
    first, second = parse(SAMPLE)
    assert first.kind == "batch"
    assert first.natural_key == "ncsa|D2|10001"
    assert first.start == datetime(2024, 3, 2, 10, 0, tzinfo=UTC)
    assert first.end == datetime(2024, 3, 2, 12, 30, tzinfo=UTC)
    assert first.wall_seconds == 9000.0  # stop - start (seed Table 2)
    assert first.cpu_user_seconds == 9000.0  # 2.5 cpu hours
    assert first.cpu_sys_seconds == 0.0
    assert first.cores == 1  # concurrency NULL
    assert first.memory_mb is None  # mem NULL
    assert first.local_user == "d2kehws"
    assert first.person == "d2kehws"
    assert first.project == "PSN0042"
    assert first.resource == "d2k3.ncsa.edu"
    assert first.site == "NCSA"
    assert first.extra == {
        "service_units": 2.5,
        "queue": "batch",
        "service_type": "d2k",
        "submit_host": "portal.ncsa.edu",
    }
    assert first.line == 2
    assert second.line == 3


def test_parallel_job_field_by_field():
    record = parse(SAMPLE)[1]
    assert record.natural_key == "ncsa|D2|10002"
    assert record.wall_seconds == 4 * 3600.0
    assert record.cpu_user_seconds == 12 * 3600.0
    assert record.cores == 4
    assert record.memory_mb == 2048
    assert record.person == "alice"
    assert record.local_user == "phylo"
    assert record.extra == {"service_units": 16.0, "queue": "batch_long", "service_type": "d2k"}


def test_exec_host_defaults_to_the_machine_id():
    line = SERVICE_JOB.replace(b"|d2k3.ncsa.edu|", b"||")
    (record,) = parse(bundle(line))
    assert record.resource == "D2"


def test_concatenated_bundles_are_verified_alone():
    second = bundle(PARALLEL_JOB).replace(b"|D2|", b"|D3|")
    items = parse(SAMPLE + second)
    assert [item.natural_key for item in items] == ["ncsa|D2|10001", "ncsa|D2|10002", "ncsa|D3|10002"]
    assert items[2].line == 6


def test_trailer_that_disagrees_rejects_the_whole_bundle():
    wrong_cpu = SAMPLE.replace(b"T|2|1.450000E+01", b"T|2|1.400000E+01")
    (rejection,) = parse(wrong_cpu)
    assert rejection.line == 4
    assert "totalcpu 14 but the records sum to 14.5" in rejection.reason
    assert "rejected" in rejection.reason
    wrong_count = SAMPLE.replace(b"T|2|", b"T|3|")
    (rejection,) = parse(wrong_count)
    assert "record count 3 but 2 data records" in rejection.reason
    wrong_su = SAMPLE.replace(b"|1.850000E+01", b"|NULL")
    (rejection,) = parse(wrong_su)
    assert "totalsu 0 but the records sum to 18.5" in rejection.reason


def test_totals_agree_to_six_significant_digits():
    thirds = [SERVICE_JOB.replace(b"2.500000E+00|NULL|NULL|2.500000E+00", b"3.333333E-01|NULL|NULL|0")] * 3
    data = [line.replace(b"|10001|", b"|1000%d|" % i) for i, line in enumerate(thirds)]
    assert len(records(parse(bundle(*data, trailer=b"T|3|1.000000E+00|NULL|NULL|0")))) == 3
    assert rejections(parse(bundle(*data, trailer=b"T|3|1.000100E+00|NULL|NULL|0")))


def test_missing_trailer_rejects_the_whole_bundle():
    truncated = b"\n".join([HEADER, SERVICE_JOB, PARALLEL_JOB]) + b"\n"
    (rejection,) = parse(truncated)
    assert rejection.line == 3 and "without a trailer record" in rejection.reason
    cut_mid_line = SAMPLE[: SAMPLE.index(b"T|") - 20]
    items = parse(cut_mid_line)
    assert not records(items)
    assert "without a trailer" in items[-1].reason


def test_next_header_before_a_trailer_rejects_the_first_bundle():
    items = parse(b"\n".join([HEADER, SERVICE_JOB]) + b"\n" + SAMPLE)
    assert items[0].line == 1 and "no trailer record before the next header on line 3" in items[0].reason
    assert [item.line for item in records(items)] == [4, 5]


def test_unreadable_header_skips_to_its_trailer():
    cases = {
        b"H|Refund|D2|20240301:000000|20240331:235959||SESS_ACCT": "only Charges",
        b"H|Charges||20240301:000000|20240331:235959||SESS_ACCT": "no machine id",
        b"H|Charges|D2|2024-03-01|20240331:235959||SESS_ACCT": "period_begin is not a yyyymmdd:hhmmss time",
        b"H|Charges|D2|20240331:000000|20240301:235959||SESS_ACCT": "ends before it begins",
        b"H|Charges|D2|20240301:000000|20240331:235959||OTHER": "not SESS_ACCT or PROC_ACCT",
        b"H|Charges|D2|20240301:000000": "7",
    }
    for header, reason in cases.items():
        items = parse(SAMPLE.replace(HEADER, header) + SAMPLE)
        assert items[0].line == 1 and reason in items[0].reason, header
        assert [item.line for item in items[1:]] == [6, 7]


def test_data_before_any_header_is_rejected_up_to_the_next_header():
    items = parse(SERVICE_JOB + b"\n" + PARALLEL_JOB + b"\n" + SAMPLE)
    assert items[0].line == 1 and "expected a header record" in items[0].reason
    assert [item.line for item in records(items)] == [4, 5]


def test_empty_file():
    assert parse(b"") == [Rejection(None, "empty file: no NCSA header record")]
    assert parse(b"\n \n") == [Rejection(None, "empty file: no NCSA header record")]


def test_invalid_record_in_a_verified_bundle_is_rejected_alone():
    future = PARALLEL_JOB.replace(b"|20240303:080000|20240303:120000|", b"|20240303:080000|20300303:120000|")
    backwards = PARALLEL_JOB.replace(b"|20240303:080000|20240303:120000|", b"|20240303:080000|20240303:070000|")
    outside = PARALLEL_JOB.replace(b"|20240303:080000|20240303:120000|", b"|20240401:080000|20240401:120000|")
    negative = SERVICE_JOB.replace(b"|2.500000E+00|NULL|NULL|", b"|-2.500000E+00|NULL|NULL|")
    fractional = PARALLEL_JOB.replace(b"|4.000000E+00|", b"|4.500000E+00|")
    absurd_cores = PARALLEL_JOB.replace(b"|4.000000E+00|", b"|1.000000E+09|")
    items = parse(bundle(future, backwards, outside, negative, fractional, absurd_cores, SERVICE_JOB))
    assert [item.line for item in rejections(items)] == [2, 3, 4, 5, 6, 7]
    reasons = [item.reason for item in rejections(items)]
    assert "outside the header's accounting period" in reasons[0]
    assert "negative wall time" in reasons[1]  # end before start
    assert "outside the header's accounting period" in reasons[2]
    assert "negative cpu" in reasons[3]
    assert "concurrency is not a whole number" in reasons[4]
    assert "absurd core count" in reasons[5]
    assert [item.line for item in records(items)] == [8]


def test_future_period_record_is_rejected_as_future():
    header = b"H|Charges|D2|20240301:000000|20301231:235959||SESS_ACCT"
    future = PARALLEL_JOB.replace(b"|20240303:080000|20240303:120000|", b"|20300303:080000|20300303:120000|")
    items = parse(bundle(future).replace(HEADER, header))
    assert "in the future" in items[0].reason


def test_unreadable_numbers_make_the_totals_disagree():
    cases = [b"|nan|", b"|inf|", b"|1e999|", b"|1_000|", b"|twelve|"]
    for value in cases:
        broken = PARALLEL_JOB.replace(b"|1.200000E+01|", value)
        items = parse(b"\n".join([HEADER, SERVICE_JOB, broken, TRAILER]))
        assert not records(items), value
        assert items[0].line == 3 and "cpu" in items[0].reason
        assert items[-1].line == 4 and "totalcpu 14.5 but the records sum to 2.5" in items[-1].reason


def test_garbled_text_field_with_agreeing_totals_loses_only_its_line():
    garbled = PARALLEL_JOB.replace(b"|20240303:080000|", b"|yesterday|")
    items = parse(b"\n".join([HEADER, SERVICE_JOB, garbled, TRAILER]))
    assert [type(item) for item in items] == [ParsedRecord, Rejection]
    assert items[1].line == 3 and "start is not a yyyymmdd:hhmmss time" in items[1].reason


def test_binary_garbage_and_non_utf8():
    assert rejections(parse(bytes(range(14, 256)))) == [
        Rejection(1, "expected a header record (H|Charges|...); lines up to the next header are skipped")
    ]
    non_utf8 = SERVICE_JOB.replace(b"d2kehws|d2kehws", b"d2kehws|caf\xe9")
    items = parse(b"\n".join([HEADER, non_utf8, PARALLEL_JOB, TRAILER]))
    assert "not UTF-8" in items[0].reason
    assert items[-1].line == 4 and "the whole bundle" in items[-1].reason


def test_ten_megabyte_line_is_bounded():
    huge = b"D|" + b"x" * (10 * 1024 * 1024)
    items = parse(huge + b"\n" + SAMPLE)
    assert items[0] == Rejection(1, "line longer than 1 MiB; lines up to the next header are skipped")
    assert [item.line for item in records(items)] == [3, 4]
    # Inside a bundle it is a data record whose numbers count as unreadable: the totals decide.
    counted = parse(b"\n".join([HEADER, huge, SERVICE_JOB, PARALLEL_JOB, TRAILER.replace(b"T|2|", b"T|3|")]))
    assert counted[0] == Rejection(2, "line longer than 1 MiB")
    assert [item.line for item in records(counted)] == [3, 4]
    lost = parse(b"\n".join([HEADER, huge, SERVICE_JOB, TRAILER]))
    assert lost[0] == Rejection(2, "line longer than 1 MiB")
    assert not records(lost) and "totalcpu 14.5 but the records sum to 2.5" in lost[-1].reason


def test_too_many_records_reject_the_bundle(monkeypatch):
    monkeypatch.setattr(ncsa, "MAX_SECTION_RECORDS", 2)
    second = PARALLEL_JOB.replace(b"|10002|", b"|10003|")
    items = parse(bundle(SERVICE_JOB, PARALLEL_JOB, second) + SAMPLE)
    assert items[0].line == 4 and "more than 2 data records" in items[0].reason
    assert [item.line for item in records(items)] == [7, 8]


def test_duplicate_records_are_both_yielded_and_counted():
    items = parse(bundle(SERVICE_JOB, SERVICE_JOB))
    assert [item.natural_key for item in items] == ["ncsa|D2|10001"] * 2


def test_large_bundle_spills_to_disk_and_keeps_file_order(monkeypatch):
    monkeypatch.setattr(ncsa, "SPOOL_MEMORY_BYTES", 1024)
    data = [SERVICE_JOB.replace(b"|10001|", b"|%d|" % i) for i in range(500)]
    items = parse(bundle(*data))
    assert [item.line for item in items] == list(range(2, 502))


@pytest.mark.parametrize("name", ["HEADER_FIELDS", "DATA_FIELDS", "TRAILER_FIELDS"])
def test_documented_layout_matches_the_sample(name):
    sample_line = {"HEADER_FIELDS": HEADER, "DATA_FIELDS": SERVICE_JOB, "TRAILER_FIELDS": TRAILER}[name]
    assert len(sample_line.split(b"|")) == len(getattr(ncsa, name))


def test_detect_accepts_ncsa_bundles():
    assert PARSER.detect(SAMPLE, "d2k.acct")
    assert PARSER.detect(b"\n" + SAMPLE, "d2k.acct")


def test_detect_refuses_other_formats(samples_dir):
    from tests.ingest.test_pbs import SAMPLE as PBS
    from tests.ingest.test_slurm import SAMPLE as SLURM
    from tests.ingest.test_snapshot import SAMPLE as SNAPSHOT

    others = [PBS, SLURM, SNAPSHOT, b"", SERVICE_JOB, bytes(range(256))]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gratia-probe/condor-ap-history").iterdir()]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gracc-collector/test_data").glob("*.xml")]
    assert len(others) > 10
    for head in others:
        assert not PARSER.detect(head, "history"), head[:80]


def test_htcondor_detect_does_not_claim_ncsa_bundles():
    assert not HTCondorHistoryParser().detect(SAMPLE, "d2k.acct")


LINES = [HEADER, SERVICE_JOB, PARALLEL_JOB, TRAILER]
spliced_line = st.tuples(st.sampled_from(LINES), st.integers(0, 140), st.binary(max_size=16)).map(
    lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + len(t[2]) :]
)
ncsa_like = st.lists(st.one_of(st.sampled_from(LINES), spliced_line, st.binary(max_size=60)), max_size=8).map(
    lambda lines: b"\n".join([HEADER, *lines])
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=4096), ncsa_like))
def test_fuzz_any_bytes_give_records_or_rejections(data):
    items = parse(data)
    line_count = data.count(b"\n") + 1
    for item in items:
        assert isinstance(item, ParsedRecord | Rejection)
        if isinstance(item, Rejection):
            assert item.line is None or 1 <= item.line <= line_count
            assert item.reason
