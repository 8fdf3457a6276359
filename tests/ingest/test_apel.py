"""The APEL message parser: individual job and summary messages written from APEL's field lists
(apel/db/records/job.py, summary.py, normalised_summary.py), and hostile input."""
import io
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.parsers import ParseContext, ParsedRecord, Rejection
from ingest.parsers.apel import APELParser, ParsedSummary
from ingest.parsers.gratia_ur import GratiaURParser

PARSER = APELParser()
NOW = datetime(2026, 11, 21, tzinfo=UTC)
CONTEXT = ParseContext(now=NOW)


def parse(data: str | bytes, context=CONTEXT) -> list:
    raw = data.encode() if isinstance(data, str) else data
    return list(PARSER.parse(io.BytesIO(raw), "apel.msg", context))


# Records start on lines 2, 26 and 40.
JOBS = """\
APEL-individual-job-message: v0.3
Site: RAL-LCG2
SubmitHost: arc-ce01.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid3000M
MachineName: arc-ce01.gridpp.rl.ac.uk
Queue: grid3000M
LocalJobId: 4617532.0
LocalUserId: atlasprd019
GlobalUserName: /DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlpilo1/CN=614260/CN=Robot: ATLAS Pilot1
FQAN: /atlas/Role=production/Capability=NULL
VO: atlas
VOGroup: /atlas
VORole: Role=production
WallDuration: 86400
CpuDuration: 648000
Processors: 8
NodeCount: 1
StartTime: 1709251200
EndTime: 1709337600
InfrastructureDescription: APEL-ARC-HTCONDOR
InfrastructureType: grid
MemoryReal: 16777216
MemoryVirtual: 20971520
ServiceLevelType: HEPSPEC
ServiceLevel: 13.11
%%
Site: RAL-LCG2
SubmitHost: arc-ce02.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid2000M
LocalJobId: 4617533.0
LocalUserId: lhcb001
GlobalUserName: None
FQAN: /lhcb/lhcbprd/Role=pilot/Capability=NULL;/lhcb/Role=NULL/Capability=NULL
WallDuration: 3600
CpuDuration: 3500
Processors: 1
StartTime: 1709337600
EndTime: 1709341200
ServiceLevelType: si2k
ServiceLevel: 3000
%%
Site: UKI-NORTHGRID-MAN-HEP
SubmitHost: ce01.tier2.hep.manchester.ac.uk
LocalJobId: 88211
VO: dteam
WallDuration: 600
CpuDuration: 590
StartTime: 1709400000
EndTime: 1709400600
%%
"""


def test_job_message_maps_every_field():
    first, second, third = parse(JOBS)
    assert isinstance(first, ParsedRecord)
    assert first.kind == "batch"
    assert first.line == 2
    assert first.natural_key == "RAL-LCG2|4617532.0|1709337600"  # site | local job id | end time epoch
    assert first.site == "RAL-LCG2"
    assert first.resource == "arc-ce01.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid3000M"
    assert (first.start, first.end) == (datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 3, 2, tzinfo=UTC))
    assert first.wall_seconds == 86400.0  # per job: core-hours are 86400 x 8 / 3600 = 192
    assert first.cores == 8
    assert (first.cpu_user_seconds, first.cpu_sys_seconds) == (648000.0, 0.0)
    assert first.memory_mb == 16384  # MemoryReal in KB
    assert first.person == "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlpilo1/CN=614260/CN=Robot: ATLAS Pilot1"
    assert (first.vo, first.fqan, first.local_user) == ("atlas", "/atlas/Role=production/Capability=NULL", "atlasprd019")
    assert first.extra == {
        "machine_name": "arc-ce01.gridpp.rl.ac.uk", "queue": "grid3000M", "node_count": 1,
        "infrastructure_type": "grid", "infrastructure_description": "APEL-ARC-HTCONDOR",
        "service_level_type": "HEPSPEC", "service_level": 13.11, "memory_virtual_kb": 20971520,
        "vo_group": "/atlas", "vo_role": "Role=production",
    }  # fmt: skip
    assert second.line == 26
    assert second.person == ""  # "None" is APEL's null
    assert (second.vo, second.extra["vo_group"], second.extra["vo_role"]) == ("lhcb", "/lhcb/lhcbprd", "Role=pilot")
    assert (second.cores, second.memory_mb) == (1, None)
    assert third.line == 40
    assert (third.site, third.vo, third.fqan, third.cores) == ("UKI-NORTHGRID-MAN-HEP", "dteam", "", 1)
    assert third.natural_key == "UKI-NORTHGRID-MAN-HEP|88211|1709400600"


