"""The PBS/Torque accounting log parser: hand-worked E records, skipped record types, hostile input."""
import io
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.parsers.base import ParseContext, ParsedRecord, Rejection
from ingest.parsers.htcondor_history import HTCondorHistoryParser
from ingest.parsers.pbs import PBSParser

NOW = datetime(2024, 4, 1, tzinfo=UTC)
PARSER = PBSParser()

QUEUED = b"03/02/2024 05:59:34;Q;21048463.pbs01.example.org;queue=grid4000M"
STARTED = b"03/02/2024 06:05:45;S;21048463.pbs01.example.org;user=atl009 group=atlas queue=grid4000M start=1709355945"
# Torque, one core: 1709355945 = 2024-03-02 05:05:45 UTC, 1709360104 = 06:15:04 UTC; the line prefix is the
# server's local time (here UTC+1) and is not used.
SINGLE = (
    b"03/02/2024 07:15:04;E;21048463.pbs01.example.org;user=atl009 group=atlas jobname=cre09_443 queue=grid4000M "
    b"ctime=1709355574 qtime=1709355574 etime=1709355574 start=1709355945 owner=atl009@ce09.example.org "
    b"exec_host=wn1277.example.org/5 Resource_List.cput=96:00:00 Resource_List.pmem=4000mb "
    b"Resource_List.walltime=96:00:00 session=20374 end=1709360104 Exit_status=0 resources_used.cput=01:05:24 "
    b"resources_used.mem=2031040kb resources_used.vmem=3335528kb resources_used.walltime=01:09:19"
)
# Torque MPI job, nodes=2:ppn=8 with its 16 slots in exec_host, killed by SIGTERM (271 = 256 + 15).
MPI = (
    b"03/02/2024 10:15:02;E;21048470.pbs01.example.org;user=cms042 group=cms account=CMS-HPC jobname=mpi_run "
    b"queue=long ctime=1709362000 qtime=1709362000 etime=1709362000 start=1709362800 "
    b"exec_host=wn0766/0-7+wn0767/0-7 Resource_List.nodes=2:ppn=8 Resource_List.mem=32gb "
    b"Resource_List.walltime=48:00:00 session=7428 end=1709370902 Exit_status=271 resources_used.cput=17:30:10 "
    b"resources_used.mem=20971520kb resources_used.walltime=02:15:02"
)
# Torque >= 5.1 (durations in seconds), only Resource_List.nodes says the cores: 2 nodes x 8 = 16, 2 x 1 GPU.
NODES_ONLY = (
    b"03/03/2024 02:10:00;E;123.pbs01.example.org;user=lee group=bio queue=short start=1709427600 "
    b"end=1709428200 Resource_List.nodes=2:ppn=8:gpus=1 Exit_status=0 resources_used.cput=4800 "
    b"resources_used.walltime=600"
)
# PBS Pro: resources_used.ncpus, ngpus, the default project is no project.
PBS_PRO = (
    b'03/03/2024 10:20:00;E;4242.pbspro01;user=alice group=users project=_pbs_project_default jobname="my run" '
    b"queue=workq ctime=1709456000 qtime=1709456000 etime=1709456000 start=1709457000 exec_host=node1/0*8 "
    b"exec_vnode=(node1:ncpus=8) Resource_List.ncpus=8 Resource_List.ngpus=1 Resource_List.select=1:ncpus=8:ngpus=1 "
    b"resources_used.ncpus=8 resources_used.cput=00:50:00 resources_used.mem=1048576kb "
    b"resources_used.walltime=00:10:00 end=1709457600 Exit_status=0 run_count=1"
)
SAMPLE = b"\n".join([QUEUED, STARTED, SINGLE, MPI, NODES_ONLY, PBS_PRO]) + b"\n"


def parse(data: bytes, site: str = "UKI-TEST") -> list:
    return list(PARSER.parse(io.BytesIO(data), "20240302", ParseContext(site=site, now=NOW)))


def records(items: list) -> list[ParsedRecord]:
    return [item for item in items if isinstance(item, ParsedRecord)]


def rejections(items: list) -> list[Rejection]:
    return [item for item in items if isinstance(item, Rejection)]


def with_attribute(line: bytes, old: bytes, new: bytes) -> bytes:
    assert old in line
    return line.replace(old, new)


def test_single_core_torque_job_field_by_field():
    (record,) = parse(SINGLE + b"\n")
    assert record.kind == "batch"
    assert record.natural_key == "pbs|pbs01.example.org|21048463.pbs01.example.org|1709360104"
    assert record.start == datetime(2024, 3, 2, 5, 5, 45, tzinfo=UTC)
    assert record.end == datetime(2024, 3, 2, 6, 15, 4, tzinfo=UTC)
    assert record.wall_seconds == 4159.0  # 01:09:19 = end - start
    assert record.cpu_user_seconds == 3924.0  # 01:05:24
    assert record.cpu_sys_seconds == 0.0
    assert record.cores == 1  # exec_host wn1277.example.org/5
    assert record.memory_mb == 1983  # no Resource_List.mem: resources_used.mem 2031040 kB
    assert record.gpus == 0
    assert (record.exit_code, record.exit_signal) == (0, None)
    assert record.local_user == "atl009"
    assert record.project == ""
    assert record.site == "UKI-TEST"
    assert record.resource == "pbs01.example.org"
    assert record.extra == {"queue": "grid4000M"}
    assert record.line == 1


