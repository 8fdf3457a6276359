"""The glidein job.out parser on the real glidein stdout sample, on hand-written logs in the formats of
glideinwms `glidein_startup.sh` / `condor_startup.sh`, on its `.err` startd history, and on hostile input."""

import base64
import gzip
import io
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.parsers import ParseContext, ParsedRecord, Rejection
from ingest.parsers.gwms_glidein import GWMSGlideinParser, find_sibling_err

PARSER = GWMSGlideinParser()
NOW = datetime(2026, 11, 21, tzinfo=timezone.utc)
CONTEXT = ParseContext(now=NOW)
SAMPLE = "glideinwms/job.out.glideFactoryLogParser_glidein_stdout.out"


def utc(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, timezone.utc)


def parse(data: str | bytes, err: bytes | None = None, context=CONTEXT) -> list:
    raw = data.encode() if isinstance(data, str) else data
    sibling = io.BytesIO(err) if err is not None else None
    return list(PARSER.parse(io.BytesIO(raw), "job.4242.3.out", context, sibling_err=sibling))


# --- the real sample (glideinwms unittests/fixtures/factory/log/client, see PROVENANCE.md) ---


def test_real_sample_field_by_field(samples_dir):
    (record,) = parse((samples_dir / SAMPLE).read_bytes())
    assert isinstance(record, ParsedRecord)
    assert record.kind == "pilot"
    assert record.natural_key == "schedd_glideins9@gfactory-2.opensciencegrid.org#10176593.0"
    assert record.start == utc(1656036325)
    assert record.end == utc(1656036325 + 8376) == utc(1656044701)  # the ending line's own epoch agrees
    assert record.wall_seconds == 8376.0  # glideinwms: glidein_duration 8376
    assert (record.cores, record.memory_mb, record.gpus) == (8, 20000, 0)
    assert (record.site, record.resource) == ("Hephy-Vienna", "Hephy-Vienna")
    pilot = record.pilot
    assert pilot.frontend_client == "CMSG-v1_0.main-token"
    assert pilot.entry == "CMSHTPC_T2_AT_Vienna_ce-1"
    assert (pilot.cores, pilot.memory_mb, pilot.gpus) == (8, 20000, 0)
    assert pilot.condor_started is True  # glideinwms: condor_started 1
    assert pilot.validation_seconds == 63.0  # glideinwms: validation_duration 63
    assert pilot.condor_seconds == 8307.0  # glideinwms: condor_duration 8307
    assert pilot.claims == 34  # glideinwms: activations_claims 34
    assert pilot.glidein_name == ""  # this log never prints its startd name
    assert record.extra["stats"] == {}  # glideinwms: stats {} (the Stats block is empty)
    assert record.extra["glidein_exit_code"] == 0
    assert record.extra["result"] == {
        "status": "OK",
        "metrics": {"AutoShutdown": "False", "CondorDuration": "8307", "CondorKilled": "False"},
        "detail": "",
    }
    assert "runs" not in record.extra


def test_sample_with_its_err_beside_it_found_on_disk(samples_dir, tmp_path):
    out = tmp_path / "entry_CMSHTPC_T2_AT_Vienna_ce-1" / "job.10176593.0.out"
    out.parent.mkdir()
    out.write_bytes((samples_dir / SAMPLE).read_bytes())
    (out.parent / "job.10176593.0.err").write_bytes(err_file(HISTORY))
    err = find_sibling_err(out)
    assert err == out.parent / "job.10176593.0.err"
    with out.open("rb") as stream, err.open("rb") as sibling:
        (record,) = PARSER.parse(stream, str(out), CONTEXT, sibling_err=sibling)
    assert [run["global_job_id"] for run in record.extra["runs"]] == [
        "vocms0250.cern.ch#4421.0#1656036400",
        "vocms0250.cern.ch#4421.1#1656036400",
        "vocms0251.cern.ch#88.0#1656039000",
    ]


# --- hand-written logs in the formats the glidein scripts print ---