def test_version_0_2_job_messages_have_the_same_fields():
    """APEL's own test message (apel server tests), header v0.2."""
    message = """APEL-individual-job-message: v0.2
Site: RAL-LCG2
SubmitHost: ce01.ncg.ingrid.pt:2119/jobmanager-lcgsge-atlasgrid
LocalJobId: 31564872
LocalUserId: atlasprd019
GlobalUserName: /C=whatever/D=someDN
FQAN: /voname/Role=NULL/Capability=NULL
WallDuration: 234256
CpuDuration: 2345
Processors: 2
NodeCount: 2
StartTime: 1234567890
EndTime: 1234567899
MemoryReal: 1000
MemoryVirtual: 2000
ServiceLevelType: Si2k
ServiceLevel: 1000
%%"""
    (record,) = parse(message)
    assert record.natural_key == "RAL-LCG2|31564872|1234567899"
    assert (record.vo, record.wall_seconds, record.cores, record.memory_mb) == ("voname", 234256.0, 2, None)


SUMMARIES = """\
APEL-summary-job-message: v0.2
Site: RAL-LCG2
Month: 3
Year: 2024
GlobalUserName: /DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlpilo1/CN=614260/CN=Robot: ATLAS Pilot1
VO: atlas
VOGroup: /atlas
VORole: Role=production
SubmitHost: arc-ce01.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid3000M
InfrastructureType: grid
ServiceLevelType: HEPSPEC
ServiceLevel: 13.11
NodeCount: 1
Processors: 8
EarliestEndTime: 1709251260
LatestEndTime: 1711929000
WallDuration: 31536000
CpuDuration: 250000000
NumberOfJobs: 4021
%%
Site: RAL-LCG2
Month: 3
Year: 2024
VO: dteam
SubmitHost: arc-ce02.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid2000M
InfrastructureType: grid
ServiceLevelType: si2k
ServiceLevel: 3000
Processors: 1
WallDuration: 7200
CpuDuration: 7000
NumberOfJobs: 12
%%
"""
NORMALISED = """\
APEL-summary-job-message: v0.3
Site: UKI-NORTHGRID-MAN-HEP
Month: 2
Year: 2024
GlobalUserName: /C=UK/O=eScience/OU=Manchester/L=HEP/CN=alessandra forti
VO: atlas
VOGroup: /atlas
VORole: Role=NULL
SubmitHost: ce01.tier2.hep.manchester.ac.uk
Infrastructure: APEL-CREAM-HTCONDOR
NodeCount: 1
Processors: 4
EarliestEndTime: 1706745600
LatestEndTime: 1709251199
WallDuration: 360000
CpuDuration: 1300000
NormalisedWallDuration: 3600000
NormalisedCpuDuration: 13000000
NumberOfJobs: 100
%%
"""


