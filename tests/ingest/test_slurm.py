"""The `sacct -P` parser: columns by header name, steps skipped, TotalCPU (not CPUTimeRAW), hostile input."""
import io
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.parsers.base import ParseContext, ParsedRecord, Rejection
from ingest.parsers.htcondor_history import HTCondorHistoryParser
from ingest.parsers.slurm import SlurmParser

NOW = datetime(2024, 4, 1, tzinfo=UTC)
PARSER = SlurmParser()

HEADER = (
    b"JobID|JobIDRaw|Cluster|User|Account|Partition|AllocCPUS|AllocTRES|ReqMem|Start|End|ElapsedRaw|TotalCPU|"
    b"UserCPU|SystemCPU|CPUTimeRAW|State|ExitCode"
)
# 16 cores for 2 h: CPUTimeRAW = 7200 x 16 = 115200, but the processes used TotalCPU = 1-02:40:00 = 96000 s.
MULTICORE = (
    b"4242|4242|hpc1|alice|astro|compute|16|billing=16,cpu=16,mem=64G,node=1|64G|2024-03-01T10:00:00|"
    b"2024-03-01T12:00:00|7200|1-02:40:00|1-02:00:00|40:00|115200|COMPLETED|0:0"
)
STEPS = [
    b"4242.batch|4242.batch|hpc1||astro||16|cpu=16,mem=64G,node=1||2024-03-01T10:00:00|2024-03-01T12:00:00|7200|"
    b"00:01.500|00:01|00:00.500|115200|COMPLETED|0:0",
    b"4242.extern|4242.extern|hpc1||astro||16|billing=16,cpu=16,mem=64G,node=1||2024-03-01T10:00:00|"
    b"2024-03-01T12:00:00|7200|00:00:00|00:00:00|00:00:00|115200|COMPLETED|0:0",
    b"4242.0|4242.0|hpc1||astro||16|cpu=16,mem=64G,node=1||2024-03-01T10:00:05|2024-03-01T11:59:58|7193|"
    b"1-02:39:58|1-01:59:59|39:59|115088|COMPLETED|0:0",
]
# An array task on a GPU partition: JobIDRaw 4251 is its own id; 8 x 1800 = 14400 CPUTimeRAW, TotalCPU 12000 s.
ARRAY_GPU = (
    b"4243_7|4251|hpc1|bob|bio|gpu|8|billing=8,cpu=8,gres/gpu=2,mem=32000M,node=1|4000Mc|2024-03-01T11:00:00|"
    b"2024-03-01T11:30:00|1800|03:20:00|03:00:00|20:00|14400|FAILED|1:0"
)
RUNNING = (
    b"4244|4244|hpc1|carol|chem|compute|4|cpu=4,mem=8G,node=1|2G|2024-03-01T12:00:00|Unknown|3600|00:00:00|"
    b"00:00:00|00:00:00|14400|RUNNING|0:0"
)
NEVER_STARTED = (
    b"4245|4245|hpc1|dave|chem|compute|0||2G|None|2024-03-01T12:05:00|0|00:00:00|00:00:00|00:00:00|0|"
    b"CANCELLED by 1001|0:0"
)
# Killed at its time limit: ExitCode 0:15 is signal 15; TotalCPU in MM:SS.mmm form.
TIMEOUT = (
    b"4246|4246|hpc1|erin|phys|compute|2|cpu=2,mem=4G,node=1|4G|2024-03-01T13:00:00|2024-03-01T13:10:00|600|"
    b"05:30.250|05:00.250|00:30|1200|TIMEOUT|0:15"
)
SAMPLE = b"\n".join([HEADER, MULTICORE, *STEPS, ARRAY_GPU, RUNNING, NEVER_STARTED, TIMEOUT]) + b"\n"


def parse(data: bytes, site: str = "SITE_X") -> list:
    return list(PARSER.parse(io.BytesIO(data), "sacct.txt", ParseContext(site=site, now=NOW)))


def records(items: list) -> list[ParsedRecord]:
    return [item for item in items if isinstance(item, ParsedRecord)]


def replaced(line: bytes, old: bytes, new: bytes) -> bytes:
    assert old in line
    return line.replace(old, new, 1)


def test_sample_yields_jobs_only():
    items = parse(SAMPLE)
    assert all(isinstance(item, ParsedRecord) for item in items)  # steps, running and never started: skipped
    assert [(item.natural_key, item.line) for item in items] == [
        ("slurm|hpc1|4242", 2),
        ("slurm|hpc1|4251", 6),
        ("slurm|hpc1|4246", 9),
    ]