MODERN = """\
Starting glidein_startup.sh at Tue Mar  5 10:00:00 UTC 2024 (1709632800)
script_checksum   = '9d1c  /scratch/condor/glidein_startup.sh'
debug_mode        = 'std'
condorg_cluster   = '4242'
condorg_subcluster= '3'
condorg_schedd    = 'schedd_glideins4@gfactory-1.example.org'
glidein_uuid      = '0f6e0f7c-1111-2222-3333-444455556666'
glidein_credential_id = '7'
glidein_factory   = 'OSG'
glidein_name      = 'gfactory_instance'
glidein_entry     = 'OSG_US_Example_ce1'
client_name       = 'osg-frontend.main'
client_group      = 'main'

Running on wn17.example.edu
PID: 4711
GLIDEIN_CPUS auto
GLIDEIN_MaxMemMBs 16000
GLIDEIN_ResourceName Example-CE1
GLIDEIN_Site Example
GLIDEIN_Site_Collector ce1.example.edu:9619
Tue Mar  5 10:00:40 UTC 2024 Setting GLIDEIN_MaxMemMBs=15000
Tue Mar  5 10:00:41 UTC 2024 Setting GLIDEIN_CPUS=4
startd will advertise as slot1@glidein_4711_993822@wn17.example.edu
=== Last script starting Tue Mar  5 10:01:00 UTC 2024 (1709632860) after validating for 60 ===

=== Condor starting Tue Mar  5 10:01:02 UTC 2024 (1709632862) ===
=== Condor started in background, now waiting on process 5000 ===
=== Condor ended Tue Mar  5 12:01:02 UTC 2024 (1709640062) after 7200 ===

Total jobs/goodZ jobs/goodNZ jobs/badSignal jobs/badOther jobs below are normalized to 1 Core
=== Stats of main ===
03/05 10:05:00 Starting job 101.0 from 192.0.2.10:9618
03/05 11:05:00 Terminated job 101.0 from 192.0.2.10:9618 status 0 duration 3600
=================
Normalization [parallelism] factor 4
(Real) Total jobs 3 utilization 10800
(Normalized) Total jobs 1 utilization 2700
(Normalized) Total goodZ jobs 1  (66.6667%) utilization 1800 (66.6667%)
(Normalized) Total goodNZ jobs 0  (33.3333%) utilization 900 (33.3333%)
(Normalized) Total badSignal jobs 0  (0%) utilization 0 (0%)
(Normalized) Total badOther jobs 0  (0%) utilization 0 (0%)
=== End Stats of main ===
Total number of activations/claims: 3

=== Last script ended Tue Mar  5 12:01:05 UTC 2024 (1709640065) with code 0 after 7205 ===

===  Glidein ending Tue Mar  5 12:01:10 UTC 2024 (1709640070) with code 0 after 7270  ===

=== XML description of glidein activity ===
<?xml version="1.0"?>
<OSGTestResult id="glidein_startup.sh" version="4.3.1">
  <operatingenvironment>
    <env name="client_name">osg-frontend.main</env>
    <env name="hostname">wn17.example.edu</env>
  </operatingenvironment>
  <test>
    <tStart>2024-03-05T10:00:00+00:00</tStart>
    <tEnd>2024-03-05T12:01:05+00:00</tEnd>
  </test>
  <result>
    <status>OK</status>
    <metric name="AutoShutdown" ts="2024-03-05T12:01:05+00:00" uri="local">True</metric>
    <metric name="CondorDuration" ts="2024-03-05T12:01:05+00:00" uri="local">7200</metric>
    <metric name="TotalJobsNr" ts="2024-03-05T12:01:05+00:00" uri="local">1</metric>
    <metric name="TotalJobsTime" ts="2024-03-05T12:01:05+00:00" uri="local">2700</metric>
    <metric name="CondorKilled" ts="2024-03-05T12:01:05+00:00" uri="local">False</metric>
  </result>
</OSGTestResult>
=== End XML description of glidein activity ===
"""