def test_summary_message_stays_a_summary():
    first, second = parse(SUMMARIES)
    assert isinstance(first, ParsedSummary)
    assert (first.line, first.site, first.year, first.month) == (2, "RAL-LCG2", 2024, 3)
    assert first.person == "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlpilo1/CN=614260/CN=Robot: ATLAS Pilot1"
    assert (first.vo, first.vo_group, first.vo_role, first.fqan) == ("atlas", "/atlas", "Role=production", "")
    assert first.submit_host == "arc-ce01.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid3000M"
    assert (first.infrastructure, first.service_level_type, first.service_level) == ("grid", "HEPSPEC", 13.11)
    assert (first.processors, first.node_count, first.number_of_jobs) == (8, 1, 4021)
    assert (first.wall_seconds, first.cpu_seconds) == (31536000.0, 250000000.0)
    assert (first.normalised_wall, first.normalised_cpu) == (None, None)
    assert first.earliest_end == datetime(2024, 3, 1, 0, 1, tzinfo=UTC)
    assert first.latest_end == datetime(2024, 3, 31, 23, 50, tzinfo=UTC)
    assert first.natural_key == (
        "RAL-LCG2|2024|3|atlas|/atlas|Role=production|/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlpilo1"
        "/CN=614260/CN=Robot: ATLAS Pilot1|arc-ce01.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid3000M|grid|HEPSPEC"
        "|13.110|1|8"
    )
    assert second.line == 21
    assert (second.person, second.node_count, second.earliest_end) == ("", 0, None)
    assert second.natural_key == (
        "RAL-LCG2|2024|3|dteam||||arc-ce02.gridpp.rl.ac.uk:2811/nordugrid-Condor-grid2000M|grid|si2k|3000.000|0|1"
    )


def test_normalised_summary_message():
    (summary,) = parse(NORMALISED)
    assert isinstance(summary, ParsedSummary)
    assert (summary.site, summary.year, summary.month, summary.infrastructure) == ("UKI-NORTHGRID-MAN-HEP", 2024, 2, "APEL-CREAM-HTCONDOR")
    assert (summary.normalised_wall, summary.normalised_cpu) == (3600000.0, 13000000.0)
    assert (summary.service_level_type, summary.service_level) == ("", None)
    assert summary.natural_key.endswith("|APEL-CREAM-HTCONDOR|||1|4")


def test_the_same_bucket_with_other_numbers_keeps_its_key():
    """A re-sent summary (APEL REPLACEs by primary key) has the same natural key with new totals."""
    first = parse(SUMMARIES)[0]
    resent = parse(SUMMARIES.replace("NumberOfJobs: 4021", "NumberOfJobs: 4100"))[0]
    assert resent.natural_key == first.natural_key
    assert resent.number_of_jobs == 4100


# --- Hostile input ---


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("", "empty file"),
        ("\n\n", "empty file"),
        ("Site: RAL-LCG2\nLocalJobId: 1\n", "not an APEL message"),
        ("APEL-sync-message: v0.1\nSite: X\n", "not an APEL message"),
        ("APEL-individual-job-message: v0.4\nSite: X\n", "unsupported APEL-individual-job-message version 'v0.4'"),
        ("APEL-summary-job-message: v9\n", "unsupported APEL-summary-job-message version"),
        (b"\x00\x01\x02\xff binary garbage \xfe" * 50, "not an APEL message"),
        (b"\xff\xfeA\x00P\x00E\x00L\x00", "not an APEL message"),
    ],
)
def test_not_an_apel_message_is_one_rejection_on_the_first_line(data, reason):
    (item,) = parse(data)
    assert isinstance(item, Rejection)
    assert item.line == 1
    assert reason in item.reason