def test_multicore_job_uses_total_cpu_not_cputimeraw():
    record = parse(SAMPLE)[0]
    assert record.kind == "batch"
    assert record.start == datetime(2024, 3, 1, 10, 0, tzinfo=UTC)
    assert record.end == datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    assert record.wall_seconds == 7200.0
    assert record.cores == 16
    assert record.cpu_user_seconds + record.cpu_sys_seconds == 96000.0  # TotalCPU 1-02:40:00
    assert record.cpu_user_seconds + record.cpu_sys_seconds != 115200.0  # CPUTimeRAW = elapsed x cores
    assert record.cpu_sys_seconds == 2400.0  # SystemCPU 40:00
    assert record.cpu_user_seconds == 93600.0
    assert record.memory_mb == 64 * 1024
    assert record.gpus == 0
    assert (record.exit_code, record.exit_signal) == (0, None)
    assert record.local_user == "alice"
    assert record.project == "astro"
    assert record.resource == "hpc1"
    assert record.site == "SITE_X"
    assert record.extra == {"queue": "compute"}


def test_array_task_with_gpus():
    record = parse(SAMPLE)[1]
    assert record.natural_key == "slurm|hpc1|4251"
    assert (record.cores, record.gpus) == (8, 2)
    assert record.memory_mb == 32000  # AllocTRES mem wins over ReqMem
    assert record.wall_seconds == 1800.0
    assert (record.cpu_user_seconds, record.cpu_sys_seconds) == (10800.0, 1200.0)
    assert (record.exit_code, record.exit_signal) == (1, None)
    assert record.extra == {"queue": "gpu"}


def test_signal_and_millisecond_cpu():
    record = parse(SAMPLE)[2]
    assert (record.exit_code, record.exit_signal) == (None, 15)
    assert record.cpu_user_seconds == 300.25
    assert record.cpu_sys_seconds == 30.0
    assert record.memory_mb == 4096


def test_minimal_columns_in_another_order_with_reqmem_per_core_and_per_node():
    data = (
        b"End|Start|JobID|NCPUS|ReqMem|NNodes|Elapsed|TotalCPU\n"
        b"2024-03-02T01:00:00|2024-03-01T23:00:00|77|4|4000Mc|1|02:00:00|07:00:00\n"
        b"2024-03-02T01:00:00|2024-03-01T23:00:00|78|4|4000Mn|2|1-00:00:00|00:10.5\n"
    )
    first, second = parse(data)
    assert first.natural_key == "slurm|SITE_X|77"
    assert (first.cores, first.memory_mb, first.wall_seconds) == (4, 16000, 7200.0)
    assert (first.cpu_user_seconds, first.cpu_sys_seconds) == (25200.0, 0.0)
    assert first.resource == ""
    assert (second.memory_mb, second.wall_seconds, second.cpu_user_seconds) == (8000, 86400.0, 10.5)


def test_parsable_with_trailing_bar_offsets_and_epoch_times():
    data = (
        b"JobID|Cluster|AllocCPUS|Start|End|\n"
        b"9|c1|1|2024-03-01T10:00:00+01:00|2024-03-01T10:30:00+01:00|\n"
        b"10|c1|1|1709287200|1709289000|\n"
    )
    first, second = parse(data)
    assert first.start == datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    assert first.wall_seconds == 1800.0  # End - Start when there is no Elapsed column
    assert second.start == datetime(2024, 3, 1, 10, 0, tzinfo=UTC)


def test_repeated_header_of_concatenated_runs_is_skipped():
    items = parse(HEADER + b"\n" + MULTICORE + b"\n" + HEADER + b"\n" + TIMEOUT + b"\n")
    assert [item.line for item in items] == [2, 4]


def test_header_problems_reject_the_whole_file():
    cases = {
        MULTICORE + b"\n": "no JobID",
        b"JobID|User|Start\n1|a|2024-03-01T10:00:00\n": "no 'end' column",
        b"JobID|Start|End\n1|2024-03-01T10:00:00|2024-03-01T11:00:00\n": "no core count column",
        b"JobID|JobID|Start|End|NCPUS\n": "repeats column 'jobid'",
        b"\xff\xfe|JobID\n": "not UTF-8",
    }
    for data, reason in cases.items():
        (rejection,) = parse(data)
        assert rejection.line == 1 and reason in rejection.reason, data


def test_without_cluster_column_a_site_is_required():
    data = b"JobID|NCPUS|Start|End\n1|1|2024-03-01T10:00:00|2024-03-01T11:00:00\n"
    (rejection,) = parse(data, site="")
    assert rejection.line == 1 and "--site" in rejection.reason
    empty_cluster = replaced(MULTICORE, b"|hpc1|", b"||")
    (rejection,) = parse(HEADER + b"\n" + empty_cluster, site="")
    assert rejection.line == 2 and "--site" in rejection.reason


def test_empty_file():
    assert parse(b"") == [Rejection(None, "empty file: no sacct -P header line")]


def test_truncated_and_garbage_lines_are_rejected_and_the_rest_kept():
    garbage = bytes(range(14, 256))
    items = parse(b"\n".join([HEADER, MULTICORE[:40], garbage, replaced(TIMEOUT, b"erin", b"\xe9rin"), MULTICORE]))
    assert [type(item) for item in items] == [Rejection, Rejection, Rejection, ParsedRecord]
    assert items[0].line == 2 and "fields where the header has 18" in items[0].reason
    assert items[1].line == 3
    assert items[2].line == 4 and "not UTF-8" in items[2].reason