VALIDATION_FAILED = """\
Starting glidein_startup.sh at Tue Mar  5 10:00:00 UTC 2024 (1709632800)
condorg_cluster   = '4243'
condorg_subcluster= '0'
condorg_schedd    = 'schedd_glideins4@gfactory-1.example.org'
glidein_entry     = 'OSG_US_Example_ce1'
client_name       = 'osg-frontend.main'
Executing (flags:) /scratch/glide_x/main/check_proxy.sh
=== Validation error in /scratch/glide_x/main/validate_node.sh ===
=== Glidein ending Tue Mar  5 10:00:50 UTC 2024 (1709632850) with code 1 after 50 ===

=== XML description of glidein activity ===
<?xml version="1.0"?>
<OSGTestResult id="glidein_startup.sh" version="4.3.1">
  <result>
    <status>ERROR</status>
    <metric name="TestID" ts="2024-03-05T10:00:50+00:00" uri="local">validate_node.sh</metric>
    <metric name="failure" ts="2024-03-05T10:00:45+00:00" uri="local">WN_Resource</metric>
    <metric name="free_GB" ts="2024-03-05T10:00:45+00:00" uri="local">2</metric>
  </result>
  <detail>
     Validation failed in validate_node.sh.

     Not enough space in the work directory (2 GB &lt; 10 GB).
  </detail>
</OSGTestResult>
=== End XML description of glidein activity ===
"""


def test_modern_log_with_stats_xml_and_resolved_settings():
    (record,) = parse(MODERN)
    assert record.natural_key == "schedd_glideins4@gfactory-1.example.org#4242.3"
    assert (record.start, record.end, record.wall_seconds) == (utc(1709632800), utc(1709632800 + 7270), 7270.0)
    assert (record.cores, record.memory_mb) == (4, 15000)  # "Setting X=" wins over the configured constant
    assert (record.site, record.resource) == ("Example", "Example-CE1")
    pilot = record.pilot
    assert pilot.glidein_name == "glidein_4711_993822@wn17.example.edu"
    assert (pilot.entry, pilot.frontend_client) == ("OSG_US_Example_ce1", "osg-frontend.main")
    assert (pilot.validation_seconds, pilot.condor_started, pilot.condor_seconds, pilot.claims) == (
        60.0,
        True,
        7200.0,
        3,
    )
    assert record.extra["stats"] == {
        "real": {"Total": {"jobs": 3, "seconds": 10800}},
        "normalized": {
            "Total": {"jobs": 1, "seconds": 2700},
            "goodZ": {"jobs": 1, "seconds": 1800},
            "goodNZ": {"jobs": 0, "seconds": 900},
            "badSignal": {"jobs": 0, "seconds": 0},
            "badOther": {"jobs": 0, "seconds": 0},
        },
    }
    assert record.extra["result"]["metrics"]["TotalJobsTime"] == "2700"
    assert record.extra["glidein_exit_code"] == 0


def test_validation_failure_keeps_the_failure_and_its_detail():
    (record,) = parse(VALIDATION_FAILED)
    pilot = record.pilot
    assert (pilot.condor_started, pilot.condor_seconds, pilot.validation_seconds, pilot.claims) == (
        False,
        None,
        None,
        None,
    )
    assert record.wall_seconds == 50.0
    assert (record.cores, record.memory_mb) == (1, None)
    assert (record.site, record.resource) == ("", "OSG_US_Example_ce1")  # no GLIDEIN_ResourceName: the entry
    result = record.extra["result"]
    assert result["status"] == "ERROR"
    assert result["metrics"]["failure"] == "WN_Resource"
    assert result["detail"].startswith("Validation failed in validate_node.sh.")
    assert "(2 GB < 10 GB)" in result["detail"]
    assert record.extra["glidein_exit_code"] == 1