GOOD_JOB = "Site: S\nLocalJobId: {id}\nWallDuration: 60\nCpuDuration: 50\nStartTime: 1709251200\nEndTime: 1709251260\n"


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ("Site: S\nWallDuration: 60\nCpuDuration: 50\nStartTime: 1709251200\n", "missing mandatory fields LocalJobId, EndTime"),
        (GOOD_JOB.format(id="None"), "missing mandatory field LocalJobId"),
        (GOOD_JOB.format(id=2) + "Colour: blue\n", "line 15: unknown field 'Colour'"),
        (GOOD_JOB.format(id=2).replace("WallDuration: 60", "WallDuration: sixty"), "line 11: WallDuration is not a whole number"),
        (GOOD_JOB.format(id=2).replace("WallDuration: 60", "WallDuration: NaN"), "WallDuration is not a whole number"),
        (GOOD_JOB.format(id=2).replace("WallDuration: 60", "WallDuration: 60.5"), "WallDuration is not a whole number"),
        (GOOD_JOB.format(id=2).replace("WallDuration: 60", "WallDuration: -60"), "negative WallDuration (-60)"),
        (GOOD_JOB.format(id=2).replace("CpuDuration: 50", "CpuDuration: -1"), "negative CpuDuration"),
        (GOOD_JOB.format(id=2).replace("WallDuration: 60", "WallDuration: 999999999"), "absurd wall time"),
        (GOOD_JOB.format(id=2) + "Processors: 100000\n", "absurd core count"),
        (GOOD_JOB.format(id=2).replace("EndTime: 1709251260", "EndTime: 1709000000"), "is before start"),
        (GOOD_JOB.format(id=2).replace("EndTime: 1709251260", "EndTime: 32503680000"), "in the future"),
        (GOOD_JOB.format(id=2).replace("EndTime: 1709251260", "EndTime: 99999999999999"), "EndTime is out of range"),
        (GOOD_JOB.format(id=2).replace("StartTime: 1709251200", "StartTime: 0"), "before 1995"),
        (GOOD_JOB.format(id=2).replace("StartTime: 1709251200", "StartTime: 2024-03-01T00:00:00Z"), "StartTime is not a whole number"),
        (GOOD_JOB.format(id=2) + "ServiceLevelType: HEPSPEC\n", "ServiceLevelType and ServiceLevel must be given together"),
        (GOOD_JOB.format(id=2) + "ServiceLevelType: bogomips\nServiceLevel: 10\n", "ServiceLevelType 'bogomips' is not"),
        (GOOD_JOB.format(id=2) + "ServiceLevelType: HEPSPEC\nServiceLevel: inf\n", "ServiceLevel is not a number"),
        (GOOD_JOB.format(id=2) + "this line has no colon\n", "line 15 is not a 'Key: value' line"),
        (GOOD_JOB.format(id=2).encode() + b"LocalUserId: caf\xe9\n", "line 15 is not UTF-8 (byte 0xe9 at column 17)"),
    ],
)
def test_bad_job_records_are_rejected_between_good_ones(record, reason):
    bad = record if isinstance(record, bytes) else record.encode()
    data = b"APEL-individual-job-message: v0.3\n" + GOOD_JOB.format(id=1).encode() + b"%%\n" + bad + b"%%\n"
    data += GOOD_JOB.format(id=3).encode() + b"%%\n"
    items = parse(data)
    assert [type(item) for item in items] == [ParsedRecord, Rejection, ParsedRecord]
    assert items[1].line == 9
    assert reason in items[1].reason


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (("Month: 3", "Month: 13"), "Month 13 is out of range"),
        (("Year: 2024", "Year: 1990"), "Year 1990 is before 1995"),
        (("Year: 2024", "Year: 2999"), "2999-03 is in the future"),
        (("EarliestEndTime: 1709251260", "EarliestEndTime: 1700000000"), "EarliestEndTime 2023-11-14 22:13:20 is not within 2024-03"),
        (("LatestEndTime: 1711929000", "LatestEndTime: 1709251200"), "LatestEndTime is earlier than EarliestEndTime"),
        (("WallDuration: 31536000", "WallDuration: -5"), "negative WallDuration"),
        (("WallDuration: 31536000", "WallDuration: 999999999999999"), "absurd WallDuration"),
        (("NumberOfJobs: 4021", "NumberOfJobs: many"), "NumberOfJobs is not a whole number"),
        (("NumberOfJobs: 4021", "NumberOfJobs: None"), "missing mandatory field NumberOfJobs"),
        (("ServiceLevel: 13.11", "ServiceLevel: 1e999"), "ServiceLevel is not a finite number"),
        (("InfrastructureType: grid", "Infrastructure: grid"), "unknown field 'Infrastructure' in an APEL-summary-job-message: v0.2"),
    ],
)
def test_bad_summaries_are_rejected_and_the_next_one_kept(change, reason):
    items = parse(SUMMARIES.replace(*change, 1))
    assert [type(item) for item in items] == [Rejection, ParsedSummary]
    assert items[0].line == 2
    assert reason in items[0].reason