def test_ten_megabyte_line_is_bounded_and_rejected():
    items = parse(HEADER + b"\n" + b"1|" * (5 * 1024 * 1024) + b"\n" + MULTICORE)
    assert items[0] == Rejection(2, "line longer than 1 MiB")
    assert items[1].line == 3
    (rejection,) = parse(b"JobID|" * (2 * 1024 * 1024))
    assert rejection.line == 1


def test_impossible_durations_are_rejected():
    cases = {
        (b"|7200|1-02:40:00|", b"|-5|1-02:40:00|"): "negative wall time",
        (b"|7200|1-02:40:00|", b"|NaN|1-02:40:00|"): "ElapsedRaw",
        (b"|7200|1-02:40:00|", b"|99999999999|1-02:40:00|"): "absurd wall time",
        (b"|1-02:40:00|", b"|-01:00:00|"): "cpu_user_seconds is negative",
        (b"|1-02:40:00|", b"|nan|"): "TotalCPU is not a duration",
        (b"|64G|", b"|64X|"): "",  # ReqMem is not read when AllocTRES has mem=
        (b"mem=64G", b"mem=99999999T"): "absurd",
        (b"|0:0", b"|0"): "ExitCode",
        (b"|16|billing", b"|sixteen|billing"): "AllocCPUS is not a count",
        (b"node=1|", b"node=1,gres/gpu:a100=x|"): "gres/gpu:a100",
    }
    for (old, new), reason in cases.items():
        items = parse(HEADER + b"\n" + replaced(MULTICORE, old, new))
        if not reason:
            assert isinstance(items[0], ParsedRecord)
            continue
        (rejection,) = items
        assert rejection.line == 2 and reason in rejection.reason, new


def test_end_before_start_and_future_dates_are_rejected():
    backwards = replaced(MULTICORE, b"2024-03-01T12:00:00", b"2024-03-01T09:00:00")
    future = replaced(MULTICORE, b"2024-03-01T12:00:00", b"2031-03-01T12:00:00")
    unreadable = replaced(MULTICORE, b"2024-03-01T12:00:00", b"2024-13-45T99:00:00")
    overflowing = replaced(MULTICORE, b"2024-03-01T12:00:00", b"9999-12-31T23:59:59-01:00")
    items = parse(b"\n".join([HEADER, backwards, future, unreadable, overflowing, TIMEOUT]))
    assert "before start" in items[0].reason
    assert "in the future" in items[1].reason
    assert "End is not a time" in items[2].reason
    assert "End is not a time" in items[3].reason
    assert isinstance(items[4], ParsedRecord)


def test_zero_cores_after_a_start_is_rejected():
    (rejection,) = parse(HEADER + b"\n" + replaced(MULTICORE, b"|16|", b"|0|"))
    assert "absurd core count (0)" in rejection.reason


def test_duplicate_records_are_both_yielded():
    items = parse(b"\n".join([HEADER, MULTICORE, MULTICORE]))
    assert [item.natural_key for item in items] == ["slurm|hpc1|4242"] * 2


def test_detect_accepts_sacct_output():
    assert PARSER.detect(SAMPLE, "sacct.txt")
    assert PARSER.detect(b"\nJobIDRaw|End\n", "x")


def test_detect_refuses_other_formats(samples_dir):
    from tests.ingest.test_ncsa import SAMPLE as NCSA
    from tests.ingest.test_pbs import SAMPLE as PBS
    from tests.ingest.test_snapshot import SAMPLE as SNAPSHOT

    others = [NCSA, PBS, SNAPSHOT, b"", b"JobID\n", bytes(range(256))]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gratia-probe/condor-ap-history").iterdir()]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gracc-collector/test_data").glob("*.xml")]
    assert len(others) > 10
    for head in others:
        assert not PARSER.detect(head, "history"), head[:80]


def test_htcondor_detect_does_not_claim_sacct_output():
    assert not HTCondorHistoryParser().detect(SAMPLE, "sacct.txt")


LINES = [MULTICORE, *STEPS, ARRAY_GPU, RUNNING, NEVER_STARTED, TIMEOUT]
spliced_line = st.tuples(st.sampled_from(LINES), st.integers(0, 200), st.binary(max_size=16)).map(
    lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + len(t[2]) :]
)
sacct_like = st.lists(st.one_of(st.sampled_from(LINES), spliced_line, st.binary(max_size=60)), max_size=8).map(
    lambda lines: b"\n".join([HEADER, *lines])
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=4096), sacct_like))
def test_fuzz_any_bytes_give_records_or_rejections(data):
    items = parse(data)
    line_count = data.count(b"\n") + 1
    for item in items:
        assert isinstance(item, ParsedRecord | Rejection)
        if isinstance(item, Rejection):
            assert item.line is None or 1 <= item.line <= line_count
            assert item.reason