def test_killed_glidein_without_condor_ended_and_with_empty_stats():
    log = MODERN.replace("=== Condor ended Tue Mar  5 12:01:02 UTC 2024 (1709640062) after 7200 ===\n", "")
    log = log.replace(MODERN[MODERN.index("=================\n") : MODERN.index("=== End Stats")], "")
    (record,) = parse(log)
    assert (record.pilot.condor_started, record.pilot.condor_seconds) == (True, None)
    assert record.extra["stats"] == {}


def test_old_log_without_epochs_takes_its_start_from_the_ending():
    log = MODERN.replace("Starting glidein_startup.sh at Tue Mar  5 10:00:00 UTC 2024 (1709632800)",
                         "Starting glidein_startup.sh at Tue Mar  5 10:00:00 UTC 2024")  # fmt: skip
    (record,) = parse(log)
    assert (record.start, record.end) == (utc(1709640070 - 7270), utc(1709640070))


def test_unprefixed_stats_lines_follow_the_normalisation_note():
    old_stats = "Total jobs 2 utilization 5000\nTotal goodZ jobs 2  (100%) utilization 5000 (100%)\n"
    block = MODERN[MODERN.index("=================\n") : MODERN.index("=== End Stats")]
    (normalized,) = parse(MODERN.replace(block, old_stats))
    assert normalized.extra["stats"] == {"normalized": {"Total": {"jobs": 2, "seconds": 5000},
                                                        "goodZ": {"jobs": 2, "seconds": 5000}}}  # fmt: skip
    (real,) = parse(MODERN.replace(block, old_stats).replace("below are normalized to 1 Core", ""))
    assert set(real.extra["stats"]) == {"real"}


def test_non_numeric_cpus_means_one_core_and_context_site_fills_a_missing_site():
    log = MODERN.replace("Setting GLIDEIN_CPUS=4", "Setting GLIDEIN_CPUS=node").replace("GLIDEIN_Site Example\n", "")
    (record,) = parse(log, context=ParseContext(site="Elsewhere", now=NOW))
    assert record.cores == record.pilot.cores == 1
    assert record.site == "Elsewhere"


def test_non_utf8_in_script_chatter_is_ignored():
    log = MODERN.encode().replace(b"PID: 4711", b"PID: 4711 caf\xe9 \xff\xfe")
    (record,) = parse(log)
    assert isinstance(record, ParsedRecord)


# --- the .err beside it: startd history, one ad per payload run ---


def history_ad(global_job_id: str, completion: int, wall: int, extra: str) -> str:
    cluster, proc = global_job_id.split("#")[1].split(".")
    return (
        f'MyType = "Job"\nTargetType = "Machine"\nGlobalJobId = "{global_job_id}"\nClusterId = {cluster}\n'
        f'ProcId = {proc}\nOwner = "cmsdataops"\nJobUniverse = 5\nJobCurrentStartDate = {completion - wall}\n'
        f"RemoteWallClockTime = {wall}.0\nCompletionDate = {completion}\n{extra}"
        f'*** Offset = 0 ClusterId = {cluster} ProcId = {proc} Owner = "cmsdataops" CompletionDate = {completion}\n'
    )


HISTORY = (
    history_ad("vocms0250.cern.ch#4421.0#1656036400", 1656040100, 3600,
               "RequestCpus = 4\nCpusProvisioned = 4\nRequestMemory = 8000\nMemoryProvisioned = 8192\n"
               "ExitBySignal = false\nExitCode = 0\nStarterExitStatus = 0\nJobStatus = 4\n"
               "BadputCausedByDraining = false\nBadputCausedByPreemption = false\n")
    + history_ad("vocms0250.cern.ch#4421.1#1656036400", 1656040500, 300,
                 "RequestCpus = ifThenElse(WantWholeNode =?= true, Cpus, 1)\nRequestMemory = 2000\nRequestGPUs = 1\n"
                 "ExitBySignal = true\nExitSignal = 9\nStarterExitStatus = 0\nJobStatus = 3\n"
                 "BadputCausedByDraining = false\nBadputCausedByPreemption = false\n")
    + history_ad("vocms0251.cern.ch#88.0#1656039000", 1656044600, 4000,
                 "RequestCpus = 2\nRequestMemory = 4000\nStarterExitStatus = 256\nJobStatus = 1\n"
                 "BadputCausedByDraining = false\nBadputCausedByPreemption = true\n")
).encode()  # fmt: skip


