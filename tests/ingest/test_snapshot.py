"""The site capacity and demand snapshot CSV (categories 7 and 8): columns, values, hostile input."""
import io
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.parsers.base import ParseContext, Rejection
from ingest.parsers.htcondor_history import HTCondorHistoryParser
from ingest.parsers.snapshot import ParsedSnapshot, SnapshotParser

NOW = datetime(2024, 4, 1, tzinfo=UTC)
PARSER = SnapshotParser()

HEADER = b"timestamp,site,idle_cores,pilots_queued,idle_jobs,resource,vo,idle_slots,pledged_cores"
# 120 idle cores while 350 CMS jobs wait: a provisioning bottleneck.
BOTTLENECK = b"2024-03-01T12:00:00Z,SITE_A,120,4,350,ce01.site-a.org,cms,,2000"
# 13:10 at +01:00 is 12:10 UTC; 64 idle cores and no job waiting: insufficient demand.
NO_DEMAND = b"2024-03-01T13:10:00+01:00,SITE_A,64,0,0,ce01.site-a.org,cms,8,2000"
SAMPLE = b"\n".join([HEADER, BOTTLENECK, NO_DEMAND]) + b"\n"


def parse(data: bytes) -> list:
    return list(PARSER.parse(io.BytesIO(data), "snapshots.csv", ParseContext(site="IGNORED", now=NOW)))


def one_row(row: bytes, header: bytes = HEADER) -> ParsedSnapshot | Rejection:
    (item,) = parse(header + b"\n" + row + b"\n")
    return item


def test_sample_field_by_field():
    first, second = parse(SAMPLE)
    assert first == ParsedSnapshot(
        line=2,
        timestamp=datetime(2024, 3, 1, 12, 0, tzinfo=UTC),
        site="SITE_A",
        resource="ce01.site-a.org",
        vo="cms",
        idle_cores=120,
        pilots_queued=4,
        idle_jobs=350,
        pledged_cores=2000,
        idle_slots=None,
    )
    assert first.natural_key == "2024-03-01T12:00:00+00:00|SITE_A|ce01.site-a.org|cms"
    assert second.timestamp == datetime(2024, 3, 1, 12, 10, tzinfo=UTC)
    assert (second.idle_cores, second.pilots_queued, second.idle_jobs, second.idle_slots) == (64, 0, 0, 8)
    assert second.line == 3


def test_required_columns_only_in_any_order_with_bom_and_quotes():
    data = (
        b"\xef\xbb\xbf Site ,idle_jobs,TIMESTAMP,pilots_queued,idle_cores\r\n"
        b'"SITE, B",5,2024-03-02T00:00:00Z,1,10\r\n'
    )
    (snapshot,) = parse(data)
    assert (snapshot.site, snapshot.idle_jobs, snapshot.pilots_queued, snapshot.idle_cores) == ("SITE, B", 5, 1, 10)
    assert (snapshot.resource, snapshot.vo, snapshot.pledged_cores, snapshot.idle_slots) == ("", "", None, None)
    assert snapshot.natural_key == "2024-03-02T00:00:00+00:00|SITE, B||"


def test_column_problems_reject_the_whole_file_naming_the_column():
    cases = {
        HEADER + b",weather": "unknown column 'weather'",
        HEADER.replace(b",pilots_queued", b""): "missing required column 'pilots_queued'",
        HEADER + b",vo": "column 'vo' appears twice",
        b'timestamp,"site': "unreadable snapshot header",
        b"\xff\xfe,timestamp": "not UTF-8",
    }
    for header, reason in cases.items():
        (rejection,) = parse(header + b"\n" + BOTTLENECK + b"\n")
        assert rejection.line == 1 and reason in rejection.reason, header


def test_empty_file():
    assert parse(b"") == [Rejection(None, "empty file: no snapshot header")]
    assert parse(HEADER + b"\n") == []