def test_normalised_summary_needs_its_normalised_durations():
    (item,) = parse(NORMALISED.replace("NormalisedCpuDuration: 13000000\n", ""))
    assert isinstance(item, Rejection) and "missing mandatory field NormalisedCpuDuration" in item.reason


def test_truncated_message_keeps_the_complete_records():
    cut = JOBS[: JOBS.index("StartTime: 1709400000")]
    items = parse(cut)
    assert [type(item) for item in items] == [ParsedRecord, ParsedRecord, Rejection]
    assert items[2].line == 40 and "missing mandatory fields StartTime, EndTime" in items[2].reason


def test_last_record_needs_no_trailing_separator_and_blank_lines_are_ignored():
    text = "\n" + JOBS.rstrip("%\n").replace("Site: UKI", "\nSite: UKI")
    items = parse(text)
    assert [type(item) for item in items] == [ParsedRecord] * 3
    assert items[2].line == 42


def test_duplicated_records_are_both_yielded():
    one = GOOD_JOB.format(id=7)
    first, second = parse(f"APEL-individual-job-message: v0.3\n{one}%%\n{one}%%\n")
    assert first.natural_key == second.natural_key == "S|7|1709251260"
    assert (first.line, second.line) == (2, 9)


def test_over_long_line_is_rejected_in_bounded_memory():
    data = b"APEL-individual-job-message: v0.3\n" + GOOD_JOB.format(id=1).encode() + b"%%\nSite: " + b"x" * (3 * 1024 * 1024)
    data += b"\n%%\n" + GOOD_JOB.format(id=2).encode()
    first, bad, last = parse(data)
    assert isinstance(first, ParsedRecord) and isinstance(last, ParsedRecord)
    assert bad.line == 9 and "longer than 1 MiB" in bad.reason


# --- Detection and fuzzing ---


def test_detect_accepts_apel_messages_and_refuses_other_formats(samples_dir):
    assert PARSER.detect(JOBS.encode(), "apel.msg")
    assert PARSER.detect(SUMMARIES.encode(), "summaries")
    assert PARSER.detect(b"\xef\xbb\xbf\n" + NORMALISED.encode(), "summaries")
    others = [*samples_dir.glob("gratia/gracc-collector/test_data/*"), samples_dir / "gratia/gracc-collector/test.bundle",
              *samples_dir.glob("gratia/gratia-probe/*/*"), *samples_dir.glob("glideinwms/*"), *samples_dir.glob("htcondor/*")]  # fmt: skip
    assert len(others) > 30
    for path in others:
        assert not PARSER.detect(path.read_bytes()[:65536], path.name), path.name
    assert not PARSER.detect(b"", "empty")
    assert not PARSER.detect(b"Site: RAL-LCG2\n%%\n", "no header")


def test_gratia_parser_does_not_claim_apel_messages():
    for message in (JOBS, SUMMARIES, NORMALISED):
        assert not GratiaURParser().detect(message.encode(), "apel.msg")


FIELD_LINES = st.sampled_from(
    ["Site: S", "LocalJobId: 1", "WallDuration: 60", "CpuDuration: -5", "StartTime: 1709251200", "EndTime: 1709251260",
     "Processors: 0", "Month: 3", "Year: 2024", "NumberOfJobs: 2", "FQAN: /a/Role=x", "ServiceLevel: 1e5", "%%", "",
     "WallDuration: nan", "EndTime: 99999999999999999", "bad line", "Year: 99999", "Month: 0"]
)  # fmt: skip
HEADERS = st.sampled_from(["APEL-individual-job-message: v0.3", "APEL-summary-job-message: v0.2", "APEL-summary-job-message: v0.3"])
MESSAGES = st.builds(lambda header, lines: "\n".join([header, *lines]).encode(), HEADERS, st.lists(FIELD_LINES, max_size=40))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000) | MESSAGES)
def test_fuzz_any_input_yields_records_summaries_or_rejections(data):
    for item in parse(data):
        assert isinstance(item, (ParsedRecord, ParsedSummary, Rejection))
        if isinstance(item, Rejection):
            assert item.line is not None and item.line >= 1