def packed(name: bytes, payload: bytes) -> bytes:
    """A log as `condor_startup.sh` `cond_print_log` writes it: gzip | base64, 76-column lines."""
    body = base64.encodebytes(gzip.compress(payload))
    return name + b"\n======== gzip | uuencode =============\nbegin-base64 644 -\n" + body + b"====\n"


def err_file(history: bytes) -> bytes:
    return (
        b"Unsetting X509_USER_PROXY\nNormal DAEMON_SHUTDOWN encountered\ntotal 20\n"
        b"-rw-r--r-- 1 pilot pilot 4411 Jun 24 06:24 StartdHistoryLog\n"
        + packed(b"MasterLog", b"06/24/22 04:06:30 ** condor_master (CONDOR_MASTER) STARTING UP\n")
        + packed(b"StartdHistoryLog", history)
        + b"\n=== Encoded XML description of glidein activity ===\n"
    )


def test_err_startd_history_gives_the_runs_field_by_field():
    (record,) = parse(MODERN, err=err_file(HISTORY))
    first, killed, preempted = record.extra["runs"]
    assert first == {
        "global_job_id": "vocms0250.cern.ch#4421.0#1656036400",
        "start": utc(1656036500), "end": utc(1656040100),
        "cores": 4, "memory_mb": 8192, "gpus": 0,
        "exit_code": 0, "exit_signal": None,
        "badput_preemption": False, "badput_draining": False,
        "starter_exit_status": 0,
    }  # fmt: skip
    assert (killed["start"], killed["end"]) == (utc(1656040200), utc(1656040500))
    assert (killed["cores"], killed["memory_mb"], killed["gpus"]) == (1, 2000, 1)  # an expression: 1 core
    assert (killed["exit_code"], killed["exit_signal"]) == (None, 9)
    assert (preempted["badput_preemption"], preempted["badput_draining"]) == (True, False)
    assert (preempted["exit_code"], preempted["starter_exit_status"]) == (None, 256)
    assert all(run["start"].tzinfo == timezone.utc for run in record.extra["runs"])


def test_err_without_history_block_leaves_runs_out():
    (record,) = parse(MODERN, err=b"Unsetting X509_USER_PROXY\n" + packed(b"MasterLog", b"x\n"))
    assert "runs" not in record.extra


def test_err_with_an_empty_history_says_no_job_ran():
    (record,) = parse(MODERN, err=err_file(b""))
    assert record.extra["runs"] == []


FRAMING = b"StartdHistoryLog\n======== gzip | uuencode =============\nbegin-base64 644 -\n"


def zip_bomb() -> bytes:
    data = gzip.compress(b"\0" * (65 * 1024 * 1024), compresslevel=9)
    return FRAMING + base64.encodebytes(data) + b"====\n"