def test_bad_values_are_rejected_and_the_rest_kept():
    cases = {
        b"2024-03-01T12:00:00Z,SITE_A,-1,4,350,,,,": "idle_cores is not a whole number",
        b"2024-03-01T12:00:00Z,SITE_A,1.5,4,350,,,,": "idle_cores is not a whole number",
        b"2024-03-01T12:00:00Z,SITE_A,NaN,4,350,,,,": "idle_cores is not a whole number",
        b"2024-03-01T12:00:00Z,SITE_A,1,4,,,,,": "idle_jobs is not a whole number",
        b"2024-03-01T12:00:00Z,SITE_A,1,4,99999999,,,,": "idle_jobs is not a whole number",
        b"2024-03-01T12:00:00Z,SITE_A,1,4,\xd9\xa3,,,,": "idle_jobs is not a whole number",  # Arabic-Indic 3
        b"2024-03-01T12:00:00Z,SITE_A,1,4,3,,,,x": "pledged_cores is not a whole number",
        b"2024-03-01T12:00:00,SITE_A,1,4,3,,,,": "no UTC offset",
        b"yesterday,SITE_A,1,4,3,,,,": "not an ISO 8601 time",
        b"9999-12-31T23:59:59-01:00,SITE_A,1,4,3,,,,": "not an ISO 8601 time in range",
        b"0001-01-01T00:00:00+01:00,SITE_A,1,4,3,,,,": "not an ISO 8601 time in range",
        b"2031-03-01T12:00:00Z,SITE_A,1,4,3,,,,": "in the future",
        b"1970-01-01T00:00:00Z,SITE_A,1,4,3,,,,": "before 1995",
        b"2024-03-01T12:00:00Z,,1,4,3,,,,": "empty site",
        b"2024-03-01T12:00:00Z,SITE_A,1,4,3,,,": "8 fields where the header has 9",
        b'2024-03-01T12:00:00Z,"SITE_A,1,4,3,,,,': "not a CSV row",
        b"2024-03-01T12:00:00Z,SITE_\xe9,1,4,3,,,,": "not UTF-8",
        b"2024-03-01T12:00:00Z," + b"S" * 201 + b",1,4,3,,,,": "site longer than 200",
    }
    for row, reason in cases.items():
        items = parse(b"\n".join([HEADER, row, BOTTLENECK]))
        assert [type(item) for item in items] == [Rejection, ParsedSnapshot], row
        assert items[0].line == 2 and reason in items[0].reason, row


def test_timestamp_within_a_day_ahead_is_accepted():
    snapshot = one_row(b"2024-04-01T23:00:00Z,SITE_A,1,4,3,,,,")
    assert snapshot.timestamp == datetime(2024, 4, 1, 23, tzinfo=UTC)


def test_truncated_file_and_garbage():
    truncated = SAMPLE[: SAMPLE.index(b"2000") + 2]  # cut inside the last field of line 2
    (snapshot,) = parse(truncated)
    assert snapshot.pledged_cores == 20
    cut_row = parse(SAMPLE[: SAMPLE.index(b",350")])
    assert cut_row[0].line == 2 and "fields where the header has 9" in cut_row[0].reason
    (rejection,) = parse(bytes(range(14, 256)))
    assert rejection.line == 1


def test_ten_megabyte_line_is_bounded():
    huge = b"2024-03-01T12:00:00Z," + b"S" * (10 * 1024 * 1024)
    items = parse(b"\n".join([HEADER, huge, BOTTLENECK]))
    assert items[0] == Rejection(2, "line longer than 1 MiB")
    assert items[1].line == 3
    (rejection,) = parse(b"timestamp," * (1024 * 1024))
    assert rejection.line == 1 and "1 MiB" in rejection.reason


def test_duplicate_rows_are_both_yielded():
    items = parse(b"\n".join([HEADER, BOTTLENECK, BOTTLENECK]))
    assert [item.line for item in items] == [2, 3]
    assert items[0].natural_key == items[1].natural_key


def test_detect_accepts_snapshots():
    assert PARSER.detect(SAMPLE, "snapshots.csv")
    assert PARSER.detect(b"\xef\xbb\xbftimestamp,site,idle_jobs\n", "x.csv")


def test_detect_refuses_other_formats(samples_dir):
    from tests.ingest.test_ncsa import SAMPLE as NCSA
    from tests.ingest.test_pbs import SAMPLE as PBS
    from tests.ingest.test_slurm import SAMPLE as SLURM

    others = [NCSA, PBS, SLURM, b"", b"timestamp,site\n", bytes(range(256))]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gratia-probe/condor-ap-history").iterdir()]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gracc-collector/test_data").glob("*.xml")]
    assert len(others) > 10
    for head in others:
        assert not PARSER.detect(head, "history"), head[:80]


def test_htcondor_detect_does_not_claim_snapshots():
    assert not HTCondorHistoryParser().detect(SAMPLE, "snapshots.csv")


LINES = [HEADER, BOTTLENECK, NO_DEMAND]
spliced_line = st.tuples(st.sampled_from(LINES), st.integers(0, 90), st.binary(max_size=12)).map(
    lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + len(t[2]) :]
)
csv_like = st.lists(st.one_of(st.sampled_from(LINES), spliced_line, st.binary(max_size=40)), max_size=8).map(
    lambda lines: b"\n".join([HEADER, *lines])
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=4096), csv_like))
def test_fuzz_any_bytes_give_snapshots_or_rejections(data):
    items = parse(data)
    line_count = data.count(b"\n") + 1
    for item in items:
        assert isinstance(item, ParsedSnapshot | Rejection)
        if isinstance(item, Rejection):
            assert item.line is None or 1 <= item.line <= line_count
            assert item.reason