def test_nodes_2_ppn_8_mpi_job_has_16_cores_and_a_signal():
    (record,) = parse(MPI)
    assert record.cores == 16
    assert record.wall_seconds == 8102.0  # 02:15:02
    assert record.cpu_user_seconds == 17 * 3600 + 30 * 60 + 10
    assert record.memory_mb == 32 * 1024  # Resource_List.mem (allocated) wins over resources_used.mem
    assert record.project == "CMS-HPC"
    assert (record.exit_code, record.exit_signal) == (None, 15)
    assert record.start == datetime(2024, 3, 2, 7, 0, tzinfo=UTC)


def test_cores_and_gpus_from_resource_list_nodes_alone():
    (record,) = parse(NODES_ONLY)
    assert (record.cores, record.gpus) == (16, 2)
    assert record.wall_seconds == 600.0  # seconds form of Torque >= 5.1
    assert record.cpu_user_seconds == 4800.0
    assert record.memory_mb is None


def test_host_list_nodes_and_resource_list_ncpus():
    hosts = with_attribute(NODES_ONLY, b"Resource_List.nodes=2:ppn=8:gpus=1", b"Resource_List.nodes=n01:ppn=4+n02:ppn=4")
    assert parse(hosts)[0].cores == 8
    ncpus = with_attribute(NODES_ONLY, b"Resource_List.nodes=2:ppn=8:gpus=1", b"Resource_List.ncpus=12")
    assert parse(ncpus)[0].cores == 12
    bare = with_attribute(NODES_ONLY, b"Resource_List.nodes=2:ppn=8:gpus=1 ", b"")
    assert parse(bare)[0].cores == 1


def test_pbs_pro_job():
    (record,) = parse(PBS_PRO)
    assert (record.cores, record.gpus) == (8, 1)
    assert record.project == ""  # _pbs_project_default is no project
    assert record.memory_mb == 1024
    assert record.wall_seconds == 600.0
    assert record.cpu_user_seconds == 3000.0
    assert record.resource == "pbspro01"
    assert record.natural_key == "pbs|pbspro01|4242.pbspro01|1709457600"


def test_sample_file_skips_other_record_types_silently():
    items = parse(SAMPLE)
    assert not rejections(items)
    assert [record.line for record in records(items)] == [3, 4, 5, 6]


def test_deleted_aborted_and_license_records_are_not_jobs():
    lines = [
        b"03/02/2024 06:30:00;D;21048464.pbs01.example.org;requestor=root@pbs01",
        b"03/02/2024 06:30:01;A;21048464.pbs01.example.org;",
        b"03/02/2024 06:30:02;L;license;floating license hour:0 day:0 avail:0",
    ]
    assert parse(b"\n".join(lines)) == []


def test_server_less_job_id_uses_the_site_and_needs_one():
    line = with_attribute(SINGLE, b"21048463.pbs01.example.org", b"21048463")
    (record,) = parse(line)
    assert record.natural_key == "pbs|UKI-TEST|21048463|1709360104"
    assert record.resource == ""
    (rejection,) = parse(line, site="")
    assert rejection.line == 1 and "--site" in rejection.reason


def test_without_site_the_server_names_the_job():
    (record,) = parse(SINGLE, site="")
    assert record.site == ""
    assert record.natural_key.startswith("pbs|pbs01.example.org|")


def test_empty_file():
    assert parse(b"") == [Rejection(None, "empty file: no PBS accounting records")]
    assert len(parse(b"\n\n  \n")) == 1


def test_truncated_record_is_rejected_and_the_rest_kept():
    truncated = SINGLE[: SINGLE.index(b" end=")]
    items = parse(truncated + b"\n" + MPI + b"\n" + SINGLE[:30])
    assert [type(item) for item in items] == [Rejection, ParsedRecord, Rejection]
    assert items[0].line == 1 and "no end time" in items[0].reason
    assert items[2].line == 3 and "cut short" in items[2].reason


def test_never_started_job_is_rejected():
    line = with_attribute(SINGLE, b"start=1709355945 ", b"")
    (rejection,) = parse(line)
    assert "never ran" in rejection.reason


def test_binary_garbage_and_non_utf8():
    garbage = bytes(range(256)) * 4
    non_utf8 = with_attribute(SINGLE, b"jobname=cre09_443", b"jobname=caf\xe9")
    items = parse(garbage + b"\n" + non_utf8 + b"\n" + MPI)
    assert all(isinstance(item, Rejection) for item in items[:-1])
    assert any("not UTF-8" in item.reason for item in items[:-1])
    assert isinstance(items[-1], ParsedRecord)