@pytest.mark.parametrize(
    "err, reason",
    [
        (packed(b"StartdHistoryLog", HISTORY)[:-5], "no closing ===="),
        (
            packed(b"StartdHistoryLog", HISTORY).replace(b"begin-base64 644 -\n", b"begin-base64 644 -\n!!notbase64\n"),
            "not valid base64",
        ),
        (FRAMING + b"ERROR_FAILED_ENCODING\n====\n", "not valid base64"),  # python_b64uuencode without python
        (
            FRAMING + base64.encodebytes(b"plain text, not gzip") + b"====\n",
            "not gzip data",
        ),
        (
            FRAMING + base64.encodebytes(gzip.compress(HISTORY)[:-30]) + b"====\n",
            "gzip data is cut",
        ),
        (b"StartdHistoryLog\nsomething else\n", "not followed by its gzip | uuencode framing"),
        (zip_bomb(), "decompresses to more than 64 MiB"),
        (
            packed(b"StartdHistoryLog", HISTORY.replace(b"CompletionDate = 1656040500\n", b"")),
            "no CompletionDate or RemoteWallClockTime",
        ),
        (
            packed(b"StartdHistoryLog", HISTORY.replace(b"RemoteWallClockTime = 300.0", b"RemoteWallClockTime = -300")),
            "absurd RemoteWallClockTime",
        ),
        (
            packed(b"StartdHistoryLog", HISTORY.replace(b"CompletionDate = 1656040500\n", b"CompletionDate = 1e300\n")),
            "CompletionDate out of range",
        ),
        (
            packed(
                b"StartdHistoryLog",
                HISTORY.replace(b'Owner = "cmsdataops"\nJobUniverse', b'Owner = "caf\xe9"\nJobUniverse'),
            ),
            "not UTF-8",
        ),
    ],
)
def test_unreadable_err_keeps_the_pilot_without_runs_and_says_why(err, reason):
    record, rejection = parse(MODERN, err=err)
    assert isinstance(record, ParsedRecord) and "runs" not in record.extra
    assert isinstance(rejection, Rejection) and rejection.line is None
    assert reason in rejection.reason
    assert "the pilot is kept without its payload runs" in rejection.reason


def test_find_sibling_err_only_for_job_out_names_and_regular_files(tmp_path):
    out = tmp_path / "job.7.0.out"
    out.write_text(MODERN)
    assert find_sibling_err(out) is None
    (tmp_path / "job.7.0.err").write_bytes(b"")
    assert find_sibling_err(out) == tmp_path / "job.7.0.err"
    assert find_sibling_err(tmp_path / "notes.out") is None
    linked = tmp_path / "job.8.0.out"
    linked.write_text(MODERN)
    (tmp_path / "job.8.0.err").symlink_to(tmp_path / "job.7.0.err")
    assert find_sibling_err(linked) is None


# --- hostile input ---

ENTITY_BOMB_XML = (
    '<?xml version="1.0"?>\n<!DOCTYPE OSGTestResult [\n  <!ENTITY a "aaaaaaaaaa">\n'
    '  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">\n]>\n'
    "<OSGTestResult><result><status>&c;</status></result></OSGTestResult>"
)
EXTERNAL_ENTITY_XML = (
    '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
    "<OSGTestResult><result><status>&x;</status></result></OSGTestResult>"
)


def with_xml(xml: str) -> str:
    head = MODERN[: MODERN.index("=== XML description of glidein activity ===")]
    return (
        head
        + "=== XML description of glidein activity ===\n"
        + xml
        + "\n=== End XML description of glidein activity ===\n"
    )


XML_FIRST_LINE = MODERN[: MODERN.index("=== XML description")].count("\n") + 2
CUT = MODERN[: MODERN.index("=== Last script ended")]
ENDING_LINE = MODERN[: MODERN.index("===  Glidein ending")].count("\n") + 1


@pytest.mark.parametrize(
    "data, line, reason",
    [
        (b"", None, "empty file"),
        (CUT.encode(), CUT.count("\n"), f"log cut at line {CUT.count(chr(10))}, glidein end unknown"),
        (b"\x00\x01\x02\xff\xfe binary \x89PNG\r\n\x1a\n" * 50, None, "not a glidein job.out"),
        (MODERN.replace("GLIDEIN_Site Example", "GLIDEIN_Site Caf\xe9").encode("latin-1"), 20, "not UTF-8 (byte 0xe9"),
        (MODERN.replace("condorg_cluster   = '4242'", "condorg_cluster   = 'x42'"), None, "are not numbers"),
        (MODERN.replace("with code 0 after 7270", "with code 0 after -5"), ENDING_LINE, "negative wall time"),
        (MODERN.replace("with code 0 after 7270", "with code 0 after 99999999999"), ENDING_LINE, "absurd wall time"),
        (MODERN.replace("with code 0 after 7270", "with code 0 after " + "9" * 5000), ENDING_LINE, "absurd number"),
        (MODERN.replace("(1709632800)", "(999999999999)"), ENDING_LINE, "glidein times out of range"),
        (MODERN.replace("(1709632800)", "(1893456000)"), ENDING_LINE, "in the future"),  # 2030
        (with_xml(ENTITY_BOMB_XML), XML_FIRST_LINE, "refused (DTDForbidden)"),
        (with_xml(EXTERNAL_ENTITY_XML), XML_FIRST_LINE, "refused (DTDForbidden)"),
        (with_xml("<OSGTestResult><result><status>OK</status>"), XML_FIRST_LINE, "not well-formed"),
    ],
)
def test_hostile_input_gives_one_rejection_naming_the_line(data, line, reason):
    (item,) = parse(data)
    assert isinstance(item, Rejection)
    assert item.line == line
    assert reason in item.reason


def test_over_long_line_in_the_xml_part_is_rejected_and_elsewhere_ignored():
    long_line = "x" * (2 * 1024 * 1024)
    (item,) = parse(with_xml(long_line))
    assert isinstance(item, Rejection) and "longer than 1 MiB" in item.reason
    (record,) = parse(MODERN.replace("PID: 4711", "PID: 4711 " + long_line))
    assert isinstance(record, ParsedRecord)


def test_detect_claims_glidein_stdout_and_nothing_else(samples_dir):
    assert PARSER.detect((samples_dir / SAMPLE).read_bytes()[:65536], SAMPLE)
    assert PARSER.detect(MODERN.encode(), "job.4242.3.out")
    assert PARSER.detect(MODERN.encode()[MODERN.index("condorg_cluster") :], "job.4242.3.out")  # header only
    assert not PARSER.detect(MODERN.encode(), "job.4242.3.err")  # read with its .out, never alone
    assert not PARSER.detect(err_file(HISTORY), "job.4242.3.err")
    others = [
        "gratia/gratia-probe/condor-ap-history/history.377260.0",
        "gratia/gracc-collector/test_data/JobUsageRecord01.xml",
        "gratia/gracc-collector/test_bundle.xml",
        "gratia/gratia-probe/readme-xml/condor-BatchPilot-payload.xml",
        "glideinwms/cs.fixture.condor_status_glidein_startds.xml",
        "glideinwms/job.condor",
        "htcondor/test.old.ad",
    ]
    for name in others:
        assert not PARSER.detect((samples_dir / name).read_bytes()[:65536], name), name
    assert not PARSER.detect(b"", "job.1.0.out")
    assert not PARSER.detect(b"\x00\x01\x02 binary garbage \xff" * 100, "job.1.0.out")


MARKERS = st.sampled_from([
    "Starting glidein_startup.sh at (1709632800)", "condorg_cluster   = '1'", "condorg_subcluster= '0'",
    "condorg_schedd    = 's@f'", "=== Condor starting ===", "=== Condor ended after 9 ===", "=== Stats of main ===",
    "(Real) Total jobs 3 utilization 10", "=== End Stats of main ===", "Total number of activations/claims: 2",
    "=== Glidein ending (1709640070) with code 0 after 70 ===", "=== XML description of glidein activity ===",
    "<OSGTestResult><result><status>OK</status></result></OSGTestResult>", "<!DOCTYPE x [<!ENTITY a 'b'>]>",
    "=== End XML description of glidein activity ===", "GLIDEIN_CPUS 8", "Setting GLIDEIN_CPUS=-3",
    "GLIDEIN_Site \udcff\udcfe",  # surrogateescape: bytes 0xff 0xfe, not UTF-8
])  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    out=st.binary(max_size=2000)
    | st.lists(MARKERS, max_size=30).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogateescape"))
    | st.just(MODERN.encode()),
    err=st.none()
    | st.binary(max_size=2000)
    | st.integers(0, len(err_file(HISTORY))).map(lambda cut: err_file(HISTORY)[:cut]),
)
def test_fuzz_any_input_yields_records_or_rejections(out, err):
    for item in parse(out, err=err):
        assert isinstance(item, (ParsedRecord, Rejection))