def test_ten_megabyte_line_is_bounded_and_rejected():
    huge = b"03/02/2024 06:41:44;E;1.pbs01;user=" + b"x" * (10 * 1024 * 1024)
    items = parse(huge + b"\n" + MPI + b"\n")
    assert items[0] == Rejection(1, "line longer than 1 MiB")
    assert records(items)[0].line == 2


def test_impossible_durations_are_rejected():
    cases = {
        b"resources_used.walltime=-00:00:01": "negative wall time",
        b"resources_used.walltime=nan": "not HH:MM:SS",
        b"resources_used.walltime=99999:00:00": "absurd wall time",
        b"resources_used.walltime=inf": "not HH:MM:SS",
    }
    for replacement, reason in cases.items():
        (rejection,) = parse(with_attribute(SINGLE, b"resources_used.walltime=01:09:19", replacement))
        assert rejection.line == 1 and reason in rejection.reason, replacement


def test_negative_cpu_and_unreadable_values_are_rejected():
    cases = {
        (b"resources_used.cput=01:05:24", b"resources_used.cput=-01:05:24"): "cpu_user_seconds is negative",
        (b"Exit_status=0", b"Exit_status=zero"): "Exit_status",
        (b"resources_used.mem=2031040kb", b"resources_used.mem=lots"): "not a size",
        (b"resources_used.mem=2031040kb", b"resources_used.mem=999999999999999999pb"): "absurd",
        (b"exec_host=wn1277.example.org/5", b"exec_host=wn1/7-3"): "exec_host",
        (b"start=1709355945", b"start=yesterday"): "not epoch seconds",
        (b"exec_host=wn1277.example.org/5", b"exec_host=wn1/0-99999"): "absurd core count",
    }
    for (old, new), reason in cases.items():
        (rejection,) = parse(with_attribute(SINGLE, old, new))
        assert reason in rejection.reason, new


def test_end_before_start_and_future_dates_are_rejected():
    backwards = with_attribute(SINGLE, b"end=1709360104", b"end=1709350000")
    future = with_attribute(SINGLE, b"end=1709360104", b"end=1893456000")  # 2030
    out_of_range = with_attribute(SINGLE, b"end=1709360104", b"end=99999999999")
    items = parse(b"\n".join([backwards, future, out_of_range, MPI]))
    assert "before start" in items[0].reason
    assert "in the future" in items[1].reason
    assert items[2].line == 3 and isinstance(items[2], Rejection)
    assert isinstance(items[3], ParsedRecord)


def test_duplicate_records_are_both_yielded():
    items = parse(SINGLE + b"\n" + SINGLE + b"\n")
    assert [item.line for item in records(items)] == [1, 2]
    assert items[0].natural_key == items[1].natural_key


def test_detect_accepts_pbs_logs():
    assert PARSER.detect(SAMPLE, "20240302")
    assert PARSER.detect(SAMPLE[:200], "20240302")  # a head cut inside a line


def test_detect_refuses_other_formats(samples_dir):
    from tests.ingest.test_ncsa import SAMPLE as NCSA
    from tests.ingest.test_slurm import SAMPLE as SLURM
    from tests.ingest.test_snapshot import SAMPLE as SNAPSHOT

    others = [NCSA, SLURM, SNAPSHOT, b"", b"\n\n", bytes(range(256))]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gratia-probe/condor-ap-history").iterdir()]
    others += [path.read_bytes()[:65536] for path in (samples_dir / "gratia/gracc-collector/test_data").glob("*.xml")]
    assert len(others) > 10
    for head in others:
        assert not PARSER.detect(head, "history"), head[:80]


def test_htcondor_detect_does_not_claim_pbs_logs():
    assert not HTCondorHistoryParser().detect(SAMPLE, "20240302")


LINES = [QUEUED, STARTED, SINGLE, MPI, NODES_ONLY, PBS_PRO]
spliced_line = st.tuples(st.sampled_from(LINES), st.integers(0, 700), st.binary(max_size=24)).map(
    lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + len(t[2]) :]
)
pbs_like = st.lists(st.one_of(st.sampled_from(LINES), spliced_line, st.binary(max_size=60)), max_size=8).map(b"\n".join)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=4096), pbs_like))
def test_fuzz_any_bytes_give_records_or_rejections(data):
    items = parse(data)
    line_count = data.count(b"\n") + 1
    for item in items:
        assert isinstance(item, ParsedRecord | Rejection)
        if isinstance(item, Rejection):
            assert item.line is None or 1 <= item.line <= line_count
            assert item.reason


def test_quoted_values_and_repeated_keys():
    quoted = with_attribute(PBS_PRO, b'jobname="my run"', b'jobname="a user=mallory" account="Deep Sky"')
    (record,) = parse(quoted)
    assert record.local_user == "alice"  # the first user= wins; a job name cannot replace it
    assert record.project == "Deep Sky"
    (record,) = parse(PBS_PRO + b' account="unfinished')  # an unterminated quote runs to the end of the line
    assert record.project == "unfinished"
    swallowed = with_attribute(PBS_PRO, b'jobname="my run"', b'jobname="my')
    assert "no start time" in parse(swallowed)[0].reason
